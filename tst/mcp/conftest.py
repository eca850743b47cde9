"""The MCP tier: real third-party MCP servers at pinned versions (`make mcp-servers` installs them), each test's
environments closed after it, and a check that no server process outlives the test that started it."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.mcp._supervisor import OWNER_MARK, marked_processes, owner_mark
from tst.trl.conftest import tiny_model, tokenizer  # noqa: F401  (the TRL tier's fixtures, for trl_test.py)

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = ROOT / ".cache" / "mcp-servers"
NODE = shutil.which("node") or str(INSTALLED / "python" / "bin" / "node")
"""Node.js: on PATH, or the one `make mcp-servers` installs from PyPI where there is none."""
SCRIPTED = ROOT / "testbed" / "scripted_mcp.py"
EXAMPLES = ROOT / "examples"


def node_server(package: str) -> str:
    """The entry point of an installed `@modelcontextprotocol/<package>`; a failure (never a skip) when missing."""
    entry = INSTALLED / "node" / "node_modules" / "@modelcontextprotocol" / package / "dist" / "index.js"
    if not entry.exists():
        pytest.fail(
            f"{entry} is missing: run `make mcp-servers` (it installs the pinned MCP servers; needs node and npm)"
        )
    return str(entry)


def python_server(command: str) -> str:
    """A Python MCP server's command from the servers' own venv; a failure when missing."""
    path = INSTALLED / "python" / "bin" / command
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make mcp-servers`")
    return str(path)


def scripted(*options: str) -> list[str]:
    """The command of the scripted SDK server (testbed/scripted_mcp.py) with `options`."""
    return [sys.executable, str(SCRIPTED), *options]


def servers_left() -> list[int]:
    """The server processes (and their children) this process started that are still alive."""
    return marked_processes(OWNER_MARK, owner_mark())


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll `condition` until it holds or `timeout` passes; whether it held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def environments() -> Iterator[Callable[..., AgentEnv]]:
    """Make `AgentEnv`s that are closed after the test, then check that no server process is left."""
    made: list[AgentEnv] = []

    def make(maker: Callable[..., AgentEnv] = AgentEnv.mcp, *args: Any, **kwargs: Any) -> AgentEnv:
        env = maker(*args, **kwargs)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()
    assert wait_until(lambda: not servers_left()), f"server processes left running: {servers_left()}"
