"""What a τ²-bench episode costs: reset latency and memory per live episode over the shared base, beside a naive
reload (parse the domain's databases into their models for every episode, as a fresh tau2-bench environment does:
db.json; telecom's db.toml and the user's user_db.toml).

For each domain (airline: 7 MB of JSON; retail; telecom, whose episodes also break the user's phone as they start),
in one process and one run:
- reset p50/p99 over every task of the base split, cycled (each reset builds the task's initial state);
- memory per live episode: N episodes held open at once, each reset and then played through its task's reference
  actions (the writes a good agent makes), measured with tracemalloc as the growth over the shared base, divided
  by N; and the same for N naive episodes, each holding its own parsed copy of the database;
- the naive reload's p50, and the ratio;
- what reading tasks.json costs once per process: the time and the memory kept (each task validated, kept as its JSON
  until asked for: `tasks.TaskFile`), beside every task parsed into objects up front.
- what running every call as one transaction costs (a failed call changes nothing: `Tau2Environment.transaction`):
  every task's reference actions played through a session, the median time per call, beside the same calls on the
  same class with the transaction's journal left out (its own baseline, in the same run).
Targets: reset p50 <= 5 ms, <= 1 MiB per live episode. Needs the domain's data (AGENT_ENV_TAU2_DATA or the cache).

Run: PYTHONPATH=. uv run python bench/tau2_episodes.py [--domains airline retail telecom] [--live 200]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import statistics
import time
import tracemalloc
from typing import Any

from pydantic import TypeAdapter

from agent_env.envs import load_environment
from agent_env.envs.tau2.tasks import Task, database_reader, read_tasks
from agent_env.session import LocalSession

TARGET_RESET_MS, TARGET_MIB = 5.0, 1.0
MIB = 1 << 20


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def reset_times(session: LocalSession, task_ids: list[str], resets: int) -> list[float]:
    times = []
    for task_id in itertools.islice(itertools.cycle(task_ids), resets):
        start = time.perf_counter()
        session.reset(task_id=task_id)
        times.append((time.perf_counter() - start) * 1000)
    return times


def play_reference(session: LocalSession) -> None:
    """The task's reference actions, as an agent that solves it would call them (refusals included), and the user's
    own as its user would make them."""
    env = session.environment
    task = env.task
    for action in (task.evaluation_criteria.actions or []) if task.evaluation_criteria else []:
        with contextlib.suppress(Exception):
            if action.requestor == "user":
                env.run_user_tool(action.name, action.arguments)
            else:
                session.call_tool(action.name, action.arguments)


def live_memory(environment: type, task_ids: list[str], live: int) -> float:
    """Bytes per live episode beyond the shared base: `live` episodes reset and played, all held at once."""
    environment()  # the base is loaded (and shared) before measuring
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    held = []
    for task_id in itertools.islice(itertools.cycle(task_ids), live):
        session = LocalSession(environment())
        session.reset(task_id=task_id)
        play_reference(session)
        held.append(session)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del held
    return (after - before) / live


def naive(environment: type, live: int) -> tuple[list[float], float]:
    """A reload per episode: parse the domain's databases into their models; its times (ms) and bytes per held
    copy."""
    probe = environment()
    files = probe.files
    parts = [(probe.data.folder / files.database, database_reader(files.database, environment.base_model))]
    if environment.user_base_model is not None:
        read = database_reader(files.user_database, environment.user_base_model)
        parts.append((probe.data.folder / files.user_database, read))

    def reload() -> list[Any]:
        return [read(path.read_bytes()) for path, read in parts]

    times = []
    for _ in range(8):
        start = time.perf_counter()
        reload()
        times.append((time.perf_counter() - start) * 1000)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    held = [reload() for _ in range(max(2, live // 50))]
    per_copy = (tracemalloc.get_traced_memory()[0] - before) / len(held)
    tracemalloc.stop()
    del held
    return times, per_copy


def task_file(folder: Any) -> dict[str, float]:
    """Reading tasks.json: seconds and bytes kept, as `read_tasks` keeps it and as objects parsed up front."""
    raw = (folder / "tasks.json").read_bytes()
    eager = TypeAdapter(list[Task])
    found: dict[str, float] = {}
    for name, read in (("lazy", read_tasks), ("eager", eager.validate_json)):
        start = time.perf_counter()
        read(raw)
        found[f"{name}_s"] = time.perf_counter() - start
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        kept = read(raw)
        gc.collect()
        found[f"{name}_bytes"] = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        found["tasks"] = len(kept)
        del kept
    return found


def per_call(environment: type, task_ids: list[str], rounds: int = 5) -> float:
    """Median seconds per call of the reference actions, every task played `rounds` times."""
    session = LocalSession(environment())
    times = []
    for _ in range(rounds):
        for task_id in task_ids:
            session.reset(task_id=task_id)
            task = session.environment.task
            actions = (task.evaluation_criteria.actions or []) if task.evaluation_criteria else []
            for action in actions:
                start = time.perf_counter()
                with contextlib.suppress(Exception):
                    session.call_tool(action.name, action.arguments)
                times.append(time.perf_counter() - start)
    return statistics.median(times)


def untransacted(environment: type) -> type:
    """`environment` with each call run as it is, no journal kept (the baseline of what transactions cost); the two
    sides still linked after it, as telecom's are."""

    def transaction(self: Any, run: Any) -> Any:
        result = run()
        self.sync()
        return result

    return type(f"Bare{environment.__name__}", (environment,), {"transaction": transaction})


