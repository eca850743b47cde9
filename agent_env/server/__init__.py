"""Serve an environment over HTTP (MCP and a control API), and reach a served one: needs the `server` extra.

Importing this package loads only the errors; the client side (`RemoteProvider`, `RemoteSession`) loads httpx, and
the server side (`build_app`, `serve`) the MCP SDK, starlette and uvicorn, when first touched. Other wire protocols
plug into `build_app` from above as a `Surface`, using only `agent_env.server.surface` (OpenEnv's:
`agent_env.openenv.OpenEnvSurface`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_env.server.errors import (
    CallTimeoutError,
    DatasetNotFoundError,
    EpisodeBudgetError,
    EpisodeNotFoundError,
    InvalidRequestError,
    RemoteError,
    RequestTooLargeError,
    ResetError,
    ServerError,
    ServerUnavailableError,
    TooManyEpisodesError,
    UnauthorizedError,
)

if TYPE_CHECKING:
    from agent_env.server._serve import serve
    from agent_env.server.app import build_app
    from agent_env.server.client import RemoteProvider, RemoteSession
    from agent_env.server.surface import Mount, Surface

_LAZY = {
    "Mount": "agent_env.server.surface",
    "Surface": "agent_env.server.surface",
    "RemoteProvider": "agent_env.server.client",
    "RemoteSession": "agent_env.server.client",
    "build_app": "agent_env.server.app",
    "serve": "agent_env.server._serve",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agent_env.server' has no attribute {name!r}")


__all__ = [
    "CallTimeoutError",
    "DatasetNotFoundError",
    "EpisodeBudgetError",
    "EpisodeNotFoundError",
    "InvalidRequestError",
    "Mount",
    "RemoteError",
    "RemoteProvider",
    "RemoteSession",
    "RequestTooLargeError",
    "ResetError",
    "ServerError",
    "ServerUnavailableError",
    "Surface",
    "TooManyEpisodesError",
    "UnauthorizedError",
    "build_app",
    "serve",
]
