"""The errors agent_env raises: small classes, each with a stable code and a message that says how to fix it."""

from __future__ import annotations

from typing import ClassVar


class AgentEnvError(Exception):
    """Base class of every error agent_env raises on purpose."""

    code: ClassVar[str] = "agent_env_error"
    ended: str | None = None
    """On the error of a call that ended its episode (the last failure its environment allows): why, as
    `Session.ended()` says it; carried across every wire with the error, so a remote session knows too."""


class ToolDefinitionError(AgentEnvError, TypeError):
    """A tool cannot be published as written; raised when its environment class is defined."""

    code = "tool_definition"


class ToolError(AgentEnvError, ValueError):
    """A tool call the model can fix: the message is written for the model and names what to change."""

    code = "tool_error"


class ToolFailedError(ToolError):
    """A tool raised an exception that is not agent_env's (a bug, or a service it needs that is down).

    The model reads the same text for it wherever the episode runs ("tool 'lend' failed: Exception: database
    down"), as the result of a call that failed; the traceback, and where it ran, go to the log.
    """

    code = "tool_failed"


class ToolArgumentError(ToolError):
    """A tool call's arguments break the tool's published input schema."""

    code = "invalid_arguments"


class UnknownToolError(ToolError, LookupError):
    """A call names a tool the environment does not publish."""

    code = "unknown_tool"


class DatasetRowsError(AgentEnvError, TypeError):
    """A dataset row that the environment's `reset` cannot be called with: a key it cannot take, or one it needs."""

    code = "dataset_rows"


class RewardError(AgentEnvError, TypeError):
    """An environment's `reward()` returned something that is not a finite real number."""

    code = "invalid_reward"


class EpisodeStateError(AgentEnvError, RuntimeError):
    """A call that the episode's state does not allow (before reset, or after it ended)."""

    code = "episode_state"


class EpisodeNotStartedError(EpisodeStateError):
    """A tool was called, or the reward read, before `reset` started an episode."""

    code = "episode_not_started"


class EpisodeEndedError(EpisodeStateError):
    """A tool was called after the episode ended; only `reset` starts a new one.

    Its message is for the model, which cannot start an episode, so it says only that the episode has ended; how
    the session's user starts another (`start_hint`) is a note, which a traceback shows and `str(error)` leaves out.
    """

    code = "episode_ended"

    def __init__(self, message: str, *, start_hint: str = "call reset(...)") -> None:
        super().__init__(message)
        self.add_note(f"{start_hint} to start another episode")


class RemoteError(AgentEnvError, ConnectionError):
    """Something outside the model failed: a served environment's server, a Ray actor, an MCP server, a simulated
    user's endpoint. Not the model's to fix, so an evaluation ends the episode unscored rather than blaming it."""

    code = "remote_error"


class ModelEndpointError(RemoteError):
    """A model the environment itself asks (a simulated user, a judge) could not be asked: its endpoint failed for
    good (down, refused, rate-limited or timed out past its retries) or answered nothing usable. The episode ends
    unscored, never with a reward the agent did not earn."""

    code = "model_endpoint"


class UserEndpointError(ModelEndpointError):
    """A simulated user's endpoint failed for good, or answered with no text: the conversation cannot go on."""

    code = "user_endpoint"


class JudgeEndpointError(ModelEndpointError):
    """A judge's endpoint failed for good, or answered what cannot be read as its verdicts."""

    code = "judge_endpoint"


class SessionClosedError(EpisodeStateError):
    """A session was used after `close`."""

    code = "session_closed"

    def __init__(self, message: str = "this session is closed; open a new one") -> None:
        super().__init__(message)
