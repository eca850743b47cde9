"""The limits a server holds every request and episode to (`Limits`, checked once when the app is built), and the
defaults that `build_app`, `serve` and `agent-env serve` share."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from agent_env._deadline import DEFAULT_EPISODE_BUDGET as DEFAULT_EPISODE_BUDGET

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_EPISODES = 2048
"""Two GRPO batches of 64 prompts x 16 generations: a whole batch, with room for the next one's episodes to open
while the last ones are scored (AsyncGRPO) or for an evaluation beside it. A live desk episode holds about 140 KiB
of the server's memory (bench/batch_episodes.py), so 2,048 are about 300 MB; at 1,024, a batch of 1,024 left no
room at all."""
DEFAULT_IDLE_TIMEOUT = 600.0
DEFAULT_CALL_TIMEOUT = 20.0
RETRY_AFTER = 1
"""Seconds a client refused for room (503 `too_many_episodes`) is told to wait before it asks again (`Retry-After`):
an episode ends and frees its room in about that, and a client that retries sooner only adds load."""
DEFAULT_MCP_IDLE_TIMEOUT = 120.0
DEFAULT_BODY_TIMEOUT = 30.0
DEFAULT_MAX_BODY_VALUES = 20_000
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")
"""The Host headers a loopback-only server answers to (the MCP SDK's DNS-rebinding defaults, with and without a
port)."""
LOOPBACK_ORIGINS = tuple(
    f"{scheme}://{name}:*" for scheme in ("http", "https") for name in LOOPBACK_HOSTS[3:]
)
"""The browser origins allowed by default: pages served from this machine (`:*`: any port, or none)."""
DEFAULT_HOST = "127.0.0.1"
"""Where `serve` listens by default: loopback, which a server without a token leaves only when told to."""
DEFAULT_PORT = 8000
DEFAULT_HEADER_TIMEOUT = 10.0
"""Seconds a connection's request headers may take to arrive under `serve`; a slower connection is closed."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What a server allows.

    Attributes:
        token: The bearer token every request but `GET /health` must carry; None serves without auth.
        max_body_bytes: The largest request body accepted (413 past it).
        max_episodes: The most live episodes at once (503 past it); None for no limit.
        idle_timeout: Seconds without a request after which an episode is closed and freed; None keeps them.
        mcp_idle_timeout: Seconds without a request after which an MCP session ends, and its episode with it (a
            client that never sends DELETE, like a one-shot command, holds them no longer); None keeps them.
        call_timeout: Seconds one reset, tool call or reward may run; past it the call fails and its episode is
            closed. None lets calls run as long as they take.
        episode_budget: Seconds all of one episode's calls (its reset, tool calls and reward) may run together;
            past it the call running fails and the episode is closed. None: no limit.
        allowed_hosts: The Host headers answered (`name:*` allows any port); None answers any. A server bound to
            loopback without a token should answer only loopback names, against DNS rebinding.
        allowed_origins: The browser origins (`Origin` header) let in (`scheme://name:*` allows any port, `*`
            any origin); a request without `Origin` is not from a browser page and is let in. Others get 403.
        body_timeout: Seconds a request body may take to arrive in full (408 past it); None waits for ever.
        max_body_values: The most JSON values one body may hold, counted from its commas and brackets (so one in
            a string counts too); past it the body is refused before it is parsed (413). None: no limit.
    """

    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_episodes: int | None = DEFAULT_MAX_EPISODES
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT
    mcp_idle_timeout: float | None = DEFAULT_MCP_IDLE_TIMEOUT
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT
    episode_budget: float | None = DEFAULT_EPISODE_BUDGET
    allowed_hosts: Sequence[str] | None = None
    allowed_origins: Sequence[str] | None = LOOPBACK_ORIGINS
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT
    max_body_values: int | None = DEFAULT_MAX_BODY_VALUES

    def __post_init__(self) -> None:
        if self.token is not None:
            check_token(self.token)
        if self.max_body_bytes <= 0:
            raise ValueError(
                f"max_body_bytes must be a positive number of bytes, not {self.max_body_bytes!r}"
            )
        if self.max_episodes is not None and self.max_episodes <= 0:
            raise ValueError(
                f"max_episodes must be positive (or None for no limit), not {self.max_episodes!r}"
            )
        if self.max_body_values is not None and self.max_body_values <= 0:
            raise ValueError(
                f"max_body_values must be positive (or None for no limit), not {self.max_body_values!r}"
            )
        for origin in self.allowed_origins or ():
            check_origin_pattern(origin)
        for name in ("idle_timeout", "mcp_idle_timeout", "call_timeout", "episode_budget", "body_timeout"):
            seconds = getattr(self, name)
            if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
                raise ValueError(
                    f"{name} must be a positive, finite number of seconds (or None), not {seconds!r}"
                )


def check_token(token: str) -> None:
    """Refuse a token no client could send: empty, with whitespace around it, or with a control character.

    Tokens are compared as UTF-8 bytes, so any other text is a token a client can send.
    """
    if not token:
        raise ValueError("token must be a non-empty string, or None to serve without auth")
    if token != token.strip():
        where, space = ("starts", token[0]) if token[0].isspace() else ("ends", token[-1])
        raise ValueError(
            f"the token {where} with whitespace ({space!r}), which no client can send (HTTP trims it from header "
            "values): remove it (a trailing newline often comes from a file or `echo`)"
        )
    control = next((c for c in token if unicodedata.category(c) == "Cc"), None)
    if control is not None:
        raise ValueError(
            f"the token holds a control character ({control!r}), which cannot travel in an HTTP header: "
            "use printable characters"
        )


def check_origin_pattern(pattern: str) -> None:
    """Refuse an allowed-origin pattern that no browser sends: it must be `*`, `null`, or `scheme://host[:port]`
    (a port of `*` for any), with no path."""
    if pattern in ("*", "null"):
        return
    scheme, separator, rest = pattern.partition("://")
    if not separator or scheme not in ("http", "https") or not rest or "/" in rest:
        raise ValueError(
            f"allowed origin {pattern!r} is not an origin: write scheme://host[:port] with no path, like "
            "'https://app.example.com' or 'http://localhost:*' (any port), or '*' for any origin"
        )
