"""Per-call latency over OpenEnv's /ws in each direction, next to the MCP path and in process.

One small tool call, made one after another on one episode, timed by the caller:
- an agent_env server (`testbed.toy:ToyDesk`'s `battery_status`, served with the OpenEnv surface at /openenv) through
  the control API (`AgentEnv.connect`), MCP (the official SDK's client), OpenEnv's /ws with agent_env's client
  (`AgentEnv.openenv`), and with OpenEnv 0.10.0's own clients: `GenericEnvClient` over /ws, and `MCPToolClient`,
  which calls over OpenEnv's POST /mcp dialect;
- OpenEnv 0.10.0's real server (testbed/openenv_ledger.py's `place_orders`, one order) through OpenEnv's /ws with
  OpenEnv's `GenericEnvClient` and with agent_env's client;
- in process (`LocalSession.call_tool`), the baseline every row is divided by.
OpenEnv's clients run in their own venv (testbed/openenv_venvs.py, built on first use); the servers are subprocesses
on loopback. Prints median and 90th-percentile milliseconds, and ratios measured in this run.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_env import AgentEnv, LocalSession
from bench._served import served
from testbed import openenv_venvs as venvs
from testbed.toy import ToyDesk

CALLS = 300
WARMUP = 30
ORDER = {"orders": [{"side": "buy", "qty": 1}]}


def timed(call: Callable[[], Any]) -> list[float]:
    seconds = []
    for index in range(WARMUP + CALLS):
        start = time.perf_counter()
        call()
        if index >= WARMUP:
            seconds.append(time.perf_counter() - start)
    return seconds


async def timed_async(call: Callable[[], Any]) -> list[float]:
    seconds = []
    for index in range(WARMUP + CALLS):
        start = time.perf_counter()
        await call()
        if index >= WARMUP:
            seconds.append(time.perf_counter() - start)
    return seconds


def in_process() -> list[float]:
    session = LocalSession(ToyDesk())
    session.reset()
    return timed(lambda: session.call_tool("battery_status", {}))


def over_session(env: AgentEnv, tool: str, arguments: dict[str, Any], **row: Any) -> list[float]:
    with env.open() as session:
        session.reset(**row)
        return timed(lambda: session.call_tool(tool, arguments))


def over_mcp(url: str) -> list[float]:
    from mcp import Client

    async def run() -> list[float]:
        async with Client(f"{url}/mcp") as client:
            return await timed_async(lambda: client.call_tool("battery_status", {}))

    return asyncio.run(run())


def openenv_client(
    python: Path, url: str, mode: str, tool: str, arguments: dict[str, Any], **row: Any
) -> list[float]:
    script = Path(__file__).with_name("_openenv_calls.py")
    command = [
        str(python),
        str(script),
        url,
        mode,
        tool,
        json.dumps(arguments),
        json.dumps(row),
        str(CALLS),
        str(WARMUP),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    seconds: list[float] = json.loads(result.stdout.strip().splitlines()[-1])
    return seconds


def ms(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    return statistics.median(ordered) * 1e3, ordered[int(0.9 * (len(ordered) - 1))] * 1e3


def main() -> None:
    try:
        python = venvs.python("0.10.0")
    except venvs.PyPIUnreachableError as error:
        python = None
        print(f"(OpenEnv's own clients and server left out: {error})")
    rows: dict[str, list[float]] = {"in process (LocalSession)": in_process()}
    with served("testbed.toy:ToyDesk", openenv_prefix="/openenv") as (url, _):
        rows["agent_env server, control API (AgentEnv.connect)"] = over_session(
            AgentEnv.connect(url), "battery_status", {}
        )
        rows["agent_env server, MCP (mcp SDK Client)"] = over_mcp(url)
        rows["agent_env server, OpenEnv /ws (AgentEnv.openenv)"] = over_session(
            AgentEnv.openenv(f"{url}/openenv"), "battery_status", {}
        )
        if python is not None:
            base = f"{url}/openenv"
            rows["agent_env server, OpenEnv /ws (OpenEnv GenericEnvClient)"] = openenv_client(
                python, base, "ws", "battery_status", {}
            )
            rows["agent_env server, OpenEnv POST /mcp (OpenEnv MCPToolClient)"] = openenv_client(
                python, base, "mcp", "battery_status", {}
            )
    if python is not None:
        log = Path(tempfile.mkstemp(suffix=".log")[1])
        ledger = venvs.ledger(python, "OpenEnv 0.10.0's server", log)
        try:
            url = ledger.url()
            rows["OpenEnv server, OpenEnv /ws (OpenEnv GenericEnvClient)"] = openenv_client(
                python, url, "ws", "place_orders", ORDER, target=1
            )
            rows["OpenEnv server, OpenEnv /ws (AgentEnv.openenv)"] = over_session(
                AgentEnv.openenv(url), "place_orders", ORDER, target=1
            )
        finally:
            ledger.stop()
    baseline = ms(rows["in process (LocalSession)"])[0]
    print(f"per-call latency, {CALLS} calls after {WARMUP} warm-up, one episode, loopback")
    print(f"{'path':66} {'median ms':>10} {'p90 ms':>8} {'x in process':>13}")
    for name, seconds in rows.items():
        median, p90 = ms(seconds)
        print(f"{name:66} {median:10.3f} {p90:8.3f} {median / baseline:13.0f}")
    pairs = [
        (
            "agent_env's client / OpenEnv's, on OpenEnv's server",
            "OpenEnv server, OpenEnv /ws (AgentEnv.openenv)",
            "OpenEnv server, OpenEnv /ws (OpenEnv GenericEnvClient)",
        ),
        (
            "OpenEnv /ws / MCP, on agent_env's server",
            "agent_env server, OpenEnv /ws (AgentEnv.openenv)",
            "agent_env server, MCP (mcp SDK Client)",
        ),
        (
            "OpenEnv's client / agent_env's, on agent_env's server",
            "agent_env server, OpenEnv /ws (OpenEnv GenericEnvClient)",
            "agent_env server, OpenEnv /ws (AgentEnv.openenv)",
        ),
    ]
    for label, numerator, denominator in pairs:
        if numerator in rows and denominator in rows:
            print(f"{label}: {ms(rows[numerator])[0] / ms(rows[denominator])[0]:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
