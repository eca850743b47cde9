"""The CPU stand-ins for what TRL runs only on a GPU (testbed/gpu_standins.py): each computes what it stands in for,
and each is needed (what it replaces fails here)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from testbed.gpu_standins import torch_flash_attention

PREFIX = [5, 17, 3, 42, 8, 23, 11]
SAMPLES = [[*PREFIX, 30, 31, 32, 33], [*PREFIX, 40, 41], [*PREFIX[:4], 50, 51, 52]]
"""Three rollouts sharing some or all of a prompt, as AsyncGRPO packs a group's rollouts into a prefix tree."""


def tiny(attention: str) -> Any:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=32, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    return Qwen3ForCausalLM._from_config(config, attn_implementation=attention).eval()


def test_asyncgrpos_packed_tree_attention_on_the_cpu_gives_each_rollout_its_own_log_probabilities(
    monkeypatch,
):
    """TRL's tree attention, with the stand-in for flash-attention's varlen kernel, over the packed prefix tree of
    three rollouts: every trained token's log-probability is the one each rollout gets when run alone."""
    import trl.experimental.async_grpo.packing as packing

    monkeypatch.setattr(packing, "_flash_attn", torch_flash_attention)
    packing.register_tree_attention()
    row = packing.TreeRow()
    for ids in SAMPLES:
        mask = [0] * 4 + [1] * (len(ids) - 4)
        sample = {"input_ids": np.array(ids), "completion_mask": np.array(mask), "group_id": 0}
        row.add({**sample, "old_log_probs": np.zeros(len(ids)), "advantage": 1.0})
    packed = row.pack()
    assert len(packed["input_ids"]) < sum(map(len, SAMPLES))  # the shared prefix is forwarded once

    model = tiny(packing.TREE_ATTENTION)
    with torch.no_grad():
        hidden = model.model(
            input_ids=packed["input_ids"][None],
            position_ids=packed["position_ids"][None],
            tree_kv_index=packed["tree_kv_index"],
            tree_cu_seqlens_q=packed["tree_cu_seqlens_q"],
            tree_cu_seqlens_k=packed["tree_cu_seqlens_k"],
            tree_max_seqlen_q=int(packed["tree_max_seqlens"][0]),
            tree_max_seqlen_k=int(packed["tree_max_seqlens"][1]),
        ).last_hidden_state[0]
        logits = model.lm_head(hidden).log_softmax(-1)
    targets = packed["shift_labels"][packed["token_index"]]
    tree = logits[packed["token_index"], targets]

    alone = tiny("sdpa")
    expected = []
    with torch.no_grad():
        for ids in SAMPLES:
            own = alone(input_ids=torch.tensor([ids])).logits[0].log_softmax(-1)
            expected += [own[position - 1, ids[position]] for position in range(4, len(ids))]
    torch.testing.assert_close(tree, torch.stack(expected), atol=1e-5, rtol=1e-5)


def test_the_flash_attention_kernel_asyncgrpo_fetches_cannot_be_had_here():
    """Why the stand-in: TRL fetches flash-attention 3 (a CUDA kernel) from the Hugging Face Hub."""
    import trl.experimental.async_grpo.packing as packing

    with pytest.raises(Exception):  # noqa: B017 (no `kernels` package, no Hub, no CUDA: whichever comes first)
        packing._flash_attn.__wrapped__()


def test_the_flops_probe_asyncgrpo_calls_fails_on_a_cpu_build_of_torch():
    """Why the stand-in for `get_peak_flops_per_device`: it asks `torch.cuda` for the device's name."""
    from accelerate import Accelerator
    from trl.trainer.utils import get_peak_flops_per_device

    with pytest.raises((AssertionError, RuntimeError)):
        get_peak_flops_per_device(Accelerator(cpu=True), "float32")
