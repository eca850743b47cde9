"""What a Ray pool buys: wall time for CPU-bound tool calls in process against 1, 2 and 4 actors, and what one call
costs on the desk in process, served, and on Ray.

Scaling: E episodes of C calls each, every call burning a fixed amount of thread CPU time, driven from a thread
pool of E threads (as AsyncGRPO runs tools). In process, the calls share one interpreter (the GIL); on Ray, each
actor is its own process. Next to each figure: effective cores (tool CPU seconds over wall seconds) and the load
average before and after, because on a shared machine the figures measure what the machine had free as much as the
layout. Ray's workers run at niceness 15 by default, so this sets RAY_worker_niceness=0 for a fair comparison.
Per call: one episode of the GridSim desk, its calls one after another (as GRPOTrainer makes them), through a
`LocalSession`, a `RemoteSession` on `agent-env serve` over loopback, and a `RaySession`. Figures, not asserted.
"""

from __future__ import annotations

import os
import secrets
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

os.environ["RAY_worker_niceness"] = "0"  # noqa: SIM112  (Ray spells it so; read when the cluster starts)
os.environ.setdefault("RAY_AUTH_MODE", "token")
os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(16))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import ray  # after the settings Ray reads when imported

from agent_env.envs import load_environment
from agent_env.ray import RayProvider
from agent_env.server.client import RemoteProvider
from agent_env.session import LocalProvider, Provider
from bench._burn import BurnDesk
from bench._served import served

EPISODES, CALLS, BURN_MS = 8, 10, 20.0
ACTORS = (1, 2, 4)
REPEATS = 3
DESK_CALLS = 300


def run_episodes(provider: Provider) -> tuple[float, float]:
    """Wall seconds and tool CPU seconds for EPISODES episodes of CALLS burning calls, one thread per episode."""
    sessions = [provider.open() for _ in range(EPISODES)]
    for session in sessions:
        session.reset()
        session.call_tool("burn", {"ms": 1})  # warm: the episode is placed and its actor is up

    def play(session: Any) -> float:
        return sum(float(session.call_tool("burn", {"ms": BURN_MS})) for _ in range(CALLS))

    with ThreadPoolExecutor(EPISODES) as threads:
        started = time.perf_counter()
        cpu = sum(threads.map(play, sessions))
        wall = time.perf_counter() - started
    for session in sessions:
        session.close()
    return wall, cpu


def scaling_row(label: str, provider: Provider) -> float:
    before = os.getloadavg()[0]
    runs = sorted((run_episodes(provider) for _ in range(REPEATS)), key=lambda run: run[0])
    wall, cpu = runs[len(runs) // 2]
    after = os.getloadavg()[0]
    calls = EPISODES * CALLS
    print(
        f"  {label:<14} {wall:7.2f} s  {calls / wall:8.1f} calls/s  {cpu / wall:5.2f} effective cores  "
        f"load {before:4.1f} -> {after:4.1f}"
    )
    return wall


def scaling() -> None:
    print(
        f"\nCPU-bound tools: {EPISODES} episodes x {CALLS} calls x {BURN_MS:g} ms of thread CPU time "
        f"({EPISODES * CALLS * BURN_MS / 1000:.1f} CPU s in all), {EPISODES} caller threads; median of {REPEATS}"
    )
    baseline = scaling_row("in process", LocalProvider(BurnDesk))
    for actors in ACTORS:
        provider = RayProvider(
            BurnDesk, actors=actors, pool=f"bench-burn-{actors}", episodes_per_actor=EPISODES
        )
        try:
            wall = scaling_row(f"{actors} actor{'s' if actors > 1 else ''}", provider)
            print(f"  {'':<14} {baseline / wall:7.2f}x the in-process speed")
        finally:
            provider.shutdown()


def latencies_ms(
    provider: Provider, row: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]
) -> list[float]:
    session = provider.open()
    session.reset(**row)
    for name, arguments in calls[:25]:
        session.call_tool(name, arguments)  # warm
    measured = []
    for index in range(DESK_CALLS):
        name, arguments = calls[index % len(calls)]
        started = time.perf_counter()
        session.call_tool(name, arguments)
        measured.append((time.perf_counter() - started) * 1e3)
    session.close()
    return measured


def per_call() -> None:
    desk = load_environment("gridsim-desk")
    row = {"task_id": desk().dataset_rows("train")[0]["task_id"]}
    curve = {"points": [[-50, 20], [50, 40]]}
    calls = [
        *(
            ("submit_dam_offers", {"curves": [{"hours": f"HE{h:02d}", **curve}], "as_offers": []})
            for h in range(1, 25)
        ),
        ("withdraw_offers", {"hours": "all"}),
        ("battery_status", {}),
    ]
    print(
        f"\nPer call on the desk: one episode, {DESK_CALLS} calls one after another (submit_dam_offers x24, ...)"
    )
    print(f"  {'path':<26} {'p50 ms':>7} {'p90 ms':>7} {'mean ms':>8} {'over in process':>16}")
    rows: dict[str, list[float]] = {}
    rows["in process"] = latencies_ms(LocalProvider(desk), row, calls)
    with served("gridsim-desk") as (url, _):
        rows["served (loopback HTTP)"] = latencies_ms(RemoteProvider(url), row, calls)
    provider = RayProvider("gridsim-desk", actors=1, pool="bench-desk")
    try:
        rows["Ray actor"] = latencies_ms(provider, row, calls)
    finally:
        provider.shutdown()
    local = statistics.mean(rows["in process"])
    for label, measured in rows.items():
        quantiles = statistics.quantiles(measured, n=10)
        mean = statistics.mean(measured)
        print(f"  {label:<26} {quantiles[4]:7.2f} {quantiles[8]:7.2f} {mean:8.2f} {mean - local:+15.2f} ms")


def timed(step: Callable[[], None], label: str) -> None:
    started = time.monotonic()
    step()
    print(f"  ({label}: {time.monotonic() - started:.0f} s)")


def main() -> None:
    started = time.monotonic()
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}; RAY_worker_niceness=0")
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    print(f"  (a local Ray cluster started in {time.monotonic() - started:.0f} s)")
    try:
        timed(scaling, "scaling")
        timed(per_call, "per call")
    finally:
        ray.shutdown()
    print(f"took {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
