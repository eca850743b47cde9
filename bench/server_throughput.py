"""What serving an environment costs: tool calls per second, latency and the server's CPU per call on loopback, and
memory per live episode, judged against issue 27's three targets.

The server runs in a subprocess under uvicorn as `agent-env serve` runs it (access log off). The clients are
`bench/_load.py`'s: one connection per episode, each episode's calls one after another (as a `RemoteSession`'s
go), spread over two client processes, each costing the CPU they share with the server about a seventh of what an
httpx client costs, so that the server is what is measured. Figures for 1, 16 and 64 concurrent episodes on a small
tool (ToyDesk's `battery_status`) and, when the GridSim desk imports, on the desk's `submit_dam_offers` (its 24
hours booked one call at a time, then `withdraw_offers`; every call timed), against the same calls made in process.
Each run calls for a fixed time, and the server's CPU is read over those calls alone. With `--baseline REV`, the
server of agent_env at git revision REV (a `git archive` of it) is measured beside this one, one concurrency at a
time, in the same run; each comparison runs `--rounds` times, before and after in turn, and the medians are
reported.

The targets, each printed with its measured figure and MET or MISSED:
1. served calls/s at 16 and 64 sessions at least 2x the baseline's (both workloads; needs `--baseline`);
2. the desk's in-process/served ratio at 16 episodes at most 5x;
3. the server's CPU per call at most 2x the in-process call's (both workloads, at 16 and 64). Beside it, the floor:
   `bench/_floor.py`'s bare app under the same uvicorn stack (it parses the body, hops to agent_env's worker pool,
   calls the `LocalSession` and answers; no guard, routing, registry or error forms), measured in the same rounds,
   so that what agent_env adds is the served CPU a call less the floor's, and the room the target leaves for it is
   twice the in-process call less the floor.
Beside the first: how many cores the server and its clients kept busy, and what doubling would need of them, since on
a machine whose cores are all in use a rate can only double if the CPU of a call halves; and the floor's rate
(below). (The bench's earlier absolute goal, 1,000 calls/s with p99 under 50 ms on the small tool, measured the
machine as much as the server, and is gone.)

Before that, memory: the Python heap per live episode (traced, with the app in this process) and what is left of it
after closing them and after 1,000 more episodes opened and closed, and the served process's RSS through the same
steps. Loopback only, bounded loops, stops by itself in about seven minutes with a baseline and three rounds;
prints the figures it measured.

    PYTHONPATH=. uv run --frozen python bench/server_throughput.py --baseline 4055ec3
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import statistics
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
SECONDS = 4.0
"""How long each run calls, after its episodes are opened and warmed."""
ROUNDS = 3
CLIENT_PROCESSES = 2
TARGET_GAIN = 2.0
"""Served calls/s at 16 and 64 sessions, over the baseline's: at least this."""
TARGET_RATIO = 5.0
"""The desk's in-process calls/s over its served calls/s at 16 episodes: at most this."""
TARGET_CPU = 2.0
"""The server's CPU per call over the in-process call's: at most this."""
JUDGED = (16, 64)
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
    """One run's figures for one server: calls/s, latency (ms), and the server's and the clients' CPU per call (us)."""

    rate: float
    p50: float
    p99: float
    cpu_us: float
    client_cpu_us: float

    @property
    def cores(self) -> float:
        """The cores the server and its clients kept busy."""
        return (self.cpu_us + self.client_cpu_us) * self.rate / 1e6


def measure(url: str, process: psutil.Process, workload: Workload, episodes: int) -> Served:
    """`SECONDS` of calls from `episodes` concurrent episodes, each on its own connection, one call after another;
    the server's CPU is read over those calls alone (not the opening and warm-up of the episodes)."""
    plan = Plan("control", workload.rows, workload.calls)
    load = run_load(url, plan, episodes, seconds=SECONDS, processes=CLIENT_PROCESSES, server_pid=process.pid)
    return Served(load.rate, load.p50, load.p99, load.server_cpu_us, load.client_cpu_us)


def median(runs: list[Served]) -> Served:
    """Each figure's median over the rounds."""
    return Served(
        *(statistics.median(getattr(run, name) for run in runs) for name in Served.__dataclass_fields__)
    )


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


@dataclass(frozen=True)
class Figures:
    """One workload's medians: in process (calls/s, CPU us a call), and served, by server and concurrency (each with
    the lowest and highest calls/s of its rounds)."""

    label: str
    local: float
    local_cpu: float
    served: dict[str, dict[int, Served]]
    spread: dict[str, dict[int, tuple[float, float]]]


