"""`build_app`: one environment served over HTTP, as MCP at `/mcp`, the control API beside it, and any other surfaces."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Route

from agent_env.environment import EnvironmentReference
from agent_env.envs import load_environment
from agent_env.server import _jsonrpc as jsonrpc
from agent_env.server._bindings import SessionEpisodes
from agent_env.server._episodes import EpisodeRegistry
from agent_env.server._guard import OPEN_PATHS, RequestGuard
from agent_env.server._http import ControlApi, unrouted
from agent_env.server._mcp import McpEndpoint
from agent_env.server.limits import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_EPISODE_BUDGET,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_BODY_VALUES,
    DEFAULT_MAX_EPISODES,
    DEFAULT_MCP_IDLE_TIMEOUT,
    LOOPBACK_ORIGINS,
    Limits,
)
from agent_env.server.surface import Surface

logger = logging.getLogger("agent_env.server")

MCP_PATH = "/mcp"


def build_app(
    environment: EnvironmentReference,
    *,
    token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_episodes: int | None = DEFAULT_MAX_EPISODES,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    mcp_idle_timeout: float | None = DEFAULT_MCP_IDLE_TIMEOUT,
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
    episode_budget: float | None = DEFAULT_EPISODE_BUDGET,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = LOOPBACK_ORIGINS,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    max_body_values: int | None = DEFAULT_MAX_BODY_VALUES,
    mcp_row: Mapping[str, Any] | None = None,
    surfaces: Sequence[Surface] = (),
    **config: Any,
) -> Starlette:
    """An ASGI app serving `environment`: MCP (streamable HTTP) at `/mcp`, the control API beside it, and each of
    `surfaces` (another wire protocol, like OpenEnv's) on the same episodes, under the same guard and limits.

    Every episode is a `LocalSession` on its own environment instance; an MCP session gets one episode (started
    on its first tool call from the row in its URL, else `mcp_row`), and the control API opens as many as asked
    (up to `max_episodes`).
    The app's lifespan starts the workers and closes every episode on the way out, so run it under a server that
    runs lifespans (uvicorn does); under `httpx.ASGITransport`, enter `app.router.lifespan_context(app)` first.

    Args:
        environment: An `Environment` subclass, an `MCPEnvironment`, or a name for `load_environment`
            (`"gridsim-desk"`, `"package.module:name"`).
        token: The bearer token every request but `GET /health` must carry; None serves without auth.
        max_body_bytes: The largest request body accepted; a larger one gets 413.
        max_episodes: The most live episodes (and MCP sessions); past it, opening one gets 503. None: no limit.
        idle_timeout: Seconds an episode may go unused before it is closed and freed; None keeps them.
        mcp_idle_timeout: Seconds an MCP session may go without a request before it ends and its episode is closed
            (clients that never send DELETE hold them no longer); None keeps them.
        call_timeout: Seconds one reset, tool call or reward may run before it fails and its episode is closed.
        episode_budget: Seconds all of one episode's calls may run together; the call running when it runs out
            fails (`EpisodeBudgetError`) and the episode is closed. None: no limit.
        allowed_hosts: The Host headers answered (`name:*`: any port); others get 421. None answers any.
        allowed_origins: The browser origins let in (`scheme://name:*`: any port; `*`: any); a request with
            another `Origin` gets 403, one without (not from a browser) is let in. Default: loopback pages only.
        body_timeout: Seconds a request body may take to arrive; a slower one gets 408. None waits for ever.
        max_body_values: The most JSON values a body may hold (counted from its commas and brackets, before it is
            parsed); more gets 413. None: no limit.
        mcp_row: The dataset row an MCP session's episode starts from when the client names none in the endpoint's
            URL (`/mcp?seed=7`); None: the first row of the environment's `test` split (else `train`), or the
            empty row for an environment without a dataset.
        surfaces: Other wire protocols to serve beside MCP, each a `Surface` (`agent_env/server/surface.py`):
            `[OpenEnvSurface()]` (from `agent_env.openenv`) serves OpenEnv's `/ws`, its `POST /mcp` dialect,
            `/health`, `/schema` and `/metadata` under `/openenv`, as `agent-env serve --openenv` does. See
            docs/openenv.md.
        **config: Passed to the environment's constructor for every episode.

    Raises:
        LookupError: `environment` names no environment.
        TypeError: `environment` is neither an `Environment` subclass nor an `MCPEnvironment`, or `openenv_prefix=`
            is given, which `build_app` took before OpenEnv's surface moved out (the message says what to pass).
        ValueError: A limit is out of range, or a surface cannot be served (it says why).
    """
    if "openenv_prefix" in config:  # build_app took it before OpenEnv's surface left this room
        raise TypeError(_openenv_prefix_gone(config["openenv_prefix"]))
    try:
        environment_class = load_environment(environment)
    except LookupError:
        if isinstance(environment, str):
            raise
        raise TypeError(
            f"build_app serves an Environment subclass, an MCPEnvironment or a name, not {environment!r}"
        ) from None
    limits = Limits(
        token=token,
        max_body_bytes=max_body_bytes,
        max_episodes=max_episodes,
        idle_timeout=idle_timeout,
        mcp_idle_timeout=mcp_idle_timeout,
        call_timeout=call_timeout,
        episode_budget=episode_budget,
        allowed_hosts=tuple(allowed_hosts) if allowed_hosts is not None else None,
        allowed_origins=tuple(allowed_origins) if allowed_origins is not None else None,
        body_timeout=body_timeout,
        max_body_values=max_body_values,
    )
    episodes = EpisodeRegistry(environment_class, config, limits)
    sessions = SessionEpisodes(episodes, mcp_row)
    mcp = McpEndpoint(episodes, sessions, limits)
    mounts = [surface.mount(episodes, limits) for surface in surfaces]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await episodes.start()
        try:
            async with mcp.run(), contextlib.AsyncExitStack() as running:
                for mount in mounts:
                    if mount.lifespan is not None:
                        await running.enter_async_context(mount.lifespan())
                logger.debug(
                    "agent_env: serving %s", environment_class.__name__
                )  # `serve` says more, at INFO
                yield
        finally:
            await episodes.stop()
            await asyncio.to_thread(environment_class.shutdown)  # an MCP environment's spare servers

    # MCP first: its one path is matched at once, and the control API's routes match by splitting the path. A
    # surface's routes on the control API's own paths go before them, each claiming only its own requests.
    shared = [route for mount in mounts for route in mount.shared_routes]
    routes: list[BaseRoute] = [Route(MCP_PATH, mcp), *shared, *ControlApi(episodes, sessions).routes()]
    open_paths = set(OPEN_PATHS)
    rpc_paths = {MCP_PATH: jsonrpc.MCP}
    token_headers: set[str] = set()
    for mount in mounts:
        routes += mount.routes
        open_paths |= mount.open_paths
        rpc_paths.update(mount.rpc_paths)
        token_headers |= mount.token_headers
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(
                RequestGuard,
                limits=limits,
                open_paths=frozenset(open_paths),
                rpc_paths=rpc_paths,
                token_headers=frozenset(token_headers),
            )
        ],
        exception_handlers={404: unrouted, 405: unrouted},
        lifespan=lifespan,
    )
    app.state.episodes = episodes
    app.state.sessions = sessions
    app.state.limits = limits
    return app


def _openenv_prefix_gone(prefix: Any) -> str:
    """What to pass instead of `openenv_prefix=`, which `build_app` took before OpenEnv's surface left `server/`."""
    if prefix is None:
        return (
            "build_app no longer takes openenv_prefix=: drop it (None served no OpenEnv surface, and without "
            "surfaces= none is served)"
        )
    return (
        f"build_app no longer takes openenv_prefix=: serve OpenEnv's surface with "
        f"surfaces=[OpenEnvSurface({prefix!r})] (from agent_env.openenv import OpenEnvSurface)"
    )
