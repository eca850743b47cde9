"""Served calls per second over the Open Reward Standard's surface against the project's MCP surface, on the desk.

One `agent-env serve gridsim-desk --ors` server (uvicorn in a subprocess, as `agent-env serve` runs it) answers both:
an MCP session per episode (`tools/call` over streamable HTTP) and an ORS session per episode (`POST /gridsimdesk/call`,
answered as an SSE stream: its `task_id`, then the result). The clients are `bench/_load.py`'s (one connection per
episode, each episode's calls one after another, two client processes), so that the server is what is measured.
The calls are server_throughput.py's desk workload: the 24 hours of `submit_dam_offers` booked one call at a time,
then `withdraw_offers`. At 1, 16 and 64 concurrent episodes, each surface runs `SECONDS` of calls, in turn, for
`ROUNDS` rounds; the medians are printed, with the server's CPU per call and ORS's rate over MCP's.

    PYTHONPATH=. uv run --frozen python bench/ors_throughput.py
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass

from bench._load import Plan, run_load
from bench._served import served
from bench.server_throughput import desk_workload, without_sniffio_import_storm

CONCURRENCY = (1, 16, 64)
SECONDS = 4.0
ROUNDS = 3
SURFACES = ("mcp", "ors")


@dataclass(frozen=True)
class Figures:
    rate: float
    p50: float
    p99: float
    cpu_us: float


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--seconds", type=float, default=SECONDS)
    options = parser.parse_args()
    without_sniffio_import_storm()
    workload = desk_workload()
    if workload is None:
        raise SystemExit("the GridSim desk does not import here")
    plans = {
        "mcp": Plan("mcp", workload.rows, workload.calls),
        "ors": Plan("ors", workload.rows, workload.calls, ors_name="gridsimdesk"),
    }
    print(
        f"served calls/s on the desk ({len(workload.calls)} calls an episode, cycled), {options.rounds} rounds"
    )
    with served("gridsim-desk", ors=True, max_episodes=4096) as (url, process):
        print(
            f"{'episodes':>8} {'surface':>7} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'server us/call':>15}"
        )
        for episodes in CONCURRENCY:
            runs: dict[str, list[Figures]] = {surface: [] for surface in SURFACES}
            for _ in range(options.rounds):
                for surface in SURFACES:
                    load = run_load(
                        url, plans[surface], episodes, seconds=options.seconds, server_pid=process.pid
                    )
                    runs[surface].append(Figures(load.rate, load.p50, load.p99, load.server_cpu_us))
            medians = {
                surface: Figures(
                    *(
                        statistics.median(getattr(run, name) for run in found)
                        for name in Figures.__dataclass_fields__
                    )
                )
                for surface, found in runs.items()
            }
            for surface in SURFACES:
                figures = medians[surface]
                print(
                    f"{episodes:8d} {surface:>7} {figures.rate:9.0f} {figures.p50:8.2f} {figures.p99:8.2f} "
                    f"{figures.cpu_us:15.0f}"
                )
            ratio = medians["ors"].rate / medians["mcp"].rate
            print(f"{'':8} {'ORS/MCP':>7} {ratio:9.2f}x")


if __name__ == "__main__":
    main()
