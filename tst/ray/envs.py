"""Environments for the Ray tier: one that says which process runs it, and one that publishes other tools."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from agent_env import Environment, tool


class WhereDesk(Environment):
    """A counter that also says which process runs it, and tools that take their time."""

    def __init__(self, start: int = 0) -> None:
        self.start = start
        self.total = start

    def reset(self, **row: Any) -> str:
        if "seed" in row and not isinstance(row["seed"], int):
            raise TypeError(f"seed must be an integer, not {row['seed']!r}")
        time.sleep(row.get("sleep", 0))  # a reset that takes its time
        self.total = self.start + row.get("seed", 0)
        return f"counter starts at {self.total}"

    @tool
    def where(self) -> int:
        """The id of the process running this episode."""
        return os.getpid()

    @tool
    def add(self, amount: int) -> str:
        """Add to the counter.

        Args:
            amount: How much to add.
        """
        self.total += amount
        return f"total {self.total}"

    @tool
    def hang(self, seconds: float) -> str:
        """Block for a while, then answer.

        Args:
            seconds: How long.
        """
        time.sleep(seconds)
        return "done"

    @tool
    async def snooze(self, seconds: float) -> str:
        """Sleep without blocking, then answer.

        Args:
            seconds: How long.
        """
        await asyncio.sleep(seconds)
        return "awake"

    @tool
    async def freeze(self, seconds: float) -> str:
        """Block the event loop it runs on (an async tool written wrongly), then answer.

        Args:
            seconds: How long.
        """
        time.sleep(seconds)
        return "thawed"

    @tool
    def crash(self) -> str:
        """Fail like a bug does."""
        raise KeyError("boom")

    def reward(self) -> float:
        return float(self.total)

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        return [{"seed": seed} for seed in range(3)]


class OtherDesk(Environment):
    """Publishes other tools than `WhereDesk`, as a newer version of an environment would."""

    def reset(self, **row: Any) -> str:
        return "ready"

    @tool
    def where(self, verbose: bool = False) -> int:
        """The id of the process running this episode.

        Args:
            verbose: Unused.
        """
        return os.getpid()

    def reward(self) -> float:
        return 0.0
