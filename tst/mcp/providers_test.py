"""An MCP-backed environment runs on every provider with nothing new: served by a real `agent-env serve` (over its
control API and over OpenEnv's /ws), and on a pool of Ray actors; each host starts its own servers and stops them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_env import AgentEnv, ToolArgumentError
from tst.mcp.conftest import EXAMPLES, ROOT, wait_until

ADA = {"name": "Ada", "entityType": "person", "observations": ["engineer"]}
GRACE = {"name": "Grace", "entityType": "person", "observations": ["manager"]}


def servers_of(pid: int) -> list[int]:
    """The live MCP server processes that process `pid` started (they carry its owner mark)."""
    prefix = f"AGENT_ENV_MCP_OWNER={pid}-".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(item.startswith(prefix) for item in environ):
                found.append(int(entry))
    return found


def scratch_folders_of(pid: int) -> list[Path]:
    """The `{episode_dir}` folders of the servers that process `pid` started (named after its owner mark)."""
    return list(Path(tempfile.gettempdir()).glob(f"agent-env-mcp-{pid}-*"))


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`agent-env serve knowledge_graph:environment --openenv`, as the README runs it from examples/."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "agent_env.cli",
        "serve",
        "knowledge_graph:environment",
        "--port",
        str(port),
        "--openenv",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        command, cwd=EXAMPLES, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_until(lambda: _answers(port) or process.poll() is not None, timeout=60)
        assert process.poll() is None, process.stdout.read()  # type: ignore[union-attr]
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_served_mcp_environment_plays_an_episode_over_the_control_api(
    served: tuple[str, subprocess.Popen[str]],
) -> None:
    url, _ = served
    env = AgentEnv.connect(url)
    assert [tool["name"] for tool in env.tools()] == [
        "create_entities", "create_relations", "add_observations", "read_graph", "end_turn",
    ]  # fmt: skip
    row = env.dataset("train")[0]  # Ada and Grace, who work together
    with env.open() as session:
        session.reset(**row)
        session.call_tool("create_entities", {"entities": [ADA, GRACE]})
        with pytest.raises(
            ToolArgumentError, match=r"relations\[0\]: missing required property 'relationType'"
        ):
            session.call_tool("create_relations", {"relations": [{"from": "Ada", "to": "Grace"}]})
        assert session.reward() == pytest.approx(0.8)  # both people, not the relation: P 1, R 2/3


def test_a_served_mcp_environment_plays_an_episode_over_openenv(
    served: tuple[str, subprocess.Popen[str]],
) -> None:
    url, _ = served
    env = AgentEnv.openenv(f"{url}/openenv")
    row = AgentEnv.connect(url).dataset("train")[0]
    with env.open() as session:
        session.reset(**row)
        assert (
            json.loads(session.call_tool("create_entities", {"entities": [ADA]}))["entities"][0]["name"]
            == "Ada"
        )
        assert session.reward() == pytest.approx(0.5)  # one person of three wanted facts: P 1, R 1/3


def test_the_served_environments_servers_stop_with_it(served: tuple[str, subprocess.Popen[str]]) -> None:
    _, process = served
    assert servers_of(process.pid)  # its spares wait for episodes
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    assert wait_until(lambda: not servers_of(process.pid), timeout=10)


def test_an_mcp_environment_runs_on_ray_actors(ray_cluster: str) -> None:
    from tst.mcp import graph

    env = AgentEnv.ray(graph.environment, actors=1, pool="mcp-graph")
    try:
        assert [tool["name"] for tool in env.tools()][:2] == ["create_entities", "create_relations"]
        with env.open() as session:
            session.reset(**env.dataset("train")[0])
            session.call_tool("create_entities", {"entities": [ADA, GRACE]})
            assert session.reward() == 2.0  # read off the actor's own server
            pid = _actor_pid(env)
        assert servers_of(pid)  # the actor started its servers
    finally:
        env.provider.shutdown()
    assert wait_until(lambda: not servers_of(pid), timeout=15)  # and they died with it
    assert wait_until(lambda: not scratch_folders_of(pid)), (
        f"{{episode_dir}} folders left: {scratch_folders_of(pid)}"
    )


def _actor_pid(env: AgentEnv) -> int:
    import ray

    (handle,) = env.provider.pool.handles().values()
    return int(ray.get(handle.describe.remote())["pid"])


def _answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        if probe.connect_ex(("127.0.0.1", port)) != 0:
            return False
    time.sleep(0.2)
    return True
