"""Failing inputs from issue 10's authoring findings, as tests drive them.

- Finding 1: keys the published schema did not mention. At the top level they were refused although the schema
  allowed them; nested in a pydantic model (`extra="ignore"`) they passed and were dropped without a word.
- Finding 4: arguments that are not an object, which raised ValueError or TypeError instead of ToolArgumentError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict

from agent_env import Environment, tool


class Meeting(BaseModel):
    room: str
    minutes: int


class Stop(TypedDict):
    city: str


@dataclass
class Seat:
    row: int


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: str


class Booking(Environment):
    """Nested arguments of every kind that closes an object (a model, a TypedDict, a dataclass), and two that
    leave it open (a `dict[str, int]`, a model with `extra="allow"`)."""

    def reset(self, **row: Any) -> None:
        return None

    def reward(self) -> float:
        return 0.0

    @tool
    def book(self, meeting: Meeting, stops: list[Stop], seat: Seat | None = None) -> str:
        """Book a meeting."""
        return "booked"

    @tool
    def tag(self, labels: dict[str, int], note: Open) -> dict[str, Any]:
        """Tag with free-form labels."""
        return {"labels": labels, "extra": note.model_extra}


MISSPELT_KEYS: list[tuple[dict[str, Any], list[str]]] = [
    (
        {"meeting": {"room": "A", "minutes": 30, "minuts": 45}, "stops": [{"city": "Oslo", "cty": "x"}]},
        [
            "- meeting.minuts: unknown property; meeting takes minutes, room",
            "- stops[0].cty: unknown property; stops[0] takes city",
        ],
    ),
    (
        {"meeting": {"room": "A", "minutes": 1}, "stops": [], "seat": {"row": 1, "col": 2}},
        ["- seat.col: unknown property; seat takes row"],
    ),
]
"""Calls of `Booking.book` with a key no object takes, nested, and the lines that refuse them (once dropped)."""

NOT_AN_OBJECT: list[tuple[Any, str]] = [
    ([["curves", []]], 'got array [["curves", []]]'),
    ('{"curves": []}', 'got string "{\\"curves\\": []}"'),
    (None, "got null"),
    (7, "got integer 7"),
]
"""Arguments that are not an object, and how the refusal says what was sent."""
