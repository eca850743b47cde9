"""An environment whose one tool burns a fixed amount of CPU time, for the benchmarks that measure parallelism."""

from __future__ import annotations

import time
from typing import Any

from agent_env import Environment, tool


class BurnDesk(Environment):
    """Each `burn` call spends `ms` milliseconds of its own thread's CPU time (preemption does not shorten it)."""

    def reset(self, **row: Any) -> str:
        return "burn"

    @tool
    def burn(self, ms: float) -> float:
        """Spend CPU time; answer the thread CPU seconds spent.

        Args:
            ms: Milliseconds of CPU time to spend.
        """
        started = time.thread_time()
        while time.thread_time() - started < ms / 1000:
            sum(range(200))
        return time.thread_time() - started

    def reward(self) -> float:
        return 0.0
