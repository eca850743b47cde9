"""Where a served call's time goes: the server process profiled with py-spy while 16 episodes call the desk.

For the control API (`AgentEnv.connect`'s way) and for MCP (`tools/call` in an MCP session), the desk serves 16
concurrent episodes, each on its own connection making its calls one after another (`submit_dam_offers` for each of
the day's 24 hours, then `withdraw_offers`; the clients are `bench/_load.py`'s light ones). First the server's CPU
per call is measured with no profiler attached; then py-spy samples the thread holding the GIL in the server process
(`--gil --nonblocking`), and `bench/_split.py` puts each sample in one part of the call. Each part's share of the
samples, times the CPU per call, is its cost per call.

With `--baseline REV`, the same is measured first for agent_env at git revision REV (its code served from a
`git archive` of it), so before and after come from one run on one machine. Beside them: the same calls in process
(`LocalSession`, CPU per call). Needs py-spy (the dev group has it) and the right to trace a child process; prints
what it measured and stops by itself in a few minutes.

    PYTHONPATH=. uv run --frozen python bench/server_profile.py --baseline 4055ec3
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent_env.envs import load_environment
from agent_env.session import LocalSession
from bench._load import Plan, run_load
from bench._served import baseline, served
from bench._split import PARTS, read_raw, split
from bench.server_throughput import desk_workload

EPISODES = 16
SECONDS = 12.0


def in_process_cpu_us(plan: Plan, environment: str, calls: int = 3000) -> float:
    """CPU microseconds per call of the same calls on a `LocalSession` in this process."""
    session = LocalSession(load_environment(environment)())
    session.reset(**plan.rows[0])
    for name, arguments in plan.calls:
        session.call_tool(name, arguments)
    started = time.process_time()
    for index in range(calls):
        name, arguments = plan.calls[index % len(plan.calls)]
        session.call_tool(name, arguments)
    return (time.process_time() - started) / calls * 1e6


def profile(url: str, process_id: int, plan: Plan, seconds: float) -> tuple[dict[str, int], int]:
    """py-spy's samples of the server while `plan` runs for `seconds`: counted by part, and in all."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "samples.txt"
        command = [_py_spy(), "record", "--gil", "--nonblocking", "--rate", "500", "--format", "raw"]
        command += ["--duration", str(int(seconds)), "--output", str(out), "--pid", str(process_id)]
        spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        run_load(url, plan, EPISODES, seconds=seconds + 2)
        _, errors = spy.communicate(timeout=60)
        if spy.returncode != 0 or not out.exists():
            raise RuntimeError(f"py-spy could not profile the server: {errors.decode()[-500:]}")
        counts = split(read_raw(out.read_text()))
    return dict(counts), sum(counts.values())


def _py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise SystemExit("py-spy is not installed: `make install` (the dev group) installs it")
    return found


def measure(
    label: str, source: Path | None, plans: dict[str, Plan]
) -> dict[str, tuple[float, float, dict[str, float]]]:
    """For each surface: (calls/s, server CPU us per call, each part's us per call)."""
    results = {}
    for surface, plan in plans.items():
        with served("gridsim-desk", source=source, max_episodes=4096, call_timeout=30) as (url, server):
            run_load(url, plan, EPISODES, seconds=2)  # warm: the day's bounds, the imports
            load = run_load(url, plan, EPISODES, seconds=SECONDS, server_pid=server.pid)
            cpu_us = load.server_cpu_us  # over the timed calls alone, not the opening of episodes
            counts, total = profile(url, server.pid, plan, SECONDS)
        parts = {part: counts.get(part, 0) / total * cpu_us for part in PARTS}
        results[surface] = (load.rate, cpu_us, parts)
        print(
            f"  {label:>8} {surface:>7}: {load.rate:,.0f} calls/s, server CPU {cpu_us:,.0f} us a call "
            f"({total:,} samples)",
            flush=True,
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a git revision to measure first, for before and after")
    options = parser.parse_args()
    desk = desk_workload()
    assert desk is not None, "the GridSim desk must import"
    plans = {
        "control": Plan("control", desk.rows, desk.calls),
        "mcp": Plan("mcp", [{"task_id": row["task_id"]} for row in desk.rows[:1]], desk.calls),
    }
    local = in_process_cpu_us(plans["control"], desk.environment)
    print(
        f"desk calls (submit_dam_offers x24 + withdraw_offers), {EPISODES} episodes; in process: {local:,.0f} us CPU a call"
    )
    runs = {}
    with baseline(options.baseline) as source:
        if source is not None:
            runs["before"] = measure("before", source, plans)
    runs["after"] = measure("after", None, plans)
    for surface in plans:
        print(f"\n{surface}: server CPU per call by part, us (share)")
        header = "".join(f"{label:>18}" for label in runs)
        print(f"  {'part':<56}{header}")
        for part in PARTS:
            cells = ""
            for label in runs:
                _, cpu_us, parts = runs[label][surface]
                cells += f"{parts[part]:>10,.0f} ({parts[part] / cpu_us:>4.0%})"
            print(f"  {part:<56}{cells}")
        totals = "".join(
            f"{runs[label][surface][1]:>10,.0f} ({runs[label][surface][1] / local:>4.1f}x)" for label in runs
        )
        print(f"  {'all (x in process)':<56}{totals}")
        rates = "".join(f"{runs[label][surface][0]:>18,.0f}" for label in runs)
        print(f"  {'calls/s':<56}{rates}")


if __name__ == "__main__":
    main()
