"""What serving an environment costs: tool calls per second and latency on loopback, and memory per live episode.

The server runs in a subprocess under uvicorn (access log off), the clients are httpx async clients in this process,
each episode making its calls one after another. Measured for 1, 16 and 64 concurrent episodes on a small tool
(ToyDesk's `battery_status`) and, when the GridSim desk imports, on the desk's `submit_dam_offers` (24 hours
booked one by one, then `withdraw_offers`, all timed), against the same calls made in process. Then the server's
resident memory per live episode, and whether it comes back after 1,000 episodes are opened and closed.
Loopback only, bounded loops; stops by itself in under two minutes. Prints the figures it measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import psutil

from agent_env.envs import load_environment
from agent_env.session import LocalSession

CONCURRENCY = (1, 16, 64)
CALLS = {1: 1500, 16: 4000, 64: 4000}
"""Timed calls per run, shared out among its episodes."""
TARGET_CALLS_PER_S, TARGET_P99_MS = 1000, 50
SERVER = """
import sys, uvicorn
from agent_env.server import build_app
app = build_app(sys.argv[1], max_episodes=4096, call_timeout=30)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", access_log=False)
"""


@dataclass
class Workload:
    """What one episode does: the row it starts from, and its calls in order (cycled)."""

    environment: str
    row: dict[str, Any]
    calls: list[tuple[str, dict[str, Any]]]


def small_workload() -> Workload:
    return Workload("tst.data.toy:ToyDesk", {"task": "bench"}, [("battery_status", {})])


def desk_workload() -> Workload | None:
    try:
        load_environment("gridsim-desk")
    except ImportError:
        return None
    book = [
        ("submit_dam_offers", {"curves": [{"hours": f"HE{hour:02d}", "points": [[-50, 20], [50, 40]]}], "as_offers": []})
        for hour in range(1, 25)
    ]
    return Workload("gridsim-desk", {"task_id": "desk-v4/train/0000"}, [*book, ("withdraw_offers", {"hours": "all"})])


@contextlib.contextmanager
def server(environment: str) -> Iterator[tuple[str, psutil.Process]]:
    """The environment served by uvicorn in a subprocess on a free loopback port: (base URL, its process)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-c", SERVER, environment, str(port)], env=os.environ.copy())
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server for {environment} did not start")
            time.sleep(0.1)
        yield url, psutil.Process(process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def open_episodes(client: httpx.AsyncClient, row: dict[str, Any], count: int) -> list[str]:
    async def one() -> str:
        answer = await client.post("/episodes", json=row)
        answer.raise_for_status()
        episode_id: str = answer.json()["episode_id"]
        return episode_id

    return list(await asyncio.gather(*(one() for _ in range(count))))


async def close_episodes(client: httpx.AsyncClient, episode_ids: list[str]) -> None:
    await asyncio.gather(*(client.delete(f"/episodes/{episode_id}") for episode_id in episode_ids))


async def drive(client: httpx.AsyncClient, episode_id: str, workload: Workload, count: int) -> list[float]:
    """Make `count` calls in one episode, one after another; return each call's latency in seconds."""
    latencies = []
    for index in range(count):
        name, arguments = workload.calls[index % len(workload.calls)]
        started = time.perf_counter()
        answer = await client.post(f"/episodes/{episode_id}/tools/{name}", json=arguments)
        latencies.append(time.perf_counter() - started)
        if answer.status_code != 200:
            raise RuntimeError(f"{name} answered {answer.status_code}: {answer.text}")
    return latencies


async def measure(url: str, workload: Workload, episodes: int, calls: int) -> tuple[float, float, float]:
    """(calls per second, p50 ms, p99 ms) of `calls` timed calls spread over `episodes` concurrent episodes."""
    limits = httpx.Limits(max_connections=episodes + 4, max_keepalive_connections=episodes + 4)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
        episode_ids = await open_episodes(client, workload.row, episodes)
        per_episode = max(1, calls // episodes)
        await asyncio.gather(*(drive(client, e, workload, len(workload.calls)) for e in episode_ids))  # warm up
        started = time.perf_counter()
        runs = await asyncio.gather(*(drive(client, e, workload, per_episode) for e in episode_ids))
        elapsed = time.perf_counter() - started
        await close_episodes(client, episode_ids)
    latencies = sorted(latency for run in runs for latency in run)
    cuts = statistics.quantiles(latencies, n=100)
    return len(latencies) / elapsed, cuts[49] * 1e3, cuts[98] * 1e3


def in_process(workload: Workload, calls: int) -> float:
    """Calls per second of the same calls on a `LocalSession` in this process."""
    session = LocalSession(load_environment(workload.environment)())
    session.reset(**workload.row)
    for name, arguments in workload.calls:
        session.call_tool(name, arguments)
    started = time.perf_counter()
    for index in range(calls):
        name, arguments = workload.calls[index % len(workload.calls)]
        session.call_tool(name, arguments)
    return calls / (time.perf_counter() - started)


async def memory(url: str, process: psutil.Process, row: dict[str, Any], live: int) -> dict[str, float]:
    """The server's RSS: idle, with `live` episodes, after closing them, and after 1,000 more opened and closed."""
    megabytes = 1024 * 1024
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        warm = await open_episodes(client, row, 32)
        await close_episodes(client, warm)
        idle = process.memory_info().rss
        held = await open_episodes(client, row, live)
        loaded = process.memory_info().rss
        await close_episodes(client, held)
        closed = process.memory_info().rss
        for _ in range(1000 // 50):
            await close_episodes(client, await open_episodes(client, row, 50))
        cycled = process.memory_info().rss
    return {
        "per_episode_kb": (loaded - idle) / live / 1024,
        "idle_mb": idle / megabytes,
        "loaded_mb": loaded / megabytes,
        "closed_mb": closed / megabytes,
        "cycled_mb": cycled / megabytes,
    }


def report(workload: Workload, label: str, live: int, check: Callable[[int, float, float], None]) -> None:
    local = in_process(workload, 3000)
    print(f"\n{label} ({workload.environment}); in process: {local:,.0f} calls/s")
    print(f"  {'episodes':>8}  {'calls/s':>9}  {'p50 ms':>7}  {'p99 ms':>7}  {'in-process / served':>19}")
    with server(workload.environment) as (url, process):
        for episodes in CONCURRENCY:
            rate, p50, p99 = asyncio.run(measure(url, workload, episodes, CALLS[episodes]))
            print(f"  {episodes:>8}  {rate:>9,.0f}  {p50:>7.2f}  {p99:>7.2f}  {local / rate:>18.1f}x")
            check(episodes, rate, p99)
        figures = asyncio.run(memory(url, process, workload.row, live))
    print(
        f"  memory: {figures['per_episode_kb']:,.1f} KiB per live episode ({live} live: {figures['idle_mb']:.1f} -> "
        f"{figures['loaded_mb']:.1f} MiB RSS); after closing them {figures['closed_mb']:.1f} MiB; after 1,000 more "
        f"opened and closed {figures['cycled_mb']:.1f} MiB ({figures['cycled_mb'] - figures['closed_mb']:+.1f} MiB)"
    )


def main() -> None:
    started = time.monotonic()
    misses: list[str] = []

    def check(episodes: int, rate: float, p99: float) -> None:
        if episodes == 16 and (rate < TARGET_CALLS_PER_S or p99 > TARGET_P99_MS):
            misses.append(f"16 episodes: {rate:,.0f} calls/s, p99 {p99:.1f} ms")

    print(f"agent_env server on loopback, {psutil.cpu_count()} CPUs; target at 16 episodes: "
          f">= {TARGET_CALLS_PER_S} calls/s, p99 < {TARGET_P99_MS} ms")  # fmt: skip
    report(small_workload(), "small tool battery_status", 500, check)
    desk = desk_workload()
    if desk is None:
        print("\nthe GridSim desk does not import: its figures are skipped")
    else:
        report(desk, "desk submit_dam_offers x24 + withdraw_offers", 64, lambda *_: None)
    print(f"\ntarget at 16 episodes (small tool): {'met' if not misses else 'MISSED: ' + '; '.join(misses)}")
    print(f"took {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
