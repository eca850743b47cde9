"""`agent-env serve tau2-mock` (`agent_env/cli/serve.py`) as a user runs it: the real command in a process of its
own on a free port, its simulated user configured with `-c`, and one whole episode played through
`AgentEnv.connect`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from agent_env import AgentEnv
from agent_env.users import USER_CHANNEL
from testbed.scripted import scripted
from tst.unit.evaluation.user_protocol_test import user_that_stops


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def served(*arguments: str, start_timeout: float = 120.0) -> Iterator[str]:
    """`agent-env serve ARGUMENTS` on a free loopback port until the block ends; yields its URL."""
    port = free_port()
    command = [sys.executable, "-m", "agent_env.cli", "serve", *arguments, "--port", str(port),
               "--log-level", "warning"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if process.poll() is not None:
                pytest.fail(f"agent-env serve exited with {process.returncode}: {process.stdout.read()}")  # type: ignore[union-attr]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"agent-env serve did not listen on port {port} within {start_timeout:g} s")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_serve_tau2_mock_plays_an_episode_whose_user_the_config_names():
    with scripted(user_that_stops, models=("user-sim",)) as user:
        settings = json.dumps({"base_url": user.url, "backoff": 0.001})
        with served("tau2-mock", "-c", f"user={settings}") as url:
            env = AgentEnv.connect(url)
            tools = {tool["name"] for tool in env.tools()}
            assert {"create_task", USER_CHANNEL} <= tools
            row = next(row for row in env.dataset("base") if row["task_id"] == "create_task_1")
            with env.open() as session:
                opening = session.reset(**row)  # the user model opens, on the server's side
                assert opening == "Please create a task called Important Meeting for user_1."
                session.call_tool("create_task", {"user_id": "user_1", "title": "Important Meeting"})
                assert session.call_tool(USER_CHANNEL, {"message": "Done."}) == "Great, thank you. ###STOP###"
                assert session.ended() == "the user ended the conversation"
                score = session.score()
    assert score.reward == 1.0 and score.breakdown is not None
    assert score.breakdown["user"]["kind"] == "llm" and score.breakdown["user"]["model"] == "user-sim"
    assert len(user.requests) == 2  # the opening, then the one reply
