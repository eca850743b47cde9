"""`serve`: run `build_app` under uvicorn, refusing to expose a server without a token beyond this machine."""

from __future__ import annotations

import asyncio
import importlib.util
import ipaddress
import logging
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent_env.environment import Environment, EnvironmentReference
from agent_env.server.limits import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_HOST,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_EPISODES,
    DEFAULT_PORT,
    LOOPBACK_HOSTS,
)

if TYPE_CHECKING:
    from agent_env.server.surface import Surface

logger = logging.getLogger("agent_env.server")

GRACEFUL_SHUTDOWN = 5
"""Seconds requests still in flight get to finish when the server is asked to stop."""
KEEP_ALIVE = 20
"""Seconds an idle connection is kept open for its client's next request: well past the 5 s for which
`AgentEnv.connect`'s client reuses one, so that the server never closes a connection just as the client sends a
request on it (uvicorn's own 5 s equals the client's, and lost a reset in 4,096 episodes so)."""


def serve(
    environment: EnvironmentReference,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    allow_unauthenticated: bool = False,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_episodes: int | None = DEFAULT_MAX_EPISODES,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
    log_level: str = "info",
    mcp_row: dict[str, Any] | None = None,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    http: str = "auto",
    loop: str = "auto",
    **options: Any,
) -> None:
    """Serve `environment` on `host:port` until interrupted; see `build_app` for the limits and `options`.

    Without a token the server answers only on loopback, and only to loopback Host names (against DNS
    rebinding); binding another address without a token needs `allow_unauthenticated=True`. A connection whose
    request headers are not all in within `header_timeout` seconds is closed. `http` and `loop` choose the HTTP
    parser and the event loop (see `uvicorn_options`).

    Raises:
        ValueError: A non-loopback `host` without a token or `allow_unauthenticated`, or a limit out of range.
    """
    import uvicorn

    from agent_env.envs import load_environment
    from agent_env.server.app import build_app

    check_exposure(host, token, allow_unauthenticated)
    running = uvicorn_options(header_timeout, http, loop)
    environment_class = load_environment(environment)
    app = build_app(
        environment_class,
        token=token,
        max_body_bytes=max_body_bytes,
        max_episodes=max_episodes,
        idle_timeout=idle_timeout,
        call_timeout=call_timeout,
        allowed_hosts=LOOPBACK_HOSTS if token is None and is_loopback(host) else None,
        mcp_row=mcp_row,
        **options,
    )
    show_logs(log_level)
    logger.info("%s", announcement(environment_class, host, port, surfaces=options.get("surfaces", ())))
    logger.info(
        "agent_env: HTTP parsed by %s, on %s's event loop", running["http"].parser_name, running["loop"]
    )
    # ws_max_size: a larger WebSocket message (OpenEnv's /ws) is refused with 1009 before it is held in memory
    uvicorn.run(app, host=host, port=port, log_level=log_level, ws_max_size=max_body_bytes, **running)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is when a line is written, not the one it was made with (which a caller, a
    test capturing output, may have closed since)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def show_logs(log_level: str) -> None:
    """Show agent_env's own log lines at `log_level` beside uvicorn's, formatted as uvicorn formats its own (unless
    the process has set up agent_env's logging itself)."""
    from uvicorn.logging import DefaultFormatter

    package = logging.getLogger("agent_env")
    if package.handlers:
        return
    handler = _StderrHandler()
    handler.setFormatter(DefaultFormatter("%(levelprefix)s %(message)s"))
    package.addHandler(handler)
    package.setLevel(log_level.upper())


def announcement(
    environment: type[Environment], host: str, port: int, *, surfaces: Sequence[Surface] = ()
) -> str:
    """The line `serve` logs at start: which environment, its tool-set fingerprint (the one a trainer's factory logs),
    and where each surface is."""
    from agent_env.schema import fingerprint

    name = f"[{host}]" if ":" in host and not host.startswith("[") else host
    url = f"http://{name}:{port}"
    where = f"a free port on {name} (uvicorn's next line says which)" if port == 0 else url
    connect = "that URL" if port == 0 else repr(url)
    served = [f"MCP at /mcp, the episode API for AgentEnv.connect({connect})"]
    served += [surface.describe() for surface in surfaces]
    tools = environment.tools.published
    return (
        f"agent_env: serving {environment.__name__} ({len(tools)} tools, tool set {fingerprint(tools)}) at {where}: "
        f"{', '.join(served)}"
    )


