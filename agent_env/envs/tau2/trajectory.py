"""What a τ² episode records of itself for scoring: each call it made, and how it ended."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Termination = Literal["agent_stop", "user_stop", "max_steps", "too_many_errors", "user_error", "agent_error"]

SCORED: frozenset[Termination] = frozenset({"agent_stop", "user_stop"})
"""The endings tau2-bench scores; any other ending scores 0."""

ENDINGS: dict[Termination, str] = {
    "agent_stop": "the agent ended the episode",
    "user_stop": "the user ended the conversation",
    "max_steps": "the episode reached max_steps",
    "too_many_errors": "the episode reached max_errors",
    "user_error": "the simulated user could not answer",
    "agent_error": "the agent wrote to a user in solo mode, where there is none",
}
"""Each ending, in the words a reward's breakdown gives it."""


@dataclass(frozen=True)
class Call:
    """One tool call of the episode (or of the conversation before it), as the trajectory holds it."""

    name: str
    arguments: Any
    requestor: Literal["assistant", "user"]
    result: str
    error: bool


__all__ = ["ENDINGS", "SCORED", "Call", "Termination"]
