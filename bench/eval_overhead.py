"""What `agent-env eval` itself costs a turn, against a scripted OpenAI-compatible server that answers instantly.

The server (`bench/_eval_script.py`) runs in its own process and answers every chat request at once with the next
call of an eight-turn desk episode (reads, a check, a submission, end_turn). Measured in this run, on the GridSim
desk in process:
- the baseline: the server alone, driven by a bare asyncio client (no HTTP library) posting a real mid-episode
  request (the desk's tools and four turns of messages) with 32 requests in flight: requests a second;
- the harness: `evaluate(...)` with `concurrency=32` (the openai client, a desk session per episode, every call
  validated and run, the JSONL written): turns a second, against the 200 the harness must reach, and the overhead
  per turn (one turn's time less one baseline request's);
- memory with `concurrency=256`: the harness process's peak RSS over what it held before the run.
Loopback only, bounded, stops by itself; prints the figures it measured.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

from agent_env import AgentEnv
from agent_env.evaluation import Endpoint, evaluate
from bench._eval_script import TURNS, desk_trader
from testbed.scripted import scripted

TARGET_TURNS_PER_S = 200
BASELINE_REQUESTS = 3000
EPISODES = {32: 160, 256: 512}
MIB = 1024 * 1024


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    script = str(Path(__file__).with_name("_eval_script.py"))
    process = subprocess.Popen([sys.executable, script, str(port)], env=environment)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError("the scripted server did not start")
        time.sleep(0.05)


def mid_episode_request(desk: AgentEnv) -> bytes:
    """A real request of the fifth turn: recorded from one episode against an in-process scripted server."""
    with scripted(desk_trader) as server, tempfile.TemporaryDirectory() as folder:
        evaluate(desk, Endpoint(server.url), episodes=1, out=Path(folder) / "one.jsonl")
        return json.dumps(server.requests[4][0]).encode()


async def baseline(url: str, body: bytes, concurrency: int) -> float:
    """Requests a second the server answers with `concurrency` in flight, each on a keep-alive connection of a bare
    asyncio client (no HTTP library: what is measured is the server)."""
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body
    pending = iter(range(BASELINE_REQUESTS))

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        for _ in pending:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            length = next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
            await reader.readexactly(int(length.split(b":")[1]))
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return BASELINE_REQUESTS / (time.perf_counter() - started)


def harness(desk: AgentEnv, url: str, concurrency: int) -> tuple[float, float]:
    """(turns a second, peak RSS growth in MiB) of `evaluate` with `concurrency` episodes in flight."""
    process = psutil.Process()
    before = process.memory_info().rss
    peak = [before]
    running = threading.Event()
    running.set()

    def sample() -> None:
        while running.is_set():
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        report = evaluate(
            desk, Endpoint(url), episodes=EPISODES[concurrency], concurrency=concurrency,
            out=Path(folder) / "run.jsonl",
        )  # fmt: skip
        elapsed = time.perf_counter() - started
    running.clear()
    sampler.join()
    turns = sum(episode.turns for episode in report.episodes)
    assert turns == EPISODES[concurrency] * TURNS and report.summaries[0].failed == 0, report.summaries[0]
    return turns / elapsed, (peak[0] - before) / MIB


def main() -> int:
    desk = AgentEnv.local("gridsim-desk")
    body = mid_episode_request(desk)
    process, url = start_server()
    try:
        base = asyncio.run(baseline(url, body, 32))
        evaluate_rate, _ = harness(desk, url, 32)
        _, memory = harness(desk, url, 256)
    finally:
        process.kill()
        process.wait()
    overhead_ms = (1 / evaluate_rate - 1 / base) * 1000
    print(
        f"request body of a mid-episode turn: {len(body) / 1024:.1f} KiB (the desk's 12 tools and 9 messages)"
    )
    print(
        f"baseline, the scripted server alone (a bare asyncio client, 32 in flight): {base:,.0f} requests/s"
    )
    print(
        f"agent-env eval, concurrency 32, {EPISODES[32]} desk episodes of {TURNS} turns: {evaluate_rate:,.0f} turns/s "
        f"({evaluate_rate / base:.2f}x the baseline; target {TARGET_TURNS_PER_S}/s: "
        f"{'met' if evaluate_rate >= TARGET_TURNS_PER_S else 'NOT MET'})"
    )
    print(f"harness overhead per turn, over the bare request: {overhead_ms:.2f} ms")
    print(
        f"memory, concurrency 256, {EPISODES[256]} episodes: peak RSS +{memory:.0f} MiB over the process before the run "
        f"({memory * 1024 / 256:.0f} KiB per episode in flight)"
    )
    return 0 if evaluate_rate >= TARGET_TURNS_PER_S else 1


if __name__ == "__main__":
    sys.exit(main())
