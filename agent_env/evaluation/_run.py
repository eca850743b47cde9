"""A whole evaluation: check the endpoint, plan the episodes, play them concurrently in every arm, log each as it
ends, and sum the run up."""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any

from agent_env._agent_env import AgentEnv
from agent_env._splits import split_to_play
from agent_env.evaluation._arms import FULL, Arm, arms
from agent_env.evaluation._episode import DEFAULT_MAX_TURNS, USER_MAX_TURNS, Episode, Player, Task
from agent_env.evaluation._given_rows import given_rows
from agent_env.evaluation._records import RunFile
from agent_env.evaluation._stats import ArmSummary, Comparison, compare, summarize
from agent_env.llm import ChatClient, Endpoint, Sampling
from agent_env.schema import fingerprint
from agent_env.session import Provider, evaluation_split
from agent_env.users import USER_CHANNEL

DEFAULT_OUT = "eval.jsonl"
DEFAULT_SPLIT = "test"
"""The split an evaluation plays when it is named none: the held-out one."""
OnEpisode = Callable[[Episode, int, int], None]
"""Called as each episode ends, with how many of the run's episodes have ended and how many it plays."""


@dataclass(frozen=True)
class Report:
    """What a run found.

    Attributes:
        environment: The environment's name.
        model: The model asked.
        split: The dataset split played.
        arms: The arms, as (name, what they show).
        summaries: Each arm's numbers, over every episode the run's file holds.
        comparison: `full` against `lossy`, when the run compared them.
        unrenderable: The tools TRL cannot render as they are, each with what it raised: a plain TRL environment
            with one could not start, so the `lossy` arm sends its nearest form (`agent_env.training.plain`).
        played: Episodes this invocation played.
        skipped: Episodes it found finished in the file (`--resume`).
        episodes_per_minute: This invocation's pace (None when it played none).
        notes: What to know about the endpoint or the replies (a model not listed, a server that ignores tools).
        out: The run's JSONL file.
        episodes: Every episode the file holds (its last record of each), without transcripts: those are in the
            file.
    """

    environment: str
    model: str
    split: str
    arms: list[tuple[str, str]]
    summaries: list[ArmSummary]
    comparison: Comparison | None
    played: int
    skipped: int
    episodes_per_minute: float | None
    notes: list[str] = field(default_factory=list)
    unrenderable: dict[str, str] = field(default_factory=dict)
    out: str = DEFAULT_OUT
    episodes: list[Episode] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON values (NaN as null), without the episodes."""
        return _finite(
            {item.name: getattr(self, item.name) for item in fields(self) if item.name != "episodes"}
        )


def evaluate(
    env: AgentEnv,
    endpoint: Endpoint | None = None,
    *,
    split: str | None = None,
    episodes: int | None = None,
    trials: int = 1,
    concurrency: int = 8,
    max_turns: int | None = None,
    sampling: Sampling | None = None,
    compare_with: str | None = None,
    template: str | None = None,
    out: str | os.PathLike[str] = DEFAULT_OUT,
    resume: bool = False,
    on_episode: OnEpisode | None = None,
    rows: Sequence[Mapping[str, Any]] | None = None,
) -> Report:
    """Play `env`'s episodes against an OpenAI-compatible endpoint and sum them up (see `aevaluate`)."""
    return asyncio.run(
        aevaluate(
            env,
            endpoint,
            split=split,
            episodes=episodes,
            trials=trials,
            concurrency=concurrency,
            max_turns=max_turns,
            sampling=sampling,
            compare_with=compare_with,
            template=template,
            out=out,
            resume=resume,
            on_episode=on_episode,
            rows=rows,
        )
    )