def report(
    workload: Workload,
    label: str,
    live: int,
    baseline_source: Path | None,
    rounds: int,
    granian: bool = False,
) -> Figures:
    traced = asyncio.run(traced_memory(workload.environment, workload.rows, live))
    print(f"\n{label} ({workload.environment})")
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
    limits = {"max_episodes": 4096, "call_timeout": 30}
    servers: dict[str, dict[str, Any]] = {"after": limits, "floor": {"floor": True}}
    if granian:  # the same app, and the same floor, under granian
        servers |= {
            "granian": {**limits, "stack": "granian"},
            "floor-granian": {"floor": True, "stack": "granian"},
        }
    if baseline_source is not None:
        servers = {"before": {"source": baseline_source, **limits}, **servers}
    runs: dict[str, dict[int, list[Served]]] = {name: {n: [] for n in CONCURRENCY} for name in servers}
    local_runs = []
    for _ in range(rounds):
        local_runs.append(in_process(workload, 3000))
        for episodes in CONCURRENCY:  # before, after and the floor side by side, one concurrency at a time
            for name, settings in servers.items():
                with served(workload.environment, **settings) as (url, process):
                    runs[name][episodes].append(measure(url, process, workload, episodes))
    local = statistics.median(rate for rate, _ in local_runs)
    local_cpu = statistics.median(cpu for _, cpu in local_runs)
    figures = Figures(
        label,
        local,
        local_cpu,
        {name: {n: median(found) for n, found in by.items()} for name, by in runs.items()},
        {
            name: {n: (min(r.rate for r in found), max(r.rate for r in found)) for n, found in by.items()}
            for name, by in runs.items()
        },
    )
    print(
        f"  in process: {local:,.0f} calls/s, {local_cpu:,.0f} us CPU a call; served, medians of {rounds} round(s):"
    )
    print(
        f"  {'episodes':>8}  {'server':>13}  {'calls/s':>9}  {'(lowest-highest)':>16}  {'p50 ms':>7}  {'p99 ms':>7}  "
        f"{'server CPU us/call':>18}  {'clients us/call':>15}  {'cores busy':>10}  {'in process / served':>19}  "
        f"{'CPU x in process':>16}  {'after / before':>14}"
    )
    for episodes in CONCURRENCY:
        for name in servers:
            run = figures.served[name][episodes]
            low, high = figures.spread[name][episodes]
            gain = (
                f"{run.rate / figures.served['before'][episodes].rate:>13.2f}x"
                if name == "after" and "before" in figures.served
                else ""
            )
            print(
                f"  {episodes:>8}  {name:>13}  {run.rate:>9,.0f}  {f'({low:,.0f}-{high:,.0f})':>16}  {run.p50:>7.2f}  "
                f"{run.p99:>7.2f}  {run.cpu_us:>18,.0f}  {run.client_cpu_us:>15,.0f}  {run.cores:>10.2f}  "
                f"{local / run.rate:>18,.1f}x  {run.cpu_us / local_cpu:>15,.1f}x  {gain:>14}"
            )
    return figures


def verdict(met: bool) -> str:
    return "MET" if met else "MISSED"


