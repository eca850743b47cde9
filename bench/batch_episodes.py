"""A whole GRPO batch on one served environment: 1,024 live episodes at once through `RemoteSession`, as TRL's rollouts
drive them.

`agent-env serve` (as `bench/_served.py` runs it) serves the environment; 4 client processes each share one
`AgentEnv.connect(url)` provider across their rollout threads, one thread per episode, as a trainer's processes do.
Every thread waits for the others, then plays one realistic episode: `reset` from a dataset row, 6 tool calls (the
desk: its brief, the battery, a forecast, an offer for one hour, the book, a check; the toy: offers, the battery, a
note from its async tool) and `reward`. Every answer is compared with what a `LocalSession` in the client process
answers to the same row and calls: an answer that differs is wrong, an episode that raised is lost.

Printed: episodes per second (all of them, start to last reward), the time until every episode had started (its
`reset` answered), call latency p50/p99 (tool calls; resets apart), the server's RSS growth per live episode (its
peak while they are all live, over its RSS before), and lost and wrong. With `--servers N` (N > 1), N servers run
behind one address (nginx, hashing each session's `X-Agent-Env-Route` header; see docs/scaling.md) and the
figures are for all of them. Loopback only; stops by itself.

    PYTHONPATH=. uv run --frozen python bench/batch_episodes.py --episodes 1024
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psutil

from agent_env import AgentEnv
from agent_env.envs import load_environment
from agent_env.errors import AgentEnvError
from agent_env.server.errors import RemoteError
from agent_env.server.limits import DEFAULT_MAX_EPISODES
from agent_env.session import LocalSession, Session
from bench._served import served, served_behind_one_address

CLIENT_PROCESSES = 4
MIB = 1024 * 1024

Step = tuple[str, Any]
"""A tool call (its name and arguments)."""


@dataclass(frozen=True)
class Episode:
    """What episode `index` plays: its row and its calls."""

    row: dict[str, Any]
    calls: list[Step]


def toy_episode(index: int) -> Episode:
    curve = {"hours": [1 + index % 24], "points": [[10.0, 20.0], [50.0, 40.0]]}
    calls: list[Step] = [("submit_offers", {"curves": [curve] * (1 + index % 4)})] * 3
    calls += [
        ("battery_status", {}),
        ("write_note", {"text": f"episode {index}"}),
        ("submit_offers", {"curves": []}),
    ]
    return Episode({"task": f"batch-{index}"}, calls)


def desk_episode(index: int, rows: list[dict[str, Any]]) -> Episode:
    hour = f"HE{1 + index % 24:02d}"
    calls: list[Step] = [
        ("desk_brief", {}),
        ("battery_status", {}),
        ("dam_price_forecast", {"hours": hour}),
        (
            "submit_dam_offers",
            {"curves": [{"hours": hour, "points": [[-50, 20], [50, 40]]}], "as_offers": []},
        ),
        ("list_offers", {}),
        ("check_offers", {"curves": [{"hours": "HE01-HE02", "points": [[0, 30]]}]}),
    ]
    return Episode({"task_id": rows[index % len(rows)]["task_id"]}, calls)


ENVIRONMENTS = {"toy": "testbed.toy:ToyDesk", "desk": "gridsim-desk"}


def episodes_of(kind: str, count: int) -> list[Episode]:
    if kind == "toy":
        return [toy_episode(index) for index in range(count)]
    rows = load_environment(ENVIRONMENTS["desk"])().dataset_rows("train")
    return [desk_episode(index, rows) for index in range(count)]


def play(session: Session, episode: Episode, timed: list[float] | None = None) -> list[Any]:
    """Every answer of one episode: the observation, each call's text (or error), the reward."""
    answers: list[Any] = [session.reset(**episode.row)]
    for name, arguments in episode.calls:
        started = time.perf_counter()
        try:
            answers.append(session.call_tool(name, arguments))
        except AgentEnvError as error:  # a tool's error is an answer too (and must be the same one)
            if isinstance(error, RemoteError):  # the server's or the network's: the episode is lost
                raise
            answers.append(f"{type(error).__name__}: {error}")
        if timed is not None:
            timed.append(time.perf_counter() - started)
    answers.append(session.reward())
    return answers


@dataclass
class Outcome:
    """What one client process saw."""

    opened_at: list[float] = field(default_factory=list)
    finished_at: list[float] = field(default_factory=list)
    calls: list[float] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    started_at: float = 0.0