def uvicorn_options(
    header_timeout: float = DEFAULT_HEADER_TIMEOUT, http: str = "auto", loop: str = "auto"
) -> dict[str, Any]:
    """How `serve` runs an app under uvicorn: its lifespan on, 5 s for requests in flight at shutdown, idle
    connections kept `KEEP_ALIVE` seconds, HTTP parsed by `http` (`auto`: httptools where it is installed, else
    h11) with a deadline and a size cap for request headers (uvicorn has no deadline, and no cap on httptools), the
    event loop `loop` (`auto`: uvloop where it is installed, else asyncio's), and uvicorn's WebSocket protocol
    ending a refused handshake without logging an error.

    Raises:
        ValueError: A header timeout out of range, or a parser or loop that is unknown or not installed.
    """
    from agent_env.server._protocol import HEADER_BYTES, websocket_protocol

    if not (math.isfinite(header_timeout) and header_timeout > 0):
        raise ValueError(
            f"header_timeout must be a positive, finite number of seconds, not {header_timeout!r}"
        )
    return {
        "lifespan": "on",
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN,
        "timeout_keep_alive": KEEP_ALIVE,
        "http": with_header_timeout(header_timeout, http),
        "h11_max_incomplete_event_size": HEADER_BYTES,
        "loop": event_loop(loop),
        "ws": websocket_protocol(),
    }


PARSERS = ("httptools", "h11")
"""The HTTP/1.1 parsers `serve` can run, the one it prefers (where it is installed) first."""


def with_header_timeout(seconds: float, parser: str = "auto") -> type[asyncio.Protocol]:
    """The protocol class to give uvicorn (`http=`) for a header timeout of `seconds`, parsing with `parser`: one
    of `PARSERS`, or `auto` for httptools where it is installed, else h11.

    Raises:
        ValueError: An unknown parser, or httptools asked for where it is not installed.
    """
    if parser == "auto":
        parser = "httptools" if importlib.util.find_spec("httptools") is not None else "h11"
    if parser == "httptools":
        if importlib.util.find_spec("httptools") is None:
            raise ValueError(
                "the httptools parser is not installed: install the server extra (pip install 'agent-env[server]'), "
                "or parse with h11 (--http h11)"
            )
        from agent_env.server._httptools_protocol import HttpToolsDeadlineProtocol

        base: type[asyncio.Protocol] = HttpToolsDeadlineProtocol
    elif parser == "h11":
        from agent_env.server._protocol import HeaderDeadlineProtocol

        base = HeaderDeadlineProtocol
    else:
        raise ValueError(f"the HTTP parser must be auto, {' or '.join(PARSERS)}, not {parser!r}")
    return type(base.__name__, (base,), {"header_timeout": seconds, "parser_name": parser})


LOOPS = ("uvloop", "asyncio")
"""The event loops `serve` can run, the one it prefers (where it is installed) first."""


def event_loop(loop: str = "auto") -> str:
    """uvicorn's `loop=` for `loop`: one of `LOOPS`, or `auto` for uvloop where it is installed, else asyncio's.

    Raises:
        ValueError: An unknown loop, or uvloop asked for where it is not installed.
    """
    installed = importlib.util.find_spec("uvloop") is not None
    if loop == "auto":
        return "uvloop" if installed else "asyncio"
    if loop not in LOOPS:
        raise ValueError(f"the event loop must be auto, {' or '.join(LOOPS)}, not {loop!r}")
    if loop == "uvloop" and not installed:
        raise ValueError(
            "uvloop is not installed: install the server extra (pip install 'agent-env[server]'), or run "
            "asyncio's loop (--loop asyncio)"
        )
    return loop


def check_exposure(host: str, token: str | None, allow_unauthenticated: bool) -> None:
    """Refuse to serve without a token on an address other machines can reach, unless told to."""
    if token is None and not allow_unauthenticated and not is_loopback(host):
        raise ValueError(
            f"refusing to serve on {host} without a token: anyone who can reach it could run the environment's "
            "tools. Pass --token (or set AGENT_ENV_TOKEN), or --allow-unauthenticated if the network is trusted"
        )


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