def judge(results: list[Figures], baseline: str | None, rounds: int) -> list[bool]:
    """Print each target with its measured figures and MET or MISSED; the verdicts, in order."""
    verdicts: list[bool] = []
    before = f"before: agent_env at {baseline}, served beside this checkout in this run" if baseline else ""
    print(f"\ntargets (medians of {rounds} round(s){'; ' + before if before else ''}):")
    print(
        f"  1. served calls/s at {' and '.join(map(str, JUDGED))} sessions at least {TARGET_GAIN:g}x before"
    )
    for figures in results:
        if "before" not in figures.served:
            print(f"     {figures.label}: not judged (run with --baseline 4055ec3)")
            continue
        for episodes in JUDGED:
            old, new = figures.served["before"][episodes], figures.served["after"][episodes]
            gain = new.rate / old.rate
            verdicts.append(gain >= TARGET_GAIN)
            need = (old.cpu_us + old.client_cpu_us) / TARGET_GAIN
            floor = figures.served["floor"][episodes].rate
            print(
                f"     {figures.label}, {episodes}: {new.rate:,.0f} against {old.rate:,.0f} calls/s = {gain:.2f}x  "
                f"{verdict(verdicts[-1])}  (cores busy {old.cores:.2f} before, {new.cores:.2f} after; at the "
                f"same cores, {TARGET_GAIN:g}x needs server + clients within {need:,.0f} us a call: they took "
                f"{new.cpu_us:,.0f} + {new.client_cpu_us:,.0f}; the floor: {floor:,.0f} calls/s = "
                f"{floor / old.rate:.2f}x)"
            )
    desk = next((figures for figures in results if figures.label.startswith("desk")), None)
    if desk is None:
        print(
            f"  2. the desk's in process / served at 16 episodes at most {TARGET_RATIO:g}x: not judged (no desk)"
        )
    else:
        ratio = desk.local / desk.served["after"][16].rate
        was = (
            f" (before: {desk.local / desk.served['before'][16].rate:.1f}x)"
            if "before" in desk.served
            else ""
        )
        verdicts.append(ratio <= TARGET_RATIO)
        print(
            f"  2. the desk's in process / served at 16 episodes at most {TARGET_RATIO:g}x: {desk.local:,.0f} / "
            f"{desk.served['after'][16].rate:,.0f} calls/s = {ratio:.1f}x{was}  {verdict(verdicts[-1])}"
        )
    print(f"  3. the server's CPU per call at most {TARGET_CPU:g}x the in-process call's")
    for figures in results:
        for episodes in JUDGED:
            run = figures.served["after"][episodes]
            times = run.cpu_us / figures.local_cpu
            verdicts.append(times <= TARGET_CPU)
            was = (
                f" (before: {figures.served['before'][episodes].cpu_us / figures.local_cpu:.1f}x)"
                if "before" in figures.served
                else ""
            )
            floor = figures.served["floor"][episodes].cpu_us
            print(
                f"     {figures.label}, {episodes}: {run.cpu_us:,.0f} / {figures.local_cpu:,.1f} us = {times:.1f}x"
                f"{was}  {verdict(verdicts[-1])}  (the floor: {floor:,.0f} us = {floor / figures.local_cpu:.1f}x; "
                f"agent_env's part above it {run.cpu_us - floor:,.0f} us, within {TARGET_CPU:g}x it could be "
                f"{max(0.0, TARGET_CPU * figures.local_cpu - floor):,.0f})"
            )
    return verdicts


def stacks(results: list[Figures]) -> None:
    """uvicorn and granian under the same app and guard: each one's server CPU a call, its floor's, and agent_env's
    part above the floor."""
    print(
        "\nthe stack under the app: uvicorn (agent-env serve's) and granian, server CPU us a call (medians)"
    )
    print(
        f"  {'workload':>10}  {'episodes':>8}  {'uvicorn':>8}  {'its floor':>9}  {'ours above':>10}  "
        f"{'granian':>8}  {'its floor':>9}  {'ours above':>10}  {'granian / uvicorn':>17}  {'calls/s u / g':>15}"
    )
    for figures in results:
        for episodes in CONCURRENCY:
            uvicorn, floor = figures.served["after"][episodes], figures.served["floor"][episodes]
            granian, granian_floor = (
                figures.served["granian"][episodes],
                figures.served["floor-granian"][episodes],
            )
            print(
                f"  {figures.label:>10}  {episodes:>8}  {uvicorn.cpu_us:>8,.0f}  {floor.cpu_us:>9,.0f}  "
                f"{uvicorn.cpu_us - floor.cpu_us:>10,.0f}  {granian.cpu_us:>8,.0f}  {granian_floor.cpu_us:>9,.0f}  "
                f"{granian.cpu_us - granian_floor.cpu_us:>10,.0f}  {granian.cpu_us / uvicorn.cpu_us:>16.2f}x  "
                f"{f'{uvicorn.rate:,.0f} / {granian.rate:,.0f}':>15}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", help="a git revision whose server to measure beside this one (before/after): 4055ec3"
    )
    parser.add_argument(
        "--rounds", type=int, default=ROUNDS, help="runs of each comparison (medians reported)"
    )
    parser.add_argument(
        "--granian",
        action="store_true",
        help="also serve the same app, and the floor, under granian (testbed/granian.py), side by side",
    )
    options = parser.parse_args()
    started = time.monotonic()
    print(
        f"agent_env server on loopback: {psutil.cpu_count()} CPUs shared by the server and {CLIENT_PROCESSES} client "
        f"processes; {SECONDS:g} s of calls a run"
    )
    if without_sniffio_import_storm():
        print(
            "(sniffio is not installed: the httpx clients record it as absent, see without_sniffio_import_storm)"
        )
    results = []
    with baseline(options.baseline) as source:
        if source is not None:
            print(f"before: agent_env at {options.baseline}; after: this checkout")
        results.append(report(small_workload(), "small tool", 2000, source, options.rounds, options.granian))
        desk = desk_workload()
        if desk is None:
            print("\nthe GridSim desk does not import: its figures are skipped")
        else:
            results.append(report(desk, "desk", 256, source, options.rounds, options.granian))
    verdicts = judge(results, options.baseline, options.rounds)
    if options.granian:
        stacks(results)
    print(f"\n{sum(verdicts)} of {len(verdicts)} judged figures met; took {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
