"""MCP environments at batch scale: episodes per second as the warm pool and the server's start time vary, and what a
live episode costs in server processes and memory.

A stdio MCP episode runs on a server process of its own (`StdioServer`), started ahead of time by the pool (`warm`
spares) or, past them, when its `reset` asks; `shared=True` keeps one process for every episode. The server here is
`testbed/scripted_mcp.py` (the official MCP SDK's low-level server over stdio, a real process), with
`--start-delay` standing for a slower server (a Node.js one takes about 0.3-1 s to start; a browser much more).
`THREADS` rollout threads each play `ROUNDS` episodes one after another (reset, 3 tool calls, the reward), as TRL's
rollouts reuse their environments step after step. Printed for each setting: episodes per second, the median
reset, and the server processes alive at the peak with their RSS. Stops by itself in a few minutes.

    PYTHONPATH=. uv run --frozen python bench/mcp_batch.py
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

import psutil

from agent_env import AgentEnv
from agent_env.mcp import StdioServer
from agent_env.mcp._supervisor import OWNER_MARK, marked_processes, owner_mark

SCRIPTED = Path(__file__).resolve().parents[1] / "testbed" / "scripted_mcp.py"
THREADS, ROUNDS = 8, 3
MIB = 1024 * 1024


def server_rss() -> tuple[int, int]:
    """This process's MCP server processes alive now, and their RSS in bytes."""
    count, rss = 0, 0
    for pid in marked_processes(OWNER_MARK, owner_mark()):
        try:
            rss += psutil.Process(pid).memory_info().rss
            count += 1
        except psutil.Error:
            pass
    return count, rss


def run(warm: int, start_delay: float, shared: bool) -> tuple[float, float, int, float]:
    """(episodes/s, median reset s, server processes at the peak, their RSS at the peak in MiB)."""
    server = StdioServer(sys.executable, [str(SCRIPTED), "--start-delay", str(start_delay)], shared=shared)
    env = AgentEnv.mcp(server, reward="score", warm=warm, rows=[{"prompt": "count"}])
    resets: list[float] = []
    peak = [0, 0]
    lock = threading.Lock()

    def rollout() -> None:
        session = env.provider.open()
        try:
            for _ in range(ROUNDS):
                started = time.perf_counter()
                session.reset(prompt="count")
                took = time.perf_counter() - started
                for _ in range(3):
                    session.call_tool("count", {})
                session.reward()
                processes, rss = server_rss()
                with lock:
                    resets.append(took)
                    if rss > peak[1]:
                        peak[:] = [processes, rss]
        finally:
            session.close()

    try:
        threads = [threading.Thread(target=rollout) for _ in range(THREADS)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
    finally:
        env.close()
    return THREADS * ROUNDS / elapsed, statistics.median(resets), peak[0], peak[1] / MIB


def main() -> None:
    print(
        f"{THREADS} rollout threads x {ROUNDS} episodes (reset, 3 calls, reward) on the scripted SDK server; "
        f"{psutil.cpu_count()} CPUs"
    )
    print(
        f"  {'setting':<34} {'episodes/s':>10} {'reset p50':>10} {'servers':>8} {'their RSS':>10} {'per server':>11}"
    )
    settings = [(warm, delay, False) for delay in (0.0, 1.0) for warm in (0, 2, THREADS)] + [(2, 1.0, True)]
    for warm, delay, shared in settings:
        rate, reset, processes, rss = run(warm, delay, shared)
        label = f"{'shared' if shared else 'one per episode'}, warm={warm}, start +{delay:g} s"
        per = rss / processes if processes else 0.0
        print(f"  {label:<34} {rate:>10.2f} {reset:>9.2f}s {processes:>8} {rss:>8.0f}MB {per:>9.1f}MB")


if __name__ == "__main__":
    main()
