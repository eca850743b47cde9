"""What serving an environment costs: tool calls per second, latency and the server's CPU per call on loopback, and
memory per live episode.

The server runs in a subprocess under uvicorn as `agent-env serve` runs it (access log off). The clients are
`bench/_load.py`'s: one connection per episode, each episode's calls one after another (as a `RemoteSession`'s
go), spread over two client processes, each costing the CPU they share with the server about a seventh of what an
httpx client costs, so that the server is what is measured. With `--baseline REV`, the server of agent_env at git
revision REV is measured beside this one, one concurrency at a time, in the same run. Figures for 1, 16 and 64
concurrent episodes on a small tool (ToyDesk's `battery_status`) and, when the GridSim desk imports, on the desk's
`submit_dam_offers` (its 24 hours booked one call at a time, then `withdraw_offers`; every call timed), against the
same calls made in process. Before that, memory: the Python heap per live episode (traced, with the app in this
process) and what is left of it after closing them and after 1,000 more episodes opened and closed, and the
served process's RSS through the same steps. Loopback only, bounded loops, stops by itself in under
two minutes; prints the figures it measured.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from agent_env.envs import load_environment
from agent_env.session import LocalSession
from bench._load import Plan, run_load
from bench._served import baseline, served

CONCURRENCY = (1, 16, 64)
CALLS = {1: 1000, 16: 3200, 64: 3200}
"""Timed calls per run, shared out among its episodes."""
CLIENT_PROCESSES = 2
TARGET_CALLS_PER_S, TARGET_P99_MS = 1000, 50
MIB = 1024 * 1024


def without_sniffio_import_storm() -> bool:
    """httpcore 1.0 tries `import sniffio` on every async request; when sniffio is not installed (anyio 4.16 no
    longer brings it) each failed import searches sys.path, which costs more than the request. Record the module
    as absent so the failure is instant: it changes nothing the server does. True if it was needed."""
    if importlib.util.find_spec("sniffio") is not None:
        return False
    sys.modules["sniffio"] = None  # type: ignore[assignment]
    return True


@dataclass(frozen=True)
class Workload:
    """What one episode does: the rows its episodes start from, and its calls in order (cycled)."""

    environment: str
    rows: list[dict[str, Any]]
    calls: list[tuple[str, dict[str, Any]]]


def small_workload() -> Workload:
    return Workload("testbed.toy:ToyDesk", [{"task": "bench"}], [("battery_status", {})])


def desk_workload() -> Workload | None:
    try:
        desk = load_environment("gridsim-desk")
    except ImportError:
        return None
    rows = [{"task_id": row["task_id"]} for row in desk().dataset_rows("train")]
    curve = {"points": [[-50, 20], [50, 40]]}
    book = [
        ("submit_dam_offers", {"curves": [{"hours": f"HE{h:02d}", **curve}], "as_offers": []})
        for h in range(1, 25)
    ]
    return Workload("gridsim-desk", rows, [*book, ("withdraw_offers", {"hours": "all"})])


def in_process(workload: Workload, calls: int) -> tuple[float, float]:
    """Calls per second of the same calls on a `LocalSession` in this process, and CPU microseconds per call."""
    session = LocalSession(load_environment(workload.environment)())
    session.reset(**workload.rows[0])
    for name, arguments in workload.calls:
        session.call_tool(name, arguments)
    started, cpu = time.perf_counter(), time.process_time()
    for index in range(calls):
        name, arguments = workload.calls[index % len(workload.calls)]
        session.call_tool(name, arguments)
    return calls / (time.perf_counter() - started), (time.process_time() - cpu) / calls * 1e6


async def open_episodes(client: httpx.AsyncClient, rows: list[dict[str, Any]], count: int) -> list[str]:
    async def one(row: dict[str, Any]) -> str:
        answer = await client.post("/episodes", json=row)
        answer.raise_for_status()
        episode_id: str = answer.json()["episode_id"]
        return episode_id

    return list(await asyncio.gather(*(one(rows[index % len(rows)]) for index in range(count))))


async def close_episodes(client: httpx.AsyncClient, episode_ids: list[str]) -> None:
    await asyncio.gather(*(client.delete(f"/episodes/{episode_id}") for episode_id in episode_ids))


@dataclass(frozen=True)
class Served:
    """One concurrency's figures for one server: calls/s, latency (ms) and the server's CPU per call (us)."""

    rate: float
    p50: float
    p99: float
    cpu_us: float


def measure(url: str, process: psutil.Process, workload: Workload, episodes: int) -> Served:
    """The timed calls of `episodes` concurrent episodes, each on its own connection, one call after another."""
    plan = Plan("control", workload.rows, workload.calls)
    before = process.cpu_times()
    load = run_load(
        url, plan, episodes, calls=max(1, CALLS[episodes] // episodes), processes=CLIENT_PROCESSES
    )
    after = process.cpu_times()
    # the opening and warm-up calls are the server's too: its CPU is shared out over every call it answered
    answered = load.calls + episodes * (1 + len(workload.calls))
    cpu = (after.user + after.system - before.user - before.system) / answered * 1e6
    return Served(load.rate, load.p50, load.p99, cpu)


async def memory(
    url: str, process: psutil.Process, rows: list[dict[str, Any]], live: int
) -> dict[str, float]:
    """The served process's RSS (MiB): idle, with `live` episodes, after closing them, after 1,000 more opened and
    closed; and how many episodes it reports live at the end."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        await close_episodes(client, await open_episodes(client, rows, 50))
        idle = process.memory_info().rss
        held = [episode for _ in range(live // 50) for episode in await open_episodes(client, rows, 50)]
        loaded = process.memory_info().rss
        await close_episodes(client, held)
        closed = process.memory_info().rss
        for _ in range(1000 // 50):
            await close_episodes(client, await open_episodes(client, rows, 50))
        cycled = process.memory_info().rss
        left = (await client.get("/health")).json()["episodes"]
    return {
        "idle": idle / MIB,
        "loaded": loaded / MIB,
        "closed": closed / MIB,
        "cycled": cycled / MIB,
        "left": left,
    }


async def traced_memory(environment: str, rows: list[dict[str, Any]], live: int) -> dict[str, float]:
    """The Python heap (KiB, traced) of a served app's episodes, run in this process without HTTP (whose own
    transient objects would blur it): per live episode, and what is left after closing them and after 1,000 more
    opened and closed."""
    from agent_env.server import build_app

    app = build_app(environment, max_episodes=4096)
    registry = app.state.episodes

    async def open_many(count: int) -> list[str]:
        opened = await asyncio.gather(*(registry.open(rows[index % len(rows)]) for index in range(count)))
        return [episode_id for episode_id, _ in opened]

    def close_all(episode_ids: list[str]) -> None:
        for episode_id in episode_ids:
            registry.close(episode_id)

    def heap() -> int:
        gc.collect()
        return tracemalloc.get_traced_memory()[0]

    async with app.router.lifespan_context(app):
        close_all(await open_many(50))
        tracemalloc.start()
        base = heap()
        held = [episode_id for _ in range(live // 50) for episode_id in await open_many(50)]
        loaded = heap()
        close_all(held)
        closed = heap()
        for _ in range(1000 // 50):
            close_all(await open_many(50))
        cycled = heap()
        tracemalloc.stop()
    return {
        "per_episode": (loaded - base) / live / 1024,
        "closed": (closed - base) / 1024,
        "cycled": (cycled - base) / 1024,
    }


def report(
    workload: Workload, label: str, live: int, baseline_source: Path | None, misses: list[str] | None
) -> None:
    local, local_cpu = in_process(workload, 3000)
    print(
        f"\n{label} ({workload.environment}); in process: {local:,.0f} calls/s, {local_cpu:,.0f} us CPU a call"
    )
    traced = asyncio.run(traced_memory(workload.environment, workload.rows, live))
    print(
        f"  memory (Python heap, traced): {traced['per_episode']:,.2f} KiB per live episode ({live} live); "
        f"left after closing them: {traced['closed']:+,.1f} KiB; "
        f"after 1,000 more opened and closed: {traced['cycled']:+,.1f} KiB"
    )
    with served(workload.environment, max_episodes=4096, call_timeout=30) as (url, process):
        rss = asyncio.run(memory(url, process, workload.rows, live))
    print(
        f"  memory (served process RSS): {rss['idle']:.1f} MiB idle, {rss['loaded']:.1f} with {live} live, "
        f"{rss['closed']:.1f} closed, {rss['cycled']:.1f} after 1,000 more opened and closed "
        f"({rss['cycled'] - rss['closed']:+.1f} MiB); {rss['left']:.0f} episodes live at the end"
    )
    servers = {"after": None} if baseline_source is None else {"before": baseline_source, "after": None}
    figures: dict[str, dict[int, Served]] = {name: {} for name in servers}
    for episodes in CONCURRENCY:  # before and after side by side, one concurrency at a time
        for name, source in servers.items():
            with served(workload.environment, source=source, max_episodes=4096, call_timeout=30) as (
                url,
                process,
            ):
                figures[name][episodes] = measure(url, process, workload, episodes)
    print(
        f"  {'episodes':>8}  {'server':>6}  {'calls/s':>9}  {'p50 ms':>7}  {'p99 ms':>7}  {'CPU us/call':>11}  "
        f"{'in process / served':>19}  {'CPU x in process':>16}  {'after / before':>14}"
    )
    for episodes in CONCURRENCY:
        for name in servers:
            run = figures[name][episodes]
            gain = (
                f"{run.rate / figures['before'][episodes].rate:>13.2f}x"
                if name == "after" and "before" in figures
                else ""
            )
            print(
                f"  {episodes:>8}  {name:>6}  {run.rate:>9,.0f}  {run.p50:>7.2f}  {run.p99:>7.2f}  {run.cpu_us:>11,.0f}  "
                f"{local / run.rate:>18,.1f}x  {run.cpu_us / local_cpu:>15,.1f}x  {gain:>14}"
            )
        after = figures["after"][episodes]
        if (
            misses is not None
            and episodes == 16
            and (after.rate < TARGET_CALLS_PER_S or after.p99 > TARGET_P99_MS)
        ):
            misses.append(f"{after.rate:,.0f} calls/s, p99 {after.p99:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", help="a git revision whose server to measure beside this one (before/after)"
    )
    options = parser.parse_args()
    started = time.monotonic()
    print(
        f"agent_env server on loopback: {psutil.cpu_count()} CPUs shared by the server and {CLIENT_PROCESSES} client "
        f"processes; target at 16 episodes: >= {TARGET_CALLS_PER_S} calls/s, p99 < {TARGET_P99_MS} ms"
    )
    if without_sniffio_import_storm():
        print(
            "(sniffio is not installed: the httpx clients record it as absent, see without_sniffio_import_storm)"
        )
    misses: list[str] = []
    with baseline(options.baseline) as source:
        if source is not None:
            print(f"before: agent_env at {options.baseline}; after: this checkout")
        report(small_workload(), "small tool battery_status", 2000, source, misses)
        desk = desk_workload()
        if desk is None:
            print("\nthe GridSim desk does not import: its figures are skipped")
        else:
            report(desk, "desk submit_dam_offers x24 + withdraw_offers", 256, source, None)
    print(f"\ntarget at 16 episodes (small tool): {'met' if not misses else 'MISSED: ' + '; '.join(misses)}")
    print(f"took {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
