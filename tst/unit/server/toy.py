"""A small environment for the server tests: a counter, nested offers, an async tool, and tools that hang or crash."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from pydantic import BaseModel, Field

from agent_env import Environment, tool
from agent_env.errors import ToolError

RELEASE = threading.Event()
"""Set it to let every `hang` call return at once."""


class Offer(BaseModel):
    """One offer."""

    hour: int = Field(ge=1, le=24, description="Hour ending, 1..24.")
    mw: float = Field(ge=0, description="Megawatts offered.")
    price: float | None = Field(default=None, description="Price in $/MWh; none for a price taker.")


class ToyDesk(Environment):
    """A counter and an offer book."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale
        self.total = 0
        self.offers: list[Offer] = []

    def reset(self, seed: int = 0, **row: Any) -> str:
        if not isinstance(seed, int):
            raise TypeError(f"seed must be an integer, not {seed!r}")
        self.total = seed
        self.offers = []
        return f"counter starts at {seed}"

    @tool
    def add(self, amount: int) -> str:
        """Add to the counter.

        Args:
            amount: How much to add.
        """
        self.total += amount
        return f"total {self.total}"

    @tool
    def submit(self, offers: list[Offer]) -> dict[str, Any]:
        """Submit offers.

        Args:
            offers: The offers, one per hour.
        """
        hours = [offer.hour for offer in offers]
        if len(set(hours)) != len(hours):
            raise ToolError(
                "offers[*].hour: each hour may be offered once; merge the offers for the same hour"
            )
        self.offers = list(offers)
        return {"accepted": len(offers), "mw": sum(offer.mw for offer in offers)}

    @tool
    async def echo(self, text: str) -> str:
        """Say it back.

        Args:
            text: What to say.
        """
        return text

    @tool
    async def sleep(self, seconds: float) -> str:
        """Sleep without blocking, then answer.

        Args:
            seconds: How long to sleep.
        """
        await asyncio.sleep(seconds)
        return "awake"

    @tool
    def hang(self, seconds: float = 30.0) -> str:
        """Wait, then answer.

        Args:
            seconds: How long to wait at most.
        """
        RELEASE.wait(seconds)
        return "done"

    @tool
    def crash(self) -> str:
        """Fail like a bug does."""
        raise KeyError("boom")

    def reward(self) -> float:
        return self.total * self.scale

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        if split != "train":
            raise ValueError(f"ToyDesk has only a 'train' split, not {split!r}")
        return [{"seed": seed} for seed in range(3)]
