"""`Surface`: the seam through which a wire protocol is served beside MCP and the control API, by `build_app`.

A surface is given the app's episodes and limits once, when `build_app` builds the app, and answers with a `Mount`:
its routes, the paths among them answered without the token, its JSON-RPC endpoints (whose oversized requests the
guard answers in their own dialect), and what must run while the app does. Every request to its routes passes the
server's guard first (token, Host and Origin, body size and values, WebSocket handshakes too), so a surface never
forks the guards: it only tells them what they need to know. OpenEnv's (`agent_env.openenv.OpenEnvSurface`) is the
first; any later protocol plugs in the same way, and this room never imports one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from agent_env.server._episodes import EpisodeRegistry
    from agent_env.server._jsonrpc import Dialect
    from agent_env.server._limits import Limits


@dataclass(frozen=True)
class Mount:
    """What one surface adds to an app."""

    routes: Sequence[BaseRoute]
    """Its routes, mounted after MCP's and the control API's."""
    open_paths: frozenset[str] = frozenset()
    """Paths answered without the token (a health check that launchers poll)."""
    rpc_paths: Mapping[str, Dialect] = field(default_factory=dict)
    """Its JSON-RPC endpoints by path, each with the dialect a request refused for its size is answered in."""
    lifespan: Callable[[], AbstractAsyncContextManager[None]] | None = None
    """Entered once the episodes' workers run and left before they stop; None: nothing runs beside the routes."""


class Surface(Protocol):
    """A wire protocol served beside MCP and the control API, on the same episodes under the same guard and limits."""

    def describe(self) -> str:
        """Where it is served, as `serve`'s start-up line says it (`"OpenEnv's at /openenv"`)."""
        ...

    def mount(self, episodes: EpisodeRegistry, limits: Limits) -> Mount:
        """Its routes over `episodes`, and what the guard must know of them; `build_app` calls this once per app."""
        ...
