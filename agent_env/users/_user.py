"""The simulated user's contract, and the one that needs no model: a scripted user."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from agent_env.users._chat import STOP, TRANSFER, Chat, ChatMessage, Scenario

UserTool = Callable[[str, Any], str]
"""Runs one of the user's own tools (by name, with JSON arguments) and returns the text the user reads."""


@runtime_checkable
class User(Protocol):
    """Who answers the agent. One object serves every episode of an environment (it keeps no episode's state: that
    is the `Chat`), and travels (pickled) wherever the environment goes: a server, a Ray actor, a rollout worker.
    """

    def opening(
        self, scenario: Scenario, history: Sequence[ChatMessage] = (), faults: Counter[str] | None = None
    ) -> str:
        """The user's first message: its answer to the agent's greeting, or, after a conversation that happened
        before the episode (`history`), to the agent's last message there.

        Args:
            scenario: What the user was told.
            history: The conversation before the episode, if any.
            faults: Where to count failed attempts of the user's endpoint (the episode's `Chat.faults`, which the
                opening starts).

        Raises:
            UserEndpointError: The user's model could not be asked.
        """
        ...

    def reply(
        self, chat: Chat, tools: Sequence[Mapping[str, Any]] = (), run_tool: UserTool | None = None
    ) -> ChatMessage:
        """The user's answer to the agent's last message in `chat` (which the caller has already added); the caller
        adds it to the chat.

        Args:
            chat: The conversation so far; the user may count failed attempts of its endpoint in `chat.faults`.
            tools: The user's own tools (`name`, `description`, `inputSchema`), when its environment gives it any.
            run_tool: Runs one of them, when it has any.

        Raises:
            UserEndpointError: The user's model could not be asked, or answered nothing.
        """
        ...

    def describe(self) -> dict[str, Any]:
        """What this user is, as JSON values for records (never a secret)."""
        ...


class ScriptedUser:
    """A user that needs no model: it says its script, in order, whatever the agent says, then ends the conversation.

    Deterministic, for tests and for training with no user model. The script is its own (`turns`), or else the
    scenario's (`Scenario.script`): the first line is its opening, each later one answers one agent message, and once
    the script runs out it answers with `then` (by default the stop marker, which ends the conversation). Once the
    agent has handed it over to another agent (`Chat.transferred`), it answers with the transfer marker.

    Args:
        turns: The opening and the replies, in order; None to say each scenario's own script.
        then: What it answers once the script has run out.
    """

    def __init__(self, turns: Sequence[str] | None = None, then: str = STOP) -> None:
        self.turns = tuple(turns) if turns is not None else None
        self.then = then

    def opening(
        self, scenario: Scenario, history: Sequence[ChatMessage] = (), faults: Counter[str] | None = None
    ) -> str:
        script = self._script(scenario)
        if not script:
            raise ValueError(
                "a scripted user needs a script: give ScriptedUser(turns=[...]) or a Scenario with a script"
            )
        return script[0]

    def reply(
        self, chat: Chat, tools: Sequence[Mapping[str, Any]] = (), run_tool: UserTool | None = None
    ) -> ChatMessage:
        if chat.transferred:
            return ChatMessage("user", TRANSFER)
        script = self._script(chat.scenario)
        said = sum(1 for message in chat.messages if message.role == "user")
        return ChatMessage("user", script[said] if said < len(script) else self.then)

    def describe(self) -> dict[str, Any]:
        return {"kind": "scripted", "script": "own" if self.turns is not None else "the scenario's"}

    def _script(self, scenario: Scenario) -> tuple[str, ...]:
        return self.turns if self.turns is not None else scenario.script

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScriptedUser) and (self.turns, self.then) == (other.turns, other.then)

    def __hash__(self) -> int:
        return hash((self.turns, self.then))

    def __repr__(self) -> str:
        return f"ScriptedUser(turns={self.turns!r}, then={self.then!r})"