async def aevaluate(
    env: AgentEnv,
    endpoint: Endpoint | None = None,
    *,
    split: str | None = None,
    episodes: int | None = None,
    trials: int = 1,
    concurrency: int = 8,
    max_turns: int | None = None,
    sampling: Sampling | None = None,
    compare_with: str | None = None,
    template: str | None = None,
    out: str | os.PathLike[str] = DEFAULT_OUT,
    resume: bool = False,
    on_episode: OnEpisode | None = None,
    rows: Sequence[Mapping[str, Any]] | None = None,
) -> Report:
    """Play `env`'s episodes against an OpenAI-compatible endpoint, log each to `out` as it ends, and sum them up.

    Args:
        env: The environment (any provider: in process, served, Ray, OpenEnv, MCP-backed).
        endpoint: The endpoint; its `/models` is checked before any episode starts.
        split: The dataset split whose rows start the episodes; None for `test`, or the environment's first split
            when it has no `test` (said on stderr; the rule of every default split: `agent_env._splits`).
        episodes: How many to play: the split's first rows, cycling with a new seed each time round; all rows
            when None (and required for an environment without a dataset).
        trials: How many times to play each of them (each play with its own seed); the summary gives pass^k,
            τ²-bench's leaderboard metric, for k up to it (up to the fewest scored plays of a task, and says so,
            when episodes that ended in an error leave a task fewer).
        concurrency: Episodes in flight at once.
        max_turns: The most replies an episode gets; None for the default: `USER_MAX_TURNS` (200, τ²-bench's
            `max_steps`) for an environment with a simulated user, whose own step limit then ends its episodes (a
            reply takes at least two steps), else `DEFAULT_MAX_TURNS` (10). The run's file records the number used.
        sampling: Sampling settings (seeds: episode i is asked with `seed + i`, in every arm).
        compare_with: "lossy" plays every episode a second time with the tools as a plain TRL environment shows
            them (TRL's own rendering of the environment's tool methods).
        template: A chat template whose family's lowering the full arm sends, as `env.factory` builds it.
        out: The JSONL file: a settings line, then one line per finished episode.
        resume: Continue the run `out` holds, skipping the episodes it finished.
        on_episode: Called as each episode ends.
        rows: The rows to start the episodes from instead of the split's (`agent-env eval --rows FILE`): how an
            environment without a dataset, a bare MCP server, is evaluated. Each is checked as a `reset` row first.

    Raises:
        EndpointError: The endpoint cannot be reached, refuses the key, or leaves the model unnamed.
        RunFileError: `out` holds a run (without `resume`), or another run's settings.
        LookupError: A split, comparison or template that does not exist.
        ValueError: `episodes`, `concurrency` or `max_turns` below 1.
    """
    for name, value in (
        ("episodes", episodes),
        ("trials", trials),
        ("concurrency", concurrency),
        ("max_turns", max_turns),
    ):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1; got {value}")
    endpoint, sampling = endpoint or Endpoint(), sampling or Sampling()
    client = ChatClient(endpoint)
    try:
        model, notes = await client.check()
        # A model the server named is text it wrote, scrubbed like any (the key in it, however absurd, never shows);
        # one the user named is the user's own. Requests ask for the model as it is.
        shown_model = model if endpoint.model is not None else client.scrub(model)
        chosen = arms(env, compare=compare_with, template=template)
        published = env.tools()
        if max_turns is None:
            max_turns = default_max_turns(published)
        if rows is None:
            usual = tuple(dict.fromkeys(s for s in (evaluation_split(env.provider), DEFAULT_SPLIT) if s))
            split = split_to_play(env.provider.dataset_rows, split, usual, env.provider.name)
        split = split or DEFAULT_SPLIT
        tasks = plan(env.provider, split, episodes, given_rows(env.provider, rows), trials)
        settings = {
            "split": split if rows is None else None,
            "rows": None if rows is None else {"count": len(rows), "fingerprint": fingerprint(list(rows))},
            "trials": trials,
            "max_turns": max_turns,
            "sampling": sampling.settings(),
            "template": template,
        }
        header = run_header(env, published, shown_model, endpoint, chosen, settings)
        log = RunFile(out, header, resume=resume)
        try:
            todo = [(task, arm) for task in tasks for arm in chosen if not log.finished(arm.name, task.id)]
            schemas = {tool["name"]: tool["inputSchema"] for tool in published}
            with ThreadPoolExecutor(
                max_workers=min(concurrency, 64), thread_name_prefix="agent-env-eval"
            ) as pool:
                player = Player(env.provider, client, model, sampling, max_turns, schemas, pool)
                started = time.perf_counter()
                await play_all(todo, concurrency, player, log, on_episode)
                elapsed = time.perf_counter() - started
            played = list(log.episodes.values())
            summaries = [summarize(played, arm.name) for arm in chosen]
            report = Report(
                environment=env.provider.name,
                model=shown_model,
                split=split if rows is None else "given rows",
                arms=[(arm.name, arm.shows) for arm in chosen],
                summaries=summaries,
                comparison=compare(played, FULL, chosen[1].name) if len(chosen) > 1 else None,
                played=len(todo),
                skipped=len(tasks) * len(chosen) - len(todo),
                episodes_per_minute=len(todo) / elapsed * 60 if todo and elapsed > 0 else None,
                notes=[
                    *notes,
                    *reply_notes(summaries),
                    *pass_notes(summaries, trials),
                    *breakdown_notes(played),
                ],
                unrenderable={name: why for arm in chosen for name, why in arm.unrenderable.items()},
                out=str(out),
                episodes=played,
            )
            log.summarize(report.to_json())
        finally:
            log.close()
    finally:
        await client.aclose()
    return report


