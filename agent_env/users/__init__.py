"""Simulated users: who answers an agent that serves a customer, in any environment that has one.

A `User` answers the agent's messages from a `Scenario` (what it wants, knows and must not volunteer): a
`ScriptedUser` says a script with no model, an `LLMUser` is played by a model behind any OpenAI-compatible
endpoint (the `llm` extra). An environment gives its agent the `message_user` tool by mixing in `UserChat`; the
conversation ends when the user writes an ending marker. Under TRL the user's reply is that tool's result; under
`agent-env eval` it is the next user message. The same user object serves both.
"""

from agent_env.errors import UserEndpointError
from agent_env.users._channel import ASIDE, USER_CHANNEL, UserChat, UserSetting, user_from
from agent_env.users._chat import (
    ENDINGS,
    GREETING,
    OUT_OF_SCOPE,
    STOP,
    TRANSFER,
    Chat,
    ChatMessage,
    Scenario,
    UserAction,
    ending_of,
)
from agent_env.users._user import HOLD, ScriptedUser, User, UserTool

__all__ = [
    "ASIDE",
    "ENDINGS",
    "GREETING",
    "HOLD",
    "OUT_OF_SCOPE",
    "STOP",
    "TRANSFER",
    "USER_CHANNEL",
    "Chat",
    "ChatMessage",
    "LLMUser",
    "Scenario",
    "ScriptedUser",
    "User",
    "UserAction",
    "UserChat",
    "UserEndpointError",
    "UserSetting",
    "UserTool",
    "ending_of",
    "user_from",
]


def __getattr__(name: str) -> object:
    if name == "LLMUser":  # loads the llm room (and openai) only when asked for
        from agent_env.users._llm import LLMUser

        return LLMUser
    raise AttributeError(f"module 'agent_env.users' has no attribute {name!r}")
