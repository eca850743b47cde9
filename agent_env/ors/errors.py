"""The faults of reaching an ORS server: each a named `RemoteError`, counted by its `kind`, never a reward.

A fault is never the model's: a call that meets one fails with it (TRL shows the model its message, an evaluation
ends the episode unscored), the episode ends, and its reward is refused (`reward()` raises an
`UnscoredEpisodeError`), so no trainer reads a reward the episode did not earn.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agent_env.server.errors import RemoteError


class ORSError(RemoteError):
    """The ORS server, or the way to it, failed; `kind` names the fault as it is counted."""

    code = "ors_error"
    kind: ClassVar[str] = "error"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status the server answered with, when it answered one."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuilt, (type(self), str(self), self.status))


class ORSUnavailableError(ORSError):
    """The server cannot be reached, or dropped the connection before it answered."""

    code = "ors_unavailable"
    kind = "unavailable"


class ORSTimeoutError(ORSError, TimeoutError):
    """The server did not answer within the client's timeout (or a stream stayed silent past its heartbeat)."""

    code = "ors_timeout"
    kind = "timeout"


class ORSSessionExpiredError(ORSError):
    """The server no longer knows the session (404 or 410 on a session route): it reaped it, or restarted."""

    code = "ors_session_expired"
    kind = "session_expired"


class ORSStreamError(ORSError):
    """A call's stream ended before its result, and could not be resumed."""

    code = "ors_stream_cut"
    kind = "stream_cut"


class ORSMalformedError(ORSError):
    """The server sent what the wire does not allow: an unreadable event, a result or listing of the wrong shape."""

    code = "ors_malformed"
    kind = "malformed"


class ORSRateLimitedError(ORSError):
    """The server answered 429 (too many requests) past every retry."""

    code = "ors_rate_limited"
    kind = "rate_limited"


class ORSServerError(ORSError):
    """The server answered 5xx (past every retry, for the statuses that are retried)."""

    code = "ors_server_error"
    kind = "server_error"


class ORSRefusedError(ORSError):
    """The server refused a request with another 4xx (an unknown environment, a missing header): the message
    carries its `detail`."""

    code = "ors_refused"
    kind = "refused"


class ORSUnauthorizedError(ORSRefusedError, PermissionError):
    """The server refused the key (401 or 403): set the variable `api_key_env` names to a key it takes."""

    code = "ors_unauthorized"
    kind = "unauthorized"


class ORSToolFailedError(ORSError):
    """The tool raised on the server (an SSE `event: error`): as the SDK client does, the session is given up."""

    code = "ors_tool_failed"
    kind = "tool_failed"


def _rebuilt(cls: type[ORSError], message: str, status: int | None) -> ORSError:
    return cls(message, status=status)


__all__ = [
    "ORSError",
    "ORSMalformedError",
    "ORSRateLimitedError",
    "ORSRefusedError",
    "ORSServerError",
    "ORSSessionExpiredError",
    "ORSStreamError",
    "ORSTimeoutError",
    "ORSToolFailedError",
    "ORSUnauthorizedError",
    "ORSUnavailableError",
]