def client(url: str, kind: str, indexes: list[int], count: int, ready: Any) -> Outcome:
    """One client process: one provider, one thread per episode; once every client is `ready` (a barrier), they all
    start at once."""
    episodes = episodes_of(kind, count)
    environment = load_environment(ENVIRONMENTS[kind])
    expected = {index: play(LocalSession(environment()), episodes[index]) for index in indexes}
    provider = AgentEnv.connect(url, timeout=120).provider
    outcome, lock = Outcome(), threading.Lock()
    ready.wait()
    start_at = time.time() + 0.5  # time for every thread to be waiting for it

    def rollout(index: int) -> None:
        session, timed = provider.open(), []
        time.sleep(max(0.0, start_at - time.time()))
        try:
            answers = play(_Marked(session, outcome, lock), episodes[index], timed)
            if answers != expected[index]:
                first = next(
                    i for i, (a, b) in enumerate(zip(answers, expected[index], strict=True)) if a != b
                )
                with lock:
                    outcome.wrong.append(f"episode {index}, answer {first}: {str(answers[first])[:200]!r}")
        except Exception as error:
            with lock:
                outcome.lost.append(f"episode {index}: {type(error).__name__}: {str(error)[:300]}")
        finally:
            with lock:
                outcome.finished_at.append(time.time())
                outcome.calls += timed
            session.close()

    threads = [threading.Thread(target=rollout, args=(index,)) for index in indexes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outcome.started_at = start_at
    return outcome


class _Marked(Session):
    """A session that records when its first `reset` was answered."""

    def __init__(self, session: Session, outcome: Outcome, lock: threading.Lock) -> None:
        self.session, self.outcome, self.lock = session, outcome, lock

    def tools(self) -> list[dict[str, Any]]:
        return self.session.tools()

    def reset(self, **row: Any) -> str | None:
        observation = self.session.reset(**row)
        with self.lock:
            self.outcome.opened_at.append(time.time())
        return observation

    def call_tool(self, name: str, arguments: Any) -> str:
        return self.session.call_tool(name, arguments)

    def reward(self) -> float:
        return self.session.reward()

    def close(self) -> None:
        self.session.close()


@dataclass(frozen=True)
class Batch:
    """A batch's figures."""

    episodes: int
    seconds: float
    open_seconds: float
    p50_ms: float
    p99_ms: float
    rss_per_episode_kib: float
    lost: list[str]
    wrong: list[str]

    @property
    def rate(self) -> float:
        return self.episodes / self.seconds


def run_batch(
    url: str, kind: str, count: int, servers: list[psutil.Process], processes: int = CLIENT_PROCESSES
) -> Batch:
    """Play `count` episodes at once from `processes` client processes against `url`, whose server processes are
    `servers` (their RSS is sampled while the batch runs)."""
    shares = [list(range(index, count, processes)) for index in range(processes)]
    idle = sum(server.memory_info().rss for server in servers)
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(processes) as pool:
        ready = manager.Barrier(processes)
        pending = [pool.apply_async(client, (url, kind, share, count, ready)) for share in shares]
        with _sampling(lambda: sum(server.memory_info().rss for server in servers)) as peaks:
            outcomes = [result.get(timeout=3600) for result in pending]
        peak = max(peaks, default=idle)
    start_at = min(outcome.started_at for outcome in outcomes)
    calls = sorted(latency for outcome in outcomes for latency in outcome.calls)
    cuts = statistics.quantiles(calls, n=100) if len(calls) > 1 else [0.0] * 99
    opened = [at for outcome in outcomes for at in outcome.opened_at]
    finished = [at for outcome in outcomes for at in outcome.finished_at]
    return Batch(
        episodes=count,
        seconds=max(finished) - start_at,
        open_seconds=(max(opened) - start_at) if opened else float("nan"),
        p50_ms=cuts[49] * 1e3,
        p99_ms=cuts[98] * 1e3,
        rss_per_episode_kib=(peak - idle) / count / 1024,
        lost=[line for outcome in outcomes for line in outcome.lost],
        wrong=[line for outcome in outcomes for line in outcome.wrong],
    )


class _sampling:
    """Samples `read()` every 50 ms in a thread while the block runs; the samples are the block's value."""

    def __init__(self, read: Callable[[], int]) -> None:
        self.read, self.samples, self.done = read, [], threading.Event()

    def __enter__(self) -> list[int]:
        def sample() -> None:
            while not self.done.wait(0.05):
                try:
                    self.samples.append(self.read())
                except psutil.Error:
                    return

        self.thread = threading.Thread(target=sample, daemon=True)
        self.thread.start()
        return self.samples

    def __exit__(self, *exception: object) -> None:
        self.done.set()
        self.thread.join()


def report(label: str, batch: Batch) -> None:
    print(
        f"  {label}: {batch.episodes:,} episodes in {batch.seconds:.1f} s = {batch.rate:,.1f} episodes/s; all "
        f"started within {batch.open_seconds:.1f} s; calls p50 {batch.p50_ms:.1f} ms, p99 {batch.p99_ms:.1f} ms; "
        f"server RSS {batch.rss_per_episode_kib:,.1f} KiB per live episode; lost {len(batch.lost)}, wrong "
        f"{len(batch.wrong)}"
    )
    for line in (batch.lost + batch.wrong)[:5]:
        print(f"    {line}")


@contextlib.contextmanager
def serving(kind: str, servers: int, max_episodes: int) -> Iterator[tuple[str, list[psutil.Process]]]:
    """`servers` servers of `kind` behind one address (one alone, or several behind nginx)."""
    settings = {"max_episodes": max_episodes, "call_timeout": 60}
    if servers == 1:
        with served(ENVIRONMENTS[kind], **settings) as (url, process):
            yield url, [process]
    else:
        with served_behind_one_address(ENVIRONMENTS[kind], servers, **settings) as (url, processes):
            yield url, processes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1024)
    parser.add_argument("--servers", type=int, default=1)
    parser.add_argument("--kinds", default="toy,desk")
    options = parser.parse_args()
    print(
        f"{options.episodes:,} episodes at once on {options.servers} server process(es), {CLIENT_PROCESSES} client "
        f"processes sharing one provider each; {psutil.cpu_count()} CPUs shared by all"
    )
    for kind in options.kinds.split(","):
        per_server = -(-options.episodes // options.servers)
        with serving(kind, options.servers, max(DEFAULT_MAX_EPISODES, 2 * per_server)) as (url, processes):
            report(f"{kind} ({ENVIRONMENTS[kind]})", run_batch(url, kind, options.episodes, processes))


if __name__ == "__main__":
    main()
