"""TRL's GRPOTrainer generating with vLLM (`use_vllm=True`) through `env.factory`: colocated in the trainer's process,
and on the tier's server, each with TRL's tool loop and the weights really reaching vLLM.

The random model's sampling is held to a set of calls by TRL's own setting, `vllm_structured_outputs_regex`. What
cannot run on a CPU is stood in for, and only that: colocate's per-parameter weight load (vLLM-CPU repacks its linear
layers, and the load fails: the first test shows it), replaced by vLLM's in-place reload; server mode's NCCL group and
broadcast, replaced by a checkpoint the server reloads (testbed/gpu_standins.py).
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv
from testbed.forced_calls import DESK_CALLS
from testbed.gpu_standins import FileWeightClient, colocate_sync_weights
from tst.vllm import logprobs
from tst.vllm.rollouts import brevity


def config(out: Path, pattern: str, **settings: Any) -> Any:
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(out),
        use_vllm=True,
        vllm_structured_outputs_regex=pattern,
        # The grammar, not the model, decides most tokens: vLLM's log-probabilities (processed, so after the grammar's
        # mask) are a policy's other than the model's, and TRL's importance-sampling correction (meant for vLLM's
        # numerical drift from the trainer) would weight every rollout by ~exp(-12 a token), that is 0.
        vllm_importance_sampling_correction=False,
        per_device_train_batch_size=2,
        num_generations=2,
        max_steps=2,
        max_completion_length=96,
        max_tool_calling_iterations=1,
        learning_rate=1e-2,
        use_cpu=True,
        bf16=False,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        gradient_checkpointing=False,
        disable_tqdm=True,
        seed=0,
        **settings,
    )


def probe(tokenizer: Any, env: AgentEnv) -> list[int]:
    """A fixed token sequence to compare log-probabilities on: the start of the environment's first prompt."""
    row = env.dataset("train")[0]
    return tokenizer.apply_chat_template(row["prompt"], tokenize=True, return_dict=False)[:96]


@pytest.mark.timeout(1200)
def test_colocate_trains_with_the_tool_loop_and_vllm_serves_the_synced_weights(
    model, tokenizer, tmp_path, monkeypatch
):
    from trl import GRPOTrainer
    from trl.generation.vllm_generation import VLLMGeneration

    env = AgentEnv.local("gridsim-desk")
    trainer = GRPOTrainer(
        model=str(model),
        reward_funcs=[brevity],
        args=config(tmp_path, DESK_CALLS, vllm_mode="colocate", vllm_max_model_length=8192),
        train_dataset=env.dataset("train"),
        environment_factory=env.factory,
    )
    generation = trainer.vllm_generation
    try:
        # TRL's own colocate sync loads each parameter into the engine's model, which vLLM-CPU has repacked: it fails.
        with pytest.raises(AttributeError, match="weight_loader"):
            generation.sync_weights()
        monkeypatch.setattr(
            VLLMGeneration, "sync_weights", colocate_sync_weights
        )  # the stand-in, from here on

        ids = probe(tokenizer, env)
        before = logprobs.policy(trainer.model, ids)
        # TRL starts colocate's engine in vLLM's "auto" dtype, which serves a float32 checkpoint in reduced precision:
        # the trainer's float32 log-probabilities and vLLM's differ that much with the same weights.
        floor = logprobs.gap(before, logprobs.engine(generation.llm, ids))
        trainer.train()
        logged = trainer.state.log_history[:2]
        assert all(entry["tools/call_frequency"] > 0 for entry in logged)  # TRL's tool loop ran the calls
        assert all("rewards/GridSimDesk/mean" in entry for entry in logged)

        after = logprobs.policy(trainer.model, ids)
        assert logprobs.gap(after, before) > 1e-3  # the two steps moved the policy
        # vLLM was synced before the second step's generation, and the second step moved the policy again:
        stale = logprobs.gap(after, logprobs.engine(generation.llm, ids))
        generation.sync_weights()
        synced = logprobs.gap(after, logprobs.engine(generation.llm, ids))
        print(
            f"\ncolocate: mean |log p| gap {stale:.2e} nats a token before the sync, {synced:.2e} after (the same "
            f"weights: {floor:.2e})"
        )
        assert stale > 10 * max(floor, 1e-4) and synced < 2 * max(floor, 1e-5)
    finally:
        del generation, trainer
        gc.collect()


@pytest.mark.timeout(1200)
def test_server_mode_trains_with_the_tool_loop_and_the_server_reloads_the_weights(
    model, tokenizer, served_weights, tmp_path, monkeypatch
):
    """On the desk: on a CPU, TRL scores every position of a row over the whole vocabulary (its compact scoring of the
    completion alone is for Triton devices), so a step costs in proportion to the prompt, and τ²-airline's is over
    three times the desk's. AsyncGRPO's test trains on both."""
    from trl import GRPOTrainer

    weights = FileWeightClient(tmp_path / "weights")
    weights.install(monkeypatch)  # the stand-in for the NCCL group and broadcast
    env = AgentEnv.local("gridsim-desk")
    dataset = env.dataset("train")
    trainer = GRPOTrainer(
        model=str(model),
        reward_funcs=[brevity],
        args=config(
            tmp_path / "trainer",
            DESK_CALLS,
            vllm_mode="server",
            vllm_server_base_url=served_weights,
            generation_kwargs={"seed": 0},
        ),
        train_dataset=dataset,
        environment_factory=env.factory,
    )
    ids = probe(tokenizer, env)
    before = logprobs.served(served_weights, ids)
    assert logprobs.gap(before, logprobs.policy(trainer.model, ids)) < 1e-4  # the same model on both sides

    trainer.train()
    logged = trainer.state.log_history[:2]
    assert all(entry["tools/call_frequency"] > 0 for entry in logged)
    assert weights.sent == 2  # before each step's generation
    assert all("rewards/GridSimDesk/mean" in entry for entry in logged)  # the environment's get_reward()

    after = logprobs.policy(trainer.model, ids)
    stale = logprobs.gap(after, logprobs.served(served_weights, ids))
    trainer.vllm_generation.sync_weights()
    synced = logprobs.gap(after, logprobs.served(served_weights, ids))
    print(f"server: mean |log p| gap {stale:.2e} nats before the sync, {synced:.2e} after")
    assert logprobs.gap(after, before) > 1e-3 and stale > 1e-3 and synced < 1e-4
