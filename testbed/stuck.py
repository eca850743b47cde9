"""StuckDesk: an environment whose tools take their time or never return, for the tests of call timeouts and episode
budgets on every provider (in process, served, Ray, OpenEnv) and under a real trainer.

`hang` never returns until the file its row names (`release`) exists, so a test that started it can end it (across
processes: a Ray actor polls the same file) and then check that nothing is left running.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from agent_env import Environment, tool

POLL = 0.05
"""Seconds between a hanging call's looks at its release file."""


class StuckDesk(Environment):
    """A counter whose calls can nap, or hang until released."""

    def __init__(self) -> None:
        self.count = 0
        self.release: str | None = None

    def reset(self, release: str | None = None, reset_hangs: bool = False, **row: Any) -> str:
        self.count = 0
        self.release = release
        if reset_hangs:
            self._wait_for_release()
        return "Count with add; nap and snooze take their time; hang never returns."

    @tool
    def add(self) -> str:
        """Add one to the count.

        Returns:
            The count.
        """
        self.count += 1
        return str(self.count)

    @tool
    def nap(self, seconds: float) -> str:
        """Sleep, holding the thread, then add one to the count.

        Args:
            seconds: How long to sleep.
        """
        time.sleep(seconds)
        self.count += 1
        return f"napped {seconds:g} s"

    @tool
    async def snooze(self, seconds: float) -> str:
        """Sleep without holding the thread, then add one to the count.

        Args:
            seconds: How long to sleep.
        """
        await asyncio.sleep(seconds)
        self.count += 1
        return f"snoozed {seconds:g} s"

    @tool
    def hang(self) -> str:
        """Never return (until the episode's release file exists)."""
        self._wait_for_release()
        self.count += 100  # a late call that changes the instance: it must never be scored
        return "released"

    def reward(self) -> float:
        return float(self.count)

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        return [{"prompt": [{"role": "user", "content": f"Task {index}: count."}]} for index in range(4)]

    def _wait_for_release(self) -> None:
        while self.release is None or not Path(self.release).exists():
            time.sleep(POLL)


__all__ = ["StuckDesk"]
