"""The limits a server holds every request and episode to, checked once when the app is built."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_EPISODES = 1024
DEFAULT_IDLE_TIMEOUT = 600.0
DEFAULT_CALL_TIMEOUT = 20.0
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")
"""The Host headers a loopback-only server answers to (the MCP SDK's DNS-rebinding defaults, with and without a
port)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What a server allows.

    Attributes:
        token: The bearer token every request but `GET /health` must carry; None serves without auth.
        max_body_bytes: The largest request body accepted (413 past it).
        max_episodes: The most live episodes at once (503 past it); None for no limit.
        idle_timeout: Seconds without a request after which an episode is closed and freed; None keeps them.
        call_timeout: Seconds one reset, tool call or reward may run; past it the call fails and its episode is
            closed. None lets calls run as long as they take.
        allowed_hosts: The Host headers answered (`name:*` allows any port); None answers any. A server bound to
            loopback without a token should answer only loopback names, against DNS rebinding.
    """

    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_episodes: int | None = DEFAULT_MAX_EPISODES
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT
    allowed_hosts: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if self.token is not None and not self.token:
            raise ValueError("token must be a non-empty string, or None to serve without auth")
        if self.max_body_bytes <= 0:
            raise ValueError(
                f"max_body_bytes must be a positive number of bytes, not {self.max_body_bytes!r}"
            )
        if self.max_episodes is not None and self.max_episodes <= 0:
            raise ValueError(
                f"max_episodes must be positive (or None for no limit), not {self.max_episodes!r}"
            )
        for name in ("idle_timeout", "call_timeout"):
            seconds = getattr(self, name)
            if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
                raise ValueError(
                    f"{name} must be a positive, finite number of seconds (or None), not {seconds!r}"
                )
