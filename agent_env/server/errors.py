"""The errors of serving and reaching an environment over HTTP, and the one table that maps each to its wire form.

Every error crosses the wire as `{"error": {"code", "message"}}` with an HTTP status; the client turns the code
back into the same class with the same message, so a `ToolArgumentError` raised by the server's `LocalSession`
is a `ToolArgumentError` in the trainer's process too.
"""

from __future__ import annotations

from agent_env.errors import (
    AgentEnvError,
    CallTimeoutError,
    DatasetRowsError,
    EpisodeBudgetError,
    EpisodeEndedError,
    EpisodeNotStartedError,
    EpisodeStateError,
    InfrastructureFailedError,
    JudgeEndpointError,
    ModelEndpointError,
    RemoteError,
    RewardError,
    SessionClosedError,
    TimedOutEpisodeError,
    ToolArgumentError,
    ToolError,
    ToolFailedError,
    UnknownToolError,
    UnscoredEpisodeError,
    UserEndpointError,
    raised_text,
)


class ServerUnavailableError(RemoteError):
    """The server cannot be reached, dropped the connection, or is not started."""

    code = "server_unavailable"


class ServerError(RemoteError):
    """The server failed while running environment code (a bug in the environment or the server); see its log."""

    code = "internal_error"


class EpisodeNotFoundError(RemoteError, LookupError):
    """The episode id is unknown: closed, idled out, closed after a timed-out call, or the server restarted."""

    code = "episode_not_found"


class TooManyEpisodesError(RemoteError):
    """The server already holds as many live episodes as it allows; close some or wait for idle ones to expire.

    Attributes:
        retry_after: Seconds the server said to wait before asking again (HTTP's `Retry-After`), when it said.
    """

    code = "too_many_episodes"
    retry_after: float | None = None


class UnauthorizedError(RemoteError, PermissionError):
    """The request carries no bearer token, or the wrong one."""

    code = "unauthorized"


class RequestTooLargeError(RemoteError, ValueError):
    """The request body is larger than the server accepts."""

    code = "request_too_large"


class InvalidRequestError(RemoteError, ValueError):
    """The request is malformed: a body that is not a JSON object, or a Host the server does not answer to."""

    code = "invalid_request"


class ResetError(RemoteError, UnscoredEpisodeError, ValueError):
    """The environment could not start an episode from the given dataset row (its `reset` raised): an
    `UnscoredEpisodeError` like the one a `LocalSession` raises, so a trainer scores it by the same rule."""

    code = "reset_failed"


class DatasetNotFoundError(RemoteError, LookupError):
    """The environment has no dataset, or no split of that name."""

    code = "dataset_not_found"
    splits: tuple[str, ...] = ()
    """The splits the environment has, when it names them (`agent_env.errors.SplitNotFoundError`); on the wire too."""


class RowNotFoundError(RemoteError, LookupError):
    """A reset names a dataset row by a digest that no row the server has served has: send the row itself."""

    code = "row_not_found"


HTTP_STATUS: dict[type[AgentEnvError], int] = {
    ToolFailedError: 500,
    ToolError: 422,
    EpisodeStateError: 409,
    InvalidRequestError: 400,
    ResetError: 400,
    RewardError: 500,
    TimedOutEpisodeError: 504,
    InfrastructureFailedError: 502,
    UnscoredEpisodeError: 500,
    DatasetRowsError: 500,
    UnauthorizedError: 401,
    EpisodeNotFoundError: 404,
    DatasetNotFoundError: 404,
    RowNotFoundError: 404,
    RequestTooLargeError: 413,
    ServerError: 500,
    ModelEndpointError: 502,
    TooManyEpisodesError: 503,
    ServerUnavailableError: 503,
    CallTimeoutError: 504,
}
"""The HTTP status of each error class; a subclass takes its nearest listed base's status."""

WIRE_ERRORS: dict[str, type[AgentEnvError]] = {
    error.code: error
    for error in (
        ToolError,
        ToolArgumentError,
        UnknownToolError,
        ToolFailedError,
        EpisodeStateError,
        EpisodeNotStartedError,
        EpisodeEndedError,
        SessionClosedError,
        UnscoredEpisodeError,
        InfrastructureFailedError,
        TimedOutEpisodeError,
        RewardError,
        DatasetRowsError,
        RemoteError,
        ServerUnavailableError,
        ServerError,
        EpisodeNotFoundError,
        CallTimeoutError,
        EpisodeBudgetError,
        TooManyEpisodesError,
        UnauthorizedError,
        RequestTooLargeError,
        InvalidRequestError,
        ResetError,
        DatasetNotFoundError,
        RowNotFoundError,
        ModelEndpointError,
        UserEndpointError,
        JudgeEndpointError,
    )
}
"""Every error that can cross the wire, by its stable code."""


def reset_error(environment: str, error: Exception) -> ResetError:
    """The `ResetError` a served (or Ray-hosted) reset answers with when `environment`'s session raised `error`:
    an `UnscoredEpisodeError`'s message as it is (the environment, the episode, what its reset raised), or what
    anything else says."""
    if isinstance(error, UnscoredEpisodeError):  # in the words a session in process says it
        return ResetError(str(error))
    return ResetError(f"{environment}.reset could not start an episode from this row: {raised_text(error)}")


def http_status(error: AgentEnvError) -> int:
    """The HTTP status an error is sent with: its class's, or its nearest listed base's (500 if none)."""
    for cls in type(error).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return 500


def error_class(code: str, status: int) -> type[AgentEnvError]:
    """The class to raise for an error read off the wire: by code, else by status (an environment's own
    `ToolError` subclass arrives as a `ToolError`, an MCP server's timeout as a `CallTimeoutError`), else
    `RemoteError`."""
    if code in WIRE_ERRORS:
        return WIRE_ERRORS[code]
    if status == 422:
        return ToolError
    if status == 409:
        return EpisodeStateError
    if status == 504:  # a call out of time of the environment's own kind (an MCP server's)
        return CallTimeoutError
    return RemoteError


__all__ = [
    "HTTP_STATUS",
    "WIRE_ERRORS",
    "CallTimeoutError",
    "DatasetNotFoundError",
    "EpisodeBudgetError",
    "EpisodeNotFoundError",
    "InvalidRequestError",
    "JudgeEndpointError",
    "ModelEndpointError",
    "RemoteError",
    "RequestTooLargeError",
    "ResetError",
    "RowNotFoundError",
    "ServerError",
    "ServerUnavailableError",
    "TooManyEpisodesError",
    "UnauthorizedError",
    "UserEndpointError",
    "error_class",
    "http_status",
    "reset_error",
]
