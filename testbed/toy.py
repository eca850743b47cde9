"""A small environment with the desk's argument shape (nested curves, an enum, bounds), used across the tests."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from agent_env import Environment, InfrastructureFailedError, ToolError, tool

Hour = Annotated[int, Field(ge=1, le=24)]


class Curve(BaseModel):
    """An offer curve for a set of hours."""

    hours: str | list[Hour] = Field(description='"HE07", "HE07-HE10", "all", or a list like [7, 8]')
    points: list[tuple[float, float]] = Field(min_length=2, max_length=10, description="[mw, price] pairs")


class ASOffer(BaseModel):
    """An ancillary-service offer."""

    product: Literal["regup", "regdn", "rrspfr", "rrsffr", "ecrs", "nspin"]
    hours: str | list[Hour]
    mw: float = Field(ge=0)
    price: float


class ToyDesk(Environment):
    """Keeps an offer book; the reward is the number of curves submitted, over ten."""

    property_reads = 0

    def __init__(self, limit: int = 10) -> None:
        self.limit = limit
        self.book: list[Curve] = []
        self.offers: list[ASOffer] = []
        self.notes: list[str] = []
        self.down: set[str] = set()
        self.raise_in: str | None = None

    @property
    def expensive(self) -> int:  # stands for a property that must never be evaluated by tool discovery
        type(self).property_reads += 1
        raise RuntimeError("this property must never be evaluated")

    def reset(self, **row: Any) -> str:
        self.book, self.offers, self.notes = [], [], []
        self.scored_as = (row["scored_as"],) if "scored_as" in row else ()
        self.closes_after = row.get(
            "closes_after"
        )  # the desk closes (ends the episode) after this many calls
        self.heard = 0
        self.down = set(
            row.get("down", ())
        )  # services a row takes down ("battery", "notes"): tools that then raise
        # A row's `raise_in` makes reset, reward or its breakdown fail as a bug would ("reset", "reward",
        # "breakdown", or "observation": a reset that returns no text), or reward find the judge it scores with down
        # ("judge": a failure outside the episode).
        self.raise_in = row.get("raise_in")
        if self.raise_in == "reset":
            raise RuntimeError("the task store is down")
        if self.raise_in == "observation":  # a reset that returns what TRL cannot append to the prompt
            return 42  # type: ignore[return-value]
        return f"Task {row.get('task', 'none')}: submit offers, then end your turn."

    def reward(self) -> float:
        if self.raise_in == "reward":
            return len(self.book) / 0
        if self.raise_in == "judge":
            raise InfrastructureFailedError("the judge's endpoint answered HTTP 503")
        if self.scored_as:  # a row's `scored_as`: a reward() that returns whatever that is
            return self.scored_as[0]
        return min(len(self.book) / self.limit, 1.0)

    def after_call(
        self, name: str, arguments: Any, result: str | None, error: Exception | None
    ) -> str | None:
        if (
            self.closes_after is None
        ):  # a row without `closes_after` keeps no count, so a refused call changes nothing
            return None
        self.heard += 1
        return f"the desk closed after {self.heard} calls" if self.heard >= self.closes_after else None

    def reward_breakdown(self) -> dict[str, Any]:
        if self.raise_in == "breakdown":
            return {"curves": self.book["count"]}  # type: ignore[call-overload]
        return {"curves": len(self.book), "limit": self.limit}

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        return [{"prompt": [{"role": "user", "content": "Trade."}], "task": f"{split}-{i}"} for i in range(4)]

    @tool
    def submit_offers(self, curves: list[Curve], as_offers: list[ASOffer] | None = None) -> str:
        """Submit energy offer curves and AS offers; a rejected submission changes nothing.

        Args:
            curves: Energy offer curves, one per hour set.
            as_offers: Ancillary-service offers.
        """
        for index, curve in enumerate(curves):
            prices = [price for _, price in curve.points]
            if prices != sorted(prices):
                raise ToolError(f"curves[{index}].points: prices must be non-decreasing")
        self.book.extend(curves)
        self.offers.extend(as_offers or [])
        return f"accepted {len(curves)} curves and {len(as_offers or [])} AS offers"

    @tool
    def battery_status(self) -> dict[str, float]:
        """The battery's state of charge and limits."""
        if "battery" in self.down:
            raise ConnectionError("the battery's telemetry is down")
        return {"soc_mwh": 100.0, "max_mw": 100.0}

    @tool
    async def write_note(self, text: Annotated[str, Field(max_length=200)]) -> str:
        """Keep a note for later (an async tool).

        Args:
            text: The note.
        """
        await asyncio.sleep(0)
        if "notes" in self.down:
            raise OSError("the note store is down")
        self.notes.append(text)
        return f"{len(self.notes)} notes"


_CALLS = json.loads(Path(__file__).with_name("toy_calls.json").read_text())
VALID = _CALLS["valid"]
"""A valid `submit_offers` call: three curves and one AS offer (in toy_calls.json, which tst/openenv/drive.py reads
too: it runs in OpenEnv's venvs, where agent_env is not installed)."""
MALFORMED = _CALLS["malformed"]
"""A `submit_offers` call whose second point lacks its price: refused at `curves[0].points[1]`."""