def default_max_turns(published: Sequence[Mapping[str, Any]]) -> int:
    """The most replies an episode of an environment publishing `published` gets unless told: `USER_MAX_TURNS`
    under a simulated user's protocol (it publishes `message_user`), where real episodes take dozens of replies and
    reaching the limit scores 0; else `DEFAULT_MAX_TURNS`."""
    talks_to_user = any(tool.get("name") == USER_CHANNEL for tool in published)
    return USER_MAX_TURNS if talks_to_user else DEFAULT_MAX_TURNS


def run_header(
    env: AgentEnv,
    published: list[dict[str, Any]],
    model: str,
    endpoint: Endpoint,
    chosen: list[Arm],
    settings: dict[str, Any],
) -> dict[str, Any]:
    """The run's settings, as the first line of its file holds them (never the API key: the variable's name)."""
    return {
        "environment": env.provider.name,
        "tool_set": fingerprint(published),
        "model": model,
        "base_url": endpoint.base_url,
        **settings,
        "arms": [arm.settings() for arm in chosen],
        "api_key_env": endpoint.api_key_env,
    }


async def play_all(
    todo: list[tuple[Task, Arm]], concurrency: int, player: Player, log: RunFile, on_episode: OnEpisode | None
) -> None:
    """Play `todo` with at most `concurrency` episodes in flight, in order, logging each as it ends."""
    pending = iter(todo)
    done = 0

    async def worker() -> None:
        nonlocal done
        for task, arm in pending:  # one iterator shared by the workers: each takes the next episode
            episode = await player.play(task, arm)
            log.append(episode)
            done += 1
            if on_episode is not None:
                on_episode(episode, done, len(todo))

    # A task group, not gather: when one worker fails (the run file cannot be written), the others are cancelled
    # and close their sessions before the run's executor goes away.
    try:
        async with asyncio.TaskGroup() as workers:
            for _ in range(min(concurrency, len(todo))):
                workers.create_task(worker())
    except (
        BaseExceptionGroup
    ) as failed:  # the first worker's error, as itself (an OSError the command reports)
        raise failed.exceptions[0] from None


