"""The evaluation tier: a real `transformers serve` process serving a tiny Qwen3 that calls the desk's tools
(`tst/eval/caller.py` says how it learned to), and `agent-env eval` run against it as a user runs it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_env import AgentEnv

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROWS = 3
"""The desk's first test rows, the episodes every run here plays (and the prompts the caller learned)."""


@pytest.fixture(scope="session")
def desk() -> AgentEnv:
    return AgentEnv.local("gridsim-desk")


@pytest.fixture(scope="session")
def rows(desk: AgentEnv) -> list[dict[str, Any]]:
    return desk.provider.dataset_rows("test")[:ROWS]


@pytest.fixture(scope="session")
def caller(desk: AgentEnv, rows: list[dict[str, Any]]) -> Path:
    pytest.importorskip("torch", reason="training the tiny caller needs torch")
    from tst.eval.caller import caller_model
    from tst.support import qwen3_tokenizer

    return caller_model(desk, rows, qwen3_tokenizer())


@pytest.fixture(scope="session")
def served_caller(caller: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`transformers serve` pinned to the caller's folder, on a free loopback port; its API root."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    executable = Path(sys.executable).with_name("transformers")
    log = tmp_path_factory.mktemp("transformers-serve") / "server.log"
    environment = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "HF_HOME": str(log.parent / "hf-home"),  # lists no cached model of this machine's
    }
    command = [str(executable), "serve", str(caller), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--device", "cpu", "--log-level", "warning"]
    with log.open("w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=environment)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"transformers serve exited with {process.returncode}:\n{log.read_text()}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"transformers serve did not answer /health in 180 s:\n{log.read_text()}")
            time.sleep(0.25)
        yield f"{url}/v1"
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
