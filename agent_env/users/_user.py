"""The simulated user's contract, and the one that needs no model: a scripted user."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from agent_env.users._chat import STOP, TRANSFER, Chat, ChatMessage, Scenario, UserAction

UserTool = Callable[[str, Any], str]
"""Runs one of the user's own tools (by name, with JSON arguments) and returns the text the user reads."""

HOLD = "Okay, go ahead. What should I do next?"
"""What a `ScriptedUser` with actions still to make answers a message that asks for none of them."""
DONE = "Done. This is what it shows now:"
"""How a `ScriptedUser` begins the reply in which it reports the calls it made, each result after it."""


@runtime_checkable
class User(Protocol):
    """Who answers the agent. One object serves every episode of an environment (it keeps no episode's state: that
    is the `Chat`), and travels (pickled) wherever the environment goes: a server, a Ray actor, a rollout worker.
    """

    def opening(
        self,
        scenario: Scenario,
        history: Sequence[ChatMessage] = (),
        faults: Counter[str] | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        run_tool: UserTool | None = None,
    ) -> str | ChatMessage:
        """The user's first message: its answer to the agent's greeting, or, after a conversation that happened
        before the episode (`history`), to the agent's last message there. Its text; or, when it called its own
        tools before writing it, the message with those calls (`ChatMessage.tool_messages`), which the conversation
        keeps as it keeps any reply's.

        Args:
            scenario: What the user was told.
            history: The conversation before the episode, if any.
            faults: Where to count failed attempts of the user's endpoint (the episode's `Chat.faults`, which the
                opening starts).
            tools: The user's own tools, when its environment gives it any (passed only then): it may call them
                before it writes, as in any reply.
            run_tool: Runs one of them, when it has any.

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
    """A user that needs no model: it says its script, in order, whatever the agent says, then ends the conversation;
    and where its scenario has actions and its environment gives it tools, it makes them when the agent asks.

    Deterministic, for tests and for training with no user model. The script is its own (`turns`), or else the
    scenario's (`Scenario.script`): the first line is its opening, each later one answers one agent message, and once
    the script runs out it answers with `then` (by default the stop marker, which ends the conversation). Once the
    agent has handed it over to another agent (`Chat.transferred`), it answers with the transfer marker.

    The scenario's actions (`Scenario.actions`: a task's reference calls on the user's side, such as toggling
    airplane mode on its phone) are made each once, when an agent message asks for them (`UserAction.asked_in`: the
    action's cue words are in it). A message that asks for some makes them, in the scenario's order, and is
    answered with what each returned (`DONE`, then the results); the script does not move on. A call the scenario
    lists twice (a reboot before and after the line is resumed) is made once per message that asks for it. While actions remain,
    a message that asks for none is answered with `HOLD` (a go-ahead and a question), and the script does not move
    on either; so its closing lines come only once every action is made, and an agent that never asks for one talks
    until its episode's limit. A stand-in, not τ²-bench's user: it never checks its own device unasked, and it makes
    exactly the reference's calls, whatever the agent asked for in its words.

    Args:
        turns: The opening and the replies, in order; None to say each scenario's own script.
        then: What it answers once the script has run out.
    """

    def __init__(self, turns: Sequence[str] | None = None, then: str = STOP) -> None:
        self.turns = tuple(turns) if turns is not None else None
        self.then = then

    def opening(
        self,
        scenario: Scenario,
        history: Sequence[ChatMessage] = (),
        faults: Counter[str] | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        run_tool: UserTool | None = None,
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
        pending = _pending(chat) if run_tool is not None else []
        if pending:
            return _act(pending, chat.messages[-1].text, run_tool) or ChatMessage("user", HOLD)
        script = self._script(chat.scenario)
        said = sum(1 for message in chat.messages if message.role == "user" and _scripted(message))
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


def _scripted(message: ChatMessage) -> bool:
    """Whether a user's message is a line of its script: not a report of its calls, nor a `HOLD`."""
    return not message.tool_messages and message.text != HOLD


def _pending(chat: Chat) -> list[UserAction]:
    """The scenario's actions the user has not made yet, in order: each call its messages record takes one away."""
    pending = list(chat.scenario.actions)
    for message in chat.messages:
        for item in message.tool_messages if message.role == "user" else ():
            for call in item.get("tool_calls") or ():
                function = call.get("function", {})
                made = (function.get("name"), json.loads(function.get("arguments") or "{}"))
                found = next((a for a in pending if (a.name, dict(a.arguments)) == made), None)
                if found is not None:
                    pending.remove(found)
    return pending


def _act(pending: list[UserAction], message: str, run_tool: UserTool | None) -> ChatMessage | None:
    """Make the actions `message` asks for, and the reply that reports them (their calls in the user's view, as a
    model's own calls are kept); None when it asks for none."""
    asked: list[UserAction] = []
    for action in pending:  # an action the scenario lists twice (a second reboot) takes a second message
        if action.asked_in(message) and all(action != made for made in asked):
            asked.append(action)
    if not asked or run_tool is None:
        return None
    calls, results = [], []
    for number, action in enumerate(asked):
        call_id = f"scripted_{number}"
        try:
            result = run_tool(action.name, dict(action.arguments))
        except Exception as error:  # reported as a model's own call would read it
            result = f"Error: {error}"
        function = {"name": action.name, "arguments": json.dumps(dict(action.arguments))}
        calls.append({"id": call_id, "type": "function", "function": function})
        results.append({"role": "tool", "tool_call_id": call_id, "content": result})
    text = "\n\n".join([DONE, *(result["content"] for result in results)])
    return ChatMessage("user", text, ({"role": "assistant", "content": "", "tool_calls": calls}, *results))
