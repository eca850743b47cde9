"""OpenEnv's wire surface under a prefix beside MCP: `/ws`, the `POST /mcp` dialect, `/health`, `/schema`, `/metadata`.

OpenEnv's own `/mcp` is not MCP, so the surface sits under a prefix (`/openenv` by default) and real MCP stays at
`/mcp`; OpenEnv clients keep a base URL's path, so `GenericEnvClient("http://host:8000/openenv")` works. Sessions are
the registry's episodes, and every request goes through the server's guard first (token, Host, body size; WebSocket
handshakes included). `/schema` publishes the action, observation and state schemas OpenEnv's MCP environments
publish (from openenv 0.10.0's `CallToolAction`, `CallToolObservation` and `State`, BSD-3-Clause, Meta Platforms and
affiliates), and the schema of the observation a reset answers with.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute

from agent_env.openenv import _wire as wire
from agent_env.openenv.server._rpc import DIALECT, OpenEnvRpc
from agent_env.openenv.server._sessions import OpenEnvSessions
from agent_env.openenv.server._socket import OpenEnvSocket
from agent_env.server.surface import Episodes, Limits, Mount, answered

OPENENV_PREFIX = "/openenv"
"""Where `agent-env serve --openenv` serves OpenEnv's wire surface."""

_PREFIX = re.compile(r"(/[A-Za-z0-9._~-]+)+")
_TAKEN = frozenset({"mcp", "health", "tools", "datasets", "episodes"})


def check_prefix(prefix: str) -> str:
    """The prefix, if it is a path that collides with none of the server's own routes; else `ValueError`."""
    if not _PREFIX.fullmatch(prefix) or prefix.split("/")[1] in _TAKEN:
        raise ValueError(
            f"OpenEnv's prefix must be a path like {OPENENV_PREFIX!r} (segments of letters, digits, '.', '_', '~', "
            f"'-'), whose first segment is none of the server's own routes ({', '.join(sorted(_TAKEN))}); "
            f"not {prefix!r}"
        )
    return prefix


class OpenEnvSurface:
    """OpenEnv's wire surface under `prefix`, for `build_app(environment, surfaces=[OpenEnvSurface()])`: a `Surface`.

    Raises:
        ValueError: `prefix` is not a path, or its first segment is one of the server's own routes.
    """

    def __init__(self, prefix: str = OPENENV_PREFIX) -> None:
        self.prefix = check_prefix(prefix)

    def describe(self) -> str:
        """Where the surface is served, for `serve`'s start-up line."""
        return f"OpenEnv's at {self.prefix}"

    def mount(self, episodes: Episodes, limits: Limits) -> Mount:
        """The surface's routes over `episodes`: its health check answered without the token, as OpenEnv's
        launchers poll it, and `POST {prefix}/mcp` refused for its size in OpenEnv's JSON-RPC dialect."""
        routes = OpenEnvRoutes(episodes, limits, self.prefix)
        return Mount(
            routes=routes.routes(),
            open_paths=frozenset({f"{self.prefix}/health"}),
            rpc_paths={f"{self.prefix}/mcp": DIALECT},
        )

    def __repr__(self) -> str:
        return f"OpenEnvSurface({self.prefix!r})"


class OpenEnvRoutes:
    """The OpenEnv routes of one registry, under one prefix."""

    def __init__(self, episodes: Episodes, limits: Limits, prefix: str) -> None:
        self.prefix = prefix
        self.episodes = episodes
        self.limits = limits
        self.sessions = OpenEnvSessions(episodes)
        self.rpc = OpenEnvRpc(episodes, self.sessions)
        self.socket = OpenEnvSocket(episodes, self.sessions, self.rpc, limits)
        self._metadata = metadata(episodes.environment)

    def routes(self) -> list[BaseRoute]:
        """The surface's routes; HTTP errors answer in the server's wire form."""
        p = self.prefix
        return [
            Route(f"{p}/health", answered(self.health), methods=["GET"]),
            Route(f"{p}/schema", answered(self.schema), methods=["GET"]),
            Route(f"{p}/metadata", answered(self.metadata), methods=["GET"]),
            Route(f"{p}/mcp", answered(self.rpc.endpoint), methods=["POST"]),
            WebSocketRoute(f"{p}/ws", self.socket),
        ]

    async def health(self, request: Request) -> Response:
        """`GET {prefix}/health`: OpenEnv's `{"status": "healthy"}`."""
        return JSONResponse({"status": "healthy"})

    async def schema(self, request: Request) -> Response:
        """`GET {prefix}/schema`: the action, observation, state and reset observation schemas."""
        return Response(_schema_bytes(), media_type="application/json")

    async def metadata(self, request: Request) -> Response:
        """`GET {prefix}/metadata`: OpenEnv's `EnvironmentMetadata` for the served environment, and the server's
        capacity as OpenEnv's `ServerCapacityStatus` names it: its live sessions and the most it holds (null for no
        limit), which its `CAPACITY_REACHED` refusal names too."""
        capacity = {"active_sessions": self.episodes.count(), "max_sessions": self.limits.max_episodes}
        return JSONResponse({**self._metadata, **capacity})


def metadata(environment: type) -> dict[str, Any]:
    """OpenEnv's `EnvironmentMetadata` of an environment class: its name, and its docstring's first line."""
    doc = (environment.__doc__ or "").strip()
    return {
        "name": environment.__name__,
        "description": doc.splitlines()[0] if doc else f"{environment.__name__} environment",
        "readme_content": None,
        "version": None,
        "author": None,
        "documentation_url": None,
    }


@cache
def _schema_bytes() -> bytes:
    published = json.loads(resources.files("agent_env.openenv").joinpath("schemas.json").read_text("utf-8"))
    schemas = {**published, "reset_observation": _reset_observation_schema(published["observation"])}
    return wire.dumps(schemas).encode()


def _reset_observation_schema(observation: dict[str, Any]) -> dict[str, Any]:
    """The schema of a reset's observation: OpenEnv's base observation fields, and the text `reset` returned."""
    base = {key: observation["properties"][key] for key in ("done", "reward", "metadata")}
    text = {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "default": None,
        "description": "The observation the environment's reset returned, as the model reads it",
        "title": "Text",
    }
    return {
        "additionalProperties": False,
        "description": "The first observation of an episode.",
        "properties": {**base, "text": text},
        "title": "ResetObservation",
        "type": "object",
    }
