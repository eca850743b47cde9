"""One conversation between an agent and a simulated user: who said what, and whether and why it has ended."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

STOP = "###STOP###"
"""What a user writes when its goal is met (τ²-bench's marker, so transcripts read as upstream's)."""
TRANSFER = "###TRANSFER###"
"""What a user writes once it has been handed to another agent."""
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
"""What a user writes when its scenario does not tell it enough to go on."""
ENDINGS = {
    STOP: "the user ended the conversation",
    TRANSFER: "the user was transferred to another agent",
    OUT_OF_SCOPE: "the user's scenario did not cover what came up",
}
"""Each marker a user may write, and what it means."""
GREETING = "Hi! How can I help you today?"
"""The agent's first message, which the user answers with its opening (the words of τ²-bench's runs)."""


def ending_of(text: str) -> str | None:
    """Why a user's message ends the conversation (it carries a marker), or None."""
    for marker, meaning in ENDINGS.items():
        if marker in text:
            return meaning
    return None


@dataclass(frozen=True)
class UserAction:
    """A call of one of the user's own tools that a `ScriptedUser` makes when the agent asks for it.

    Attributes:
        name: The tool.
        arguments: Its arguments, as the call sends them.
        cues: How an agent's message asks for it: every group has one of its phrases in the message, as whole words
            in lower case, any character that is neither a letter nor a digit read as a space ("Wi-Fi" reads as
            "wi fi"). `(("sim",), ("reseat", "remove", "reinsert"))` is asked for by "Please remove your SIM card
            and put it back".
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict, hash=False)
    cues: tuple[tuple[str, ...], ...] = ()

    def asked_in(self, message: str) -> bool:
        """Whether `message` asks for this call (see `cues`); never, without cues."""
        words = f" {_words(message)} "
        return bool(self.cues) and all(
            any(f" {_words(phrase)} " in words for phrase in group) for group in self.cues
        )


_NOT_A_WORD = re.compile(r"[\W_]+")


def _words(text: str) -> str:
    return _NOT_A_WORD.sub(" ", text.lower()).strip()


@dataclass(frozen=True)
class Scenario:
    """What a simulated user is told: who it is, what it wants and knows, and, for a scripted user, what it says and
    does.

    Attributes:
        instructions: The situation, in the second person ("You want to cancel reservation EHGLP3..."): what the
            user wants, what it knows, what it must not volunteer, how it should behave.
        persona: How the user writes and behaves in general, when the scenario says.
        script: What a `ScriptedUser` says, in order: its opening, then one reply per agent message.
        actions: The calls of its own tools a `ScriptedUser` makes, each once, when the agent asks for them.
        prompt: The whole system prompt a model playing the user is told, when the environment must tell it its
            benchmark's own (τ²-bench's guidelines around its scenario); None, and an `LLMUser` frames `persona` and
            `instructions` with this room's own guidelines.
    """

    instructions: str
    persona: str | None = None
    script: tuple[str, ...] = ()
    actions: tuple[UserAction, ...] = ()
    prompt: str | None = None


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation: the agent's to the user, or the user's to the agent.

    Attributes:
        role: Who wrote it.
        text: What it says.
        tool_messages: For a user's message, the calls of its own tools it made before writing it, and their
            results, as chat messages in the user's view (`assistant` with `tool_calls`, then `tool`).
    """

    role: Literal["agent", "user"]
    text: str
    tool_messages: tuple[dict[str, Any], ...] = ()


@dataclass
class Chat:
    """One episode's conversation. The environment owns it; the user reads it and adds its replies.

    Attributes:
        scenario: What the user was told.
        messages: Every message so far, the agent's greeting and the user's opening first.
        ended: Why the conversation has ended (a marker the user wrote), or None while it goes on.
        failure: What stopped the user from answering (its endpoint failed for good), or None.
        faults: Failed attempts of the user's endpoint, by kind, including ones a retry recovered from (the
            opening's too).
        asides: What the agent wrote in replies that also called tools, in order: its words, but sent to no one, so
            never in `messages`, which the user reads (τ²-bench sends such a reply to the environment, not the user,
            and its COMMUNICATE still counts the text).
        transferred: Whether the agent has handed the user over to another agent (the environment says so when its
            transfer tool runs): a `ScriptedUser` answers the agent's next message with the transfer marker, as a
            simulated user told to write it once transferred would; a model hears only the agent's words.
    """

    scenario: Scenario
    messages: list[ChatMessage] = field(default_factory=list)
    ended: str | None = None
    failure: str | None = None
    faults: Counter[str] = field(default_factory=Counter)
    asides: list[str] = field(default_factory=list)
    transferred: bool = False

    def reported_faults(self) -> dict[str, int]:
        """`faults` as records report them beside the agent's endpoint's: each kind prefixed `user_`, sorted."""
        return {f"user_{kind}": count for kind, count in sorted(self.faults.items()) if count}

    def agent_texts(self) -> list[str]:
        """What the agent said to the user, in order."""
        return [message.text for message in self.messages if message.role == "agent"]

    def agent_words(self) -> list[str]:
        """Everything the agent wrote: what it said to the user, then its asides (what τ²-bench's COMMUNICATE
        reads)."""
        return [*self.agent_texts(), *self.asides]
