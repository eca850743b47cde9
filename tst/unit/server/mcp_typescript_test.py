"""A third-party MCP client plays a whole desk episode over plain MCP: the official TypeScript SDK under Node, against
a real `agent-env serve` on a free port. It lists the tools (the published schemas, byte for byte), starts from a
row named in the endpoint's URL, makes valid, malformed and oversized calls (each a result, never an error the SDK
throws), ends the turn and reads the reward, and starts again in a new session.

The SDK is installed from the committed `mcp_ts/package-lock.json` with `npm ci` into a cache folder (keyed by the
lockfile's hash) the first time, so a fresh clone needs only Node and npm; without them, or without the registry,
the test is skipped and says why.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.errors import AgentEnvError
from agent_env.session import LocalSession

HERE = Path(__file__).resolve().parent / "mcp_ts"
ROOT = Path(__file__).resolve().parents[3]
TASK = "desk-v4/test/0002"
CURVE = {"hours": "HE17-HE20", "points": [[-100, 20], [0, 30], [100, 60]]}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("submit_dam_offers", {"curves": [CURVE]}),  # valid
    ("submit_dam_offers", {"curves": [{"hours": "HE99", "points": [[0]]}], "as_offers": "none"}),  # malformed
    ("nope", {}),  # no such tool
    (
        "check_offers",
        {"curves": [{"hours": "all", "points": [[0, 1], [1, "x" * (20 * 1024 * 1024)]]}]},
    ),  # 20 MiB: five times the limit, and past the 16 MiB the server once stopped reading at (then a 413)
    ("end_turn", {}),
    ("desk_brief", {}),  # after the end
]


def installed_sdk() -> Path:
    """The folder holding the SDK's node_modules (installed there the first time), or a skip saying why not."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("the MCP TypeScript SDK test needs node and npm on PATH")
    lock = (HERE / "package-lock.json").read_bytes()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    folder = cache / "agent-env-tests" / f"mcp-ts-{hashlib.sha256(lock).hexdigest()[:16]}"
    if not (folder / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json").exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="mcp-ts-", dir=folder.parent))
        shutil.copy(HERE / "package.json", staging)
        shutil.copy(HERE / "package-lock.json", staging)
        try:
            subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=staging,
                check=True,
                capture_output=True,
                text=True,
                timeout=600,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
            shutil.rmtree(staging, ignore_errors=True)
            output = getattr(error, "stderr", "") or ""
            pytest.skip(
                f"npm could not install the MCP TypeScript SDK (is the npm registry reachable?): {output[-300:]}"
            )
        with contextlib.suppress(OSError):  # another run may have put it there first
            staging.rename(folder)
        shutil.rmtree(staging, ignore_errors=True)
    shutil.copy(HERE / "episode.mjs", folder)  # ES modules resolve packages from their own folder
    return folder


@contextlib.contextmanager
def agent_env_serve(*arguments: str) -> Iterator[str]:
    """`agent-env serve ...` in a subprocess on a free loopback port; yields its base URL."""
    command = [
        sys.executable,
        "-m",
        "agent_env.cli",
        "serve",
        *arguments,
        "--port",
        "0",
        "--log-level",
        "info",
    ]
    server = subprocess.Popen(
        command, env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stderr is not None
        for line in server.stderr:
            found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
            if found:
                break
        else:
            raise AssertionError("agent-env serve did not start")
        yield found.group(1)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def in_process() -> tuple[list[tuple[bool, str]], float]:
    """The same calls on an in-process session of the same task: (is_error, text) each, and the reward."""
    session = LocalSession(GridSimDesk(), start_hint="open a new MCP session (connect again)")
    session.reset(task_id=TASK)
    outcomes = []
    for name, arguments in CALLS:
        try:
            outcomes.append((False, session.call_tool(name, arguments)))
        except AgentEnvError as error:
            outcomes.append((True, str(error)))
    return outcomes, session.reward()


@pytest.fixture(scope="module")
def played() -> dict[str, Any]:
    folder = installed_sdk()
    with agent_env_serve("gridsim-desk") as url:
        run = subprocess.run(
            ["node", str(folder / "episode.mjs"), f"{url}/mcp?task_id={TASK}"],
            input=json.dumps(CALLS),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stderr[-2000:]
    seen: dict[str, Any] = json.loads(run.stdout)
    return seen


def test_it_lists_every_tool_with_its_published_schema_byte_for_byte(played):
    published = GridSimDesk.tools.published
    assert [tool["name"] for tool in played["tools"]] == [tool["name"] for tool in published]
    for tool, expected in zip(played["tools"], published, strict=True):
        assert tool["inputSchema"] == json.dumps(
            expected["inputSchema"], separators=(",", ":"), ensure_ascii=False
        )


def test_every_call_is_a_result_with_the_in_process_text_and_none_is_thrown(played):
    expected, _ = in_process()
    calls = played["calls"]
    assert [call.get("thrown") for call in calls] == [None] * len(CALLS)
    (valid, malformed, unknown, oversized, ended, after) = calls
    assert (valid["isError"], valid["text"]) == (False, "Booked 1 curves and 0 AS offers.")
    for call, (is_error, text) in zip(
        [valid, malformed, unknown, ended, after], [*expected[:3], *expected[4:]], strict=True
    ):
        assert (call["isError"], call["text"]) == (is_error, text)
    assert malformed["text"].startswith(
        "Invalid arguments for tool 'submit_dam_offers'; fix these and call it again"
    )
    assert oversized["isError"] and oversized["text"] == (
        "the request body is larger than the server's limit of 4194304 bytes: send smaller arguments"
    )
    assert after["isError"] and after["text"].endswith(
        "the episode has ended (end_turn was called) and takes no more calls"
    )


def test_the_episode_starts_from_the_row_in_the_url_and_end_turn_carries_the_reward(played):
    _, reward = in_process()
    valid, *_, ended, _ = played["calls"]
    assert valid["meta"]["agent-env/observation"].startswith("You are the day-ahead trader")
    assert ended["meta"]["agent-env/reward"] == pytest.approx(reward)
    assert ended["text"].endswith(f"reward {reward:.3f}.")
    assert ended["meta"]["agent-env/episode_id"] == valid["meta"]["agent-env/episode_id"]


def test_a_new_session_starts_a_new_episode(played):
    again = played["again"]
    assert again["isError"] is False and json.loads(again["text"])["soc_start_mwh"] == 100.0
    assert again["meta"]["agent-env/episode_id"] != played["calls"][0]["meta"]["agent-env/episode_id"]
