"""The vLLM tier: TRL's AsyncGRPO and GRPOTrainer with vLLM, and `agent-env eval`, against vLLM's CPU build serving a
tiny random Qwen3. It runs in a venv of its own (`make vllm-test` builds it: testbed/vllm_venv.py); elsewhere its
tests are not collected.

One server is started for the whole tier (it takes minutes) and stopped at its end whatever happens; the check after
it fails the tier if any of its processes is left. Tests that change the weights it serves put the tiny model's back.
While iterating, start one apart (`python -m testbed.vllm_server FOLDER` in the tier's venv) and name it in
`AGENT_ENV_VLLM_SERVER`: the tier then uses it, and the model it serves, and leaves it running.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# GiB of KV cache, for colocate's in-process engine as for the server's
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")

if importlib.util.find_spec("vllm") is None:
    collect_ignore_glob = ["*_test.py"]  # the tier's own venv has vLLM; `make vllm-test` runs it there


@pytest.fixture(scope="session")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen3 saved with the real Qwen3 tokenizer: what the server serves and the trainers train (the
    running server's, with `AGENT_ENV_VLLM_SERVER`)."""
    from testbed.vllm_server import served_model, tiny_qwen3

    given = os.environ.get("AGENT_ENV_VLLM_SERVER")
    return served_model(given) if given else tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3"))


@pytest.fixture(scope="session")
def tokenizer(model: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model)


class Served:
    """The tier's vLLM server, serving `model` under its folder's path: started when the tier starts, waited for
    only by the first test that asks for its `url`."""

    def __init__(self, model: Path, log: Path) -> None:
        from testbed.vllm_server import VLLMServer

        self.model = model
        self.given = os.environ.get("AGENT_ENV_VLLM_SERVER")
        self.server = None if self.given else VLLMServer(model, log)

    @functools.cached_property
    def url(self) -> str:
        """The server's root URL (no `/v1`), once it answers."""
        return self.given.rstrip("/") if self.given else self.server.url()  # type: ignore[union-attr]


@pytest.fixture(scope="session")
def vllm(model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """vLLM's OpenAI-compatible server on a free loopback port, for the whole tier; stopped at its end, and none of
    its processes may be left."""
    served = Served(model, tmp_path_factory.mktemp("vllm") / "server.log")
    try:
        yield served
    finally:
        if served.server is not None:
            served.server.stop()
            left = served.server.left()
            assert not left, f"vLLM processes left running after stop(): {left}"


SERVED = {"server_url", "served_weights"}
"""The fixtures of the tests that need the server."""
_needed = False


def needs_server(item: pytest.Item) -> bool:
    return bool(SERVED & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that need no server first: they run while it starts."""
    global _needed
    _needed = any(needs_server(item) for item in items)
    items.sort(key=needs_server)


@pytest.fixture(scope="session", autouse=True)
def start_early(request: pytest.FixtureRequest) -> None:
    """Start the server with the first test when a later one needs it."""
    if _needed:
        request.getfixturevalue("vllm")


@pytest.fixture
def server_url(vllm: Served) -> str:
    """The server's root URL (no `/v1`), for a test that leaves its weights as they are."""
    return vllm.url


@pytest.fixture
def served_weights(vllm: Served) -> Iterator[str]:
    """The server's URL, the tiny model's own weights given back to it after a test that reloaded others into it."""
    import requests

    yield vllm.url
    body = {"method": "reload_weights", "kwargs": {"weights_path": str(vllm.model)}}
    requests.post(f"{vllm.url}/collective_rpc", json=body, timeout=300).raise_for_status()


@pytest.fixture
def asyncgrpo_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two parts of AsyncGRPO's trainer that need a GPU, in their CPU stand-ins (testbed/gpu_standins.py); no
    setting of TRL's avoids either:
    - its FLOPs probe (`get_peak_flops_per_device`, called unconditionally in `__init__`) asks `torch.cuda` for the
      device's name and raises on a CPU build of torch: stood in by the answer TRL gives for an unknown device;
    - its packed attention (`attn_implementation` is forced to "tree_fa3") fetches flash-attention 3, a CUDA kernel,
      from the Hub: stood in by the same varlen attention in torch.
    Its NCCL weight sync is the third, replaced through the trainer's own `weight_transfer=` argument."""
    import trl.experimental.async_grpo.async_grpo_trainer as trainer_module
    import trl.experimental.async_grpo.packing as packing

    from testbed.gpu_standins import no_peak_flops, torch_flash_attention

    monkeypatch.setattr(trainer_module, "get_peak_flops_per_device", no_peak_flops)
    monkeypatch.setattr(packing, "_flash_attn", torch_flash_attention)


def pytest_configure(config: pytest.Config) -> None:
    # TRL 1.16 says it was tested with vLLM 0.22 to 0.31 at every import; the tier runs 0.32 (docs/testing.md)
    config.addinivalue_line("filterwarnings", "ignore:TRL currently supports vLLM versions:UserWarning")
