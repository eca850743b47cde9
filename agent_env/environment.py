"""The authoring contract: subclass `Environment`, mark tool methods with `@tool`, implement `reset` and `reward`."""

from __future__ import annotations

from typing import Any, ClassVar

from agent_env.tools import END_TURN, ToolSet, tool

TURN_ENDED = "Turn ended."
"""What `end_turn` answers."""


class Environment:
    """One agent environment: state for one episode at a time, tools the model calls, and a reward.

    Subclasses mark tool methods with `@tool`; their published schemas are built and checked when the class is
    defined, so a tool that cannot be published fails there, with its name and the reason. An instance runs one
    episode at a time: `reset` starts one (and may be called again to start the next), tools act on it, `end_turn`
    ends it, and `reward` scores it. Nothing here checks the episode's order of calls: a `Session` does, so that
    every way of reaching an environment (in process, TRL, MCP) holds calls to the same rules.

    Class attributes:
        tools: The published tools, by name, built from the class's `@tool` methods when the class is defined.
    """

    tools: ClassVar[ToolSet]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.tools = ToolSet.collect(cls)

    def reset(self, **row: Any) -> str | None:
        """Start a new episode and return the observation the model reads first (or None for none).

        Args:
            **row: A dataset row (TRL passes every column, `prompt` included); take the keys you need and
                ignore the rest.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement reset(**row)")

    def reward(self) -> float:
        """The episode's reward; called after the episode ends (or when the trainer asks for it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement reward()")

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The rows of a dataset split, each one a valid `reset(**row)`; an environment without tasks has none."""
        raise NotImplementedError(f"{type(self).__name__} has no dataset: it defines no dataset_rows(split)")

    @tool
    def end_turn(self) -> str:
        """End your turn. Call this once you are done; the episode is then scored."""
        return TURN_ENDED


Environment.tools = ToolSet.collect(Environment)

__all__ = ["END_TURN", "Environment", "tool"]
