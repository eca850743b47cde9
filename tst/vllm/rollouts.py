"""What the vLLM tier observes of a TRL run, without changing it: the environments a factory made (in whichever process
made them), the rollouts the trainer took, and a replay of a rollout's calls through a fresh `LocalSession`.

Not a test module: AsyncGRPO's rollout worker, a child process, imports `CountedFactory` from here to unpickle it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_env import AgentEnv
from agent_env.errors import AgentEnvError
from agent_env.training._tools import readable


def brevity(completion_ids: list[list[int]], **kwargs: Any) -> list[float]:
    """A reward function of the user's own beside the environment's: shorter is better. Rollouts of different
    lengths differ in reward, so every step moves the weights (a group whose rewards are all equal has no gradient),
    which the tests need to show that vLLM received them. Module-level: AsyncGRPO pickles it into its worker."""
    return [-len(ids) / 1000 for ids in completion_ids]


class CountedFactory:
    """Calls `factory` and writes a line to `log` for each environment it makes: the process, the instance, and the
    type of what each tool name holds on it (what TRL calls). Picklable whenever `factory` is."""

    def __init__(self, factory: Callable[[], Any], log: Path) -> None:
        self.factory = factory
        self.log = log

    def __call__(self) -> Any:
        environment = self.factory()
        names = [name for name in vars(type(environment)) if not name.startswith("_")]
        tools = {name: type(getattr(environment, name)).__name__ for name in names if name not in ("reset",)}
        line = {"pid": os.getpid(), "instance": id(environment), "tools": tools}
        with self.log.open("a") as file:
            file.write(json.dumps(line) + "\n")
        return environment

    def made(self) -> list[dict[str, Any]]:
        """One entry per environment made so far, in order."""
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


class RecordingQueue:
    """Stands where the trainer reads its rollout queue, and keeps every sample the trainer takes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.taken: list[Any] = []

    def get(self, *args: Any, **kwargs: Any) -> Any:
        sample = self.inner.get(*args, **kwargs)
        self.taken.append(sample)
        return sample

    def qsize(self) -> int:
        return int(self.inner.qsize())


def episodes(samples: list[Any]) -> list[Any]:
    """One sample per rollout (a rollout that forked into several training rows gives several samples)."""
    seen, kept = set(), []
    for sample in samples:
        key = (sample.group_id, json.dumps(sample.completion, sort_keys=True, default=str))
        if key not in seen:
            seen.add(key)
            kept.append(sample)
    return kept


@dataclass(frozen=True)
class Call:
    """One call TRL ran, and the text the model read back."""

    name: str
    arguments: dict[str, Any]
    result: str


def calls_run(completion: list[Mapping[str, Any]]) -> list[Call]:
    """The calls of a rollout's completion that TRL ran (each followed by its tool message), in order; the calls of
    a last turn cut off by `max_tool_calling_iterations` were not run."""
    run, pending = [], []
    for message in completion:
        if message["role"] == "assistant":
            pending = [call["function"] for call in message.get("tool_calls") or []]
        elif message["role"] == "tool":
            function = pending.pop(0)
            run.append(Call(function["name"], dict(function.get("arguments") or {}), message["content"]))
    return run


@dataclass(frozen=True)
class Replay:
    """The same calls on a fresh session: what each returned (as TRL writes it) and the episode's score."""

    results: list[str]
    reward: float
    breakdown: dict[str, Any] | None


def replay(env: AgentEnv, row: Mapping[str, Any], calls: list[Call]) -> Replay:
    """Reset a fresh `LocalSession` from `row`, make `calls` in order, and score the episode: the results written as
    TRL writes a tool's result or its error."""
    results = []
    with env.open() as session:
        session.reset(**row)
        for call in calls:
            try:
                results.append(str(session.call_tool(call.name, call.arguments)))
            except AgentEnvError as error:
                results.append(str({"error": str(readable(error))}))
        score = session.score()
    return Replay(results, score.reward, score.breakdown)
