"""The agent's side of a conversation with a simulated user: one tool, `message_user`, whose result is the reply.

Under TRL the agent can only act through tools, so it reaches the user through this one, and the user's reply is a
tool result (which TRL masks from the loss: the simulator's words are never trained on). `agent-env eval` plays the
official protocol instead: a reply of the agent's without tool calls goes to the user through this same tool, and
the answer comes back as a user message; a reply that calls tools is announced to the environment first through a
hidden tool, `agent_aside`, with its text (which goes to no one, as τ²-bench plays it, but is the agent's words in
the record) and how many of its calls follow, so that an environment can count one reply as one message, as
τ²-bench's orchestrator does. Either way the environment keeps one record of the conversation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field

from agent_env.errors import EpisodeStateError
from agent_env.tools import tool
from agent_env.users._chat import GREETING, Chat, ChatMessage, Scenario, ending_of
from agent_env.users._user import ScriptedUser, User

USER_CHANNEL = "message_user"
"""The tool through which an agent talks to its simulated user; `agent-env eval` routes plain replies to it."""
ASIDE = "agent_aside"
"""The hidden tool (`tool(hidden=True)`: never offered to a model) through which `agent-env eval` announces each reply
of the agent's that calls tools, before its calls: its text (said, so τ²-bench's COMMUNICATE counts it, but sent to
no one: the user never reads it), how many of its calls follow, and how many it refused itself before they could
reach the environment."""

UserSetting = User | Mapping[str, Any] | str | None
"""How a user is named in an environment's configuration: a `User`; "scripted"; the settings of an `LLMUser` as a
mapping (`base_url`, `model`, `api_key_env`, sampling), which travels as JSON; or None for the environment's
default."""


def user_from(setting: UserSetting, default: User | None = None) -> User:
    """The user a configuration names.

    Raises:
        ValueError: A setting that names no user.
    """
    if setting is None:
        return default if default is not None else ScriptedUser()
    if setting == "scripted":
        return ScriptedUser()
    if isinstance(setting, Mapping):
        from agent_env.users._llm import LLMUser

        return LLMUser.from_settings(setting)
    if isinstance(setting, User):
        return setting
    raise ValueError(
        f"user={setting!r} names no user: pass a User (ScriptedUser, LLMUser), 'scripted', or an LLM user's "
        "settings as a mapping such as {'base_url': 'http://127.0.0.1:8001/v1', 'model': 'gpt-4.1'}"
    )


class UserChat:
    """Mixin of an `Environment` whose agent serves a simulated user: the `message_user` tool and the chat it keeps.

    The environment sets `user` in its constructor and calls `start_chat` in `reset`; the conversation ends when
    the user writes an ending marker (`agent_env.users.ENDINGS`), which ends the episode (see `after_call`). An
    environment whose user has tools of its own overrides `user_tools` and `run_user_tool`.
    """

    user: User
    chat: Chat | None = None

    def start_chat(
        self, scenario: Scenario, opening: str | None = None, history: Sequence[ChatMessage] = ()
    ) -> str:
        """Start the episode's conversation: the agent's greeting (or the conversation that happened before the
        episode, `history`), then the user's opening: `opening` when the dataset row carries it, else the user's
        own. Returns the opening."""
        self.chat = None  # an opening that fails leaves no conversation, not the last episode's
        before = list(history) or [ChatMessage("agent", GREETING)]
        faults: Counter[str] = Counter()  # the opening's faults are the episode's, counted with its replies'
        tools = self.user_tools() if opening is None else ()
        if opening is not None:
            said: str | ChatMessage = opening
        elif tools:  # the user may act before it writes, as in any reply (passed only to a user with tools)
            said = self.user.opening(scenario, before, faults, tools=tools, run_tool=self.run_user_tool)
        else:
            said = self.user.opening(scenario, before, faults)
        message = said if isinstance(said, ChatMessage) else ChatMessage("user", said)
        self.chat = Chat(scenario, [*before, message], faults=faults)
        return message.text

    @tool
    def message_user(self, message: Annotated[str, Field(min_length=1)]) -> str:
        """Send a message to the user, the customer you are serving, and wait for their reply, which this returns.

        It is your only way to talk to them: ask for what you need, explain what you are about to do and get their explicit confirmation before any change, and tell them the outcome. Send one message and read the reply before the next.

        Args:
            message: What you say to the user.
        """
        chat = self.chat
        if chat is None:
            raise EpisodeStateError("there is no user to talk to: the episode has not started a conversation")
        chat.messages.append(ChatMessage("agent", message))
        if self.before_user_reply() is not None:  # the episode ended before the user could answer (a limit)
            return ""
        tools = self.user_tools()
        answer = self.user.reply(chat, tools, self.run_user_tool if tools else None)
        chat.messages.append(answer)
        chat.ended = ending_of(answer.text)
        return answer.text

    @tool(name=ASIDE, hidden=True)
    def agent_aside(
        self,
        text: str = "",
        calls: Annotated[int, Field(ge=0)] = 0,
        refused: Annotated[int, Field(ge=0)] = 0,
    ) -> str:
        """Announce a reply of the agent's that calls tools, before its calls: keep its text (its words, which the user never reads), and say how many of its calls follow.

        Args:
            text: What the reply wrote beside its calls ("" for nothing).
            calls: How many of its calls come next, each its own call of a tool.
            refused: How many of its calls were refused before they could reach the environment (a name no tool offered has, arguments that are not JSON): each a failed call.
        """
        chat = self.chat
        if chat is None:
            raise EpisodeStateError("there is no conversation to keep it in: the episode has not started one")
        if text:
            chat.asides.append(text)
        return ""

    def user_tools(self) -> Sequence[Mapping[str, Any]]:
        """The user's own tools (`name`, `description`, `inputSchema`); none by default."""
        return ()

    def before_user_reply(self) -> str | None:
        """Called once the agent's message is in the chat, before the user is asked to answer it: why the episode
        ends before the user can answer (τ²-bench ends it there when the agent's message reaches its step limit), in
        which case `message_user` answers "" and the user is not asked; None, the default, to ask the user."""
        return None

    def run_user_tool(self, name: str, arguments: Any) -> str:
        """Run one of the user's own tools and return the text the user reads."""
        raise LookupError(f"the user has no tool {name!r}")

    def after_call(
        self, name: str, arguments: Any, result: str | None, error: Exception | None
    ) -> str | None:
        """End the episode once the conversation has: the user wrote an ending marker, or could not answer."""
        chat = self.chat
        if chat is not None and (chat.ended or chat.failure):
            return chat.ended or chat.failure
        ended: str | None = super().after_call(name, arguments, result, error)  # type: ignore[misc]
        return ended