def plan(
    provider: Provider,
    split: str,
    episodes: int | None,
    rows: list[dict[str, Any]] | None = None,
    trials: int = 1,
) -> list[Task]:
    """The run's episodes: the given `rows`, or the split's, in order (cycling past the last, each round a new
    `#k` id), or, for an environment without a dataset, `episodes` episodes from an empty row; the whole list
    `trials` times, each play of a row after its first with the next `#k` id (so pass^k counts a row's plays by
    their id before `#`)."""
    if rows is not None:
        split = "rows"  # the ids of given rows without one of their own: rows/0, rows/1, ...
    else:
        try:
            rows = provider.dataset_rows(split)
        except NotImplementedError:
            rows = []
    if not rows:
        if episodes is None:
            raise LookupError(
                f"{provider.name} has no dataset rows for split {split!r}: say how many episodes to play from an "
                "empty row with --episodes"
            )
        return [Task(f"episode-{index}", index, {}) for index in range(episodes * trials)]
    ids = [row_id(row, split, index) for index, row in enumerate(rows)]
    if len(set(ids)) < len(ids):  # rows that share a task id are told apart by their place
        ids = [f"{split}/{index}" for index in range(len(rows))]
    count = len(rows) if episodes is None else episodes
    played: Counter[int] = Counter()
    tasks = []
    for index in range(count * trials):
        slot = index % count % len(rows)
        tasks.append(Task(ids[slot] + (f"#{played[slot]}" if played[slot] else ""), index, rows[slot]))
        played[slot] += 1
    return tasks


def row_id(row: dict[str, Any], split: str, index: int) -> str:
    """A row's id: its `task_id` or `id` column, else its place in the split."""
    for key in ("task_id", "id"):
        value = row.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
    return f"{split}/{index}"


def reply_notes(summaries: list[ArmSummary]) -> list[str]:
    """What the replies say about the server: none carried a parsed tool call, but their text held calls."""
    calls = sum(summary.calls for summary in summaries)
    unparsed = sum(summary.faults.get("unparsed_call", 0) for summary in summaries)
    if calls == 0 and unparsed:
        whose = "episode's" if unparsed == 1 else "episodes'"
        return [
            f"no reply carried a tool call the server parsed, and {unparsed} {whose} replies wrote calls as text: "
            "the server ignores tools or cannot parse this model's calls (vLLM: --enable-auto-tool-choice "
            "--tool-call-parser NAME; SGLang: --tool-call-parser NAME; llama.cpp: --jinja); docs/eval.md, "
            "'Pointing it at a server', says how"
        ]
    return []


def pass_notes(summaries: list[ArmSummary], trials: int) -> list[str]:
    """Where pass^k stops below the trials asked: a task kept fewer scored plays (the others ended in an error), and
    τ²-bench takes k only up to the fewest plays any task has, averaging each k over every task."""
    found = []
    for summary in summaries:
        fewest = max(summary.pass_k, default=0)
        if 0 < fewest < trials:
            where = f" in arm {summary.arm}" if len(summaries) > 1 else ""
            found.append(
                f"pass^k stops at k={fewest}, below --trials {trials}{where}: the task played least has only "
                f"{fewest} scored {'play' if fewest == 1 else 'plays'} (its others ended in an error, which "
                "τ²-bench leaves out too), and τ²-bench takes k only up to the fewest plays a task has, averaging "
                "each pass^k over every task"
            )
    return found


def breakdown_notes(episodes: list[Episode]) -> list[str]:
    """What the environment said of its rewards, once each (an episode's own ending is in its record): every
    `note` and `..._note` of the breakdowns, such as a reward that is not the official metric, a user that is not the
    benchmark's, the reward an environment trains on, or which prompts its agent and user were told."""
    said: Counter[str] = Counter()
    for episode in episodes:
        if episode.ended_by in ("max_turns", "agent_error"):
            continue
        for key, note in (episode.breakdown or {}).items():
            if (key == "note" or key.endswith("_note")) and isinstance(note, str):
                said[note] += 1
    return [f"{note} ({count} of {len(episodes)} episodes)" for note, count in said.items()]


def _finite(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return _finite(asdict(value))
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value