def measure(domain: str, live: int, resets: int) -> dict[str, Any]:
    environment = load_environment(f"tau2-{domain}")
    start = time.perf_counter()
    first = environment()
    load_s = time.perf_counter() - start
    task_ids = [task.id for task in first.data.split("base")]
    session = LocalSession(first)
    reset_times(session, task_ids, len(task_ids))  # warm: each task's initial state and reference seen once
    times = reset_times(session, task_ids, resets)
    per_episode = live_memory(environment, task_ids, live)
    naive_times, naive_bytes = naive(environment, live)
    tasks = task_file(first.data.folder)
    bare = untransacted(environment)
    per_call(environment, task_ids, 1), per_call(bare, task_ids, 1)  # warm
    call, bare_call = per_call(environment, task_ids), per_call(bare, task_ids)
    return {
        "tasks": tasks,
        "call_us": call * 1e6,
        "bare_call_us": bare_call * 1e6,
        "domain": domain,
        "load_s": load_s,
        "reset_p50": statistics.median(times),
        "reset_p99": percentile(times, 0.99),
        "per_episode": per_episode,
        "naive_p50": statistics.median(naive_times),
        "naive_bytes": naive_bytes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", nargs="+", default=["airline", "retail", "telecom"])
    parser.add_argument(
        "--live", type=int, default=200, help="episodes held open at once for the memory figure"
    )
    parser.add_argument("--resets", type=int, default=2000)
    args = parser.parse_args()
    for domain in args.domains:
        found = measure(domain, args.live, args.resets)
        reset_ok = (
            "ok" if found["reset_p50"] <= TARGET_RESET_MS else f"ABOVE the target of {TARGET_RESET_MS} ms"
        )
        memory_ok = (
            "ok" if found["per_episode"] <= TARGET_MIB * MIB else f"ABOVE the target of {TARGET_MIB} MiB"
        )
        print(
            f"== tau2-{domain}: base loaded once in {found['load_s']:.2f} s (parsed, shared by every episode)"
        )
        print(
            f"reset: p50 {found['reset_p50']:.3f} ms, p99 {found['reset_p99']:.3f} ms over {args.resets} resets "
            f"({reset_ok}); a naive reload: p50 {found['naive_p50']:.1f} ms, "
            f"{found['naive_p50'] / found['reset_p50']:,.0f}x slower"
        )
        print(
            f"a reference call through a session: p50 {found['call_us']:.1f} us as one transaction, "
            f"{found['bare_call_us']:.1f} us without its journal ({found['call_us'] / found['bare_call_us']:.2f}x)"
        )
        print(
            f"memory per live episode (reset and its reference actions played, {args.live} held at once): "
            f"{found['per_episode'] / 1024:.1f} KiB ({memory_ok}); a naive reload holds "
            f"{found['naive_bytes'] / MIB:.1f} MiB each, {found['naive_bytes'] / max(found['per_episode'], 1):,.0f}x"
        )
        tasks = found["tasks"]
        print(
            f"tasks.json ({tasks['tasks']:,.0f} tasks): read in {tasks['lazy_s']:.2f} s, "
            f"{tasks['lazy_bytes'] / MIB:.1f} MiB kept (each validated, kept as its JSON until asked for); "
            f"as objects up front: {tasks['eager_s']:.2f} s, {tasks['eager_bytes'] / MIB:.1f} MiB"
        )


if __name__ == "__main__":
    main()
