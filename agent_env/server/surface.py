"""The seam through which a wire protocol is served beside MCP and the control API: all a surface may use.

`build_app(environment, surfaces=[...])` calls each surface's `mount` once, with the app's episodes and limits,
and serves the routes of the `Mount` it answers with. Every request to them passes the server's guard first
(token, Host and Origin, body size and values, WebSocket handshakes too), so a surface never forks the guards: it
only tells them what they need to know. OpenEnv's (`agent_env.openenv.OpenEnvSurface`) is the first; any later
protocol plugs in the same way, importing from the server only this module and `agent_env.server.errors`, and
`agent_env.server` never imports one.

What a surface may use:
- `Surface`, the protocol it implements, and `Mount`, what it answers with;
- `Episodes`, the registry's public face (open, reset, call, score and close episodes), and `ClientAdvice`,
  the words its messages use to tell the surface's own clients what to do;
- `Limits`, the limits the app holds requests and episodes to;
- `parse_json`, `NotJsonError` and `json_values`, to read a body or a message as standard JSON within the
  limits;
- `answered`, to answer an endpoint's errors in the server's wire form;
- `Dialect`, how the guard answers a JSON-RPC request to the surface that it refuses for its size;
- `MODEL_ERRORS`, the failures a surface answers inside the call's result, for the model to read and fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agent_env.errors import EpisodeStateError, ToolError
from agent_env.server._episodes import ClientAdvice
from agent_env.server._guard import json_values
from agent_env.server._http import answered
from agent_env.server._json import NotJsonError, parse_json
from agent_env.server._jsonrpc import Dialect
from agent_env.server.errors import CallTimeoutError, EpisodeNotFoundError
from agent_env.server.limits import Limits

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from agent_env.environment import Environment
    from agent_env.session import Score

__all__ = [
    "MODEL_ERRORS",
    "ClientAdvice",
    "Dialect",
    "Episodes",
    "Limits",
    "Mount",
    "NotJsonError",
    "Surface",
    "answered",
    "json_values",
    "parse_json",
]

MODEL_ERRORS = (ToolError, EpisodeStateError, EpisodeNotFoundError, CallTimeoutError)
"""The failures of a call that are the model's to fix (bad arguments, an unknown tool, an episode that has ended
or expired, a call that timed out): every surface answers them inside the call's result, where the model reads
them (MCP: a result with `isError: true`), and any other failure as the protocol's own error."""


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
    shared_routes: Sequence[BaseRoute] = ()
    """Routes on a path the control API serves too (ORS's `GET /tools`), matched before its own: each one's `matches`
    claims only the requests that are the surface's (by a header they carry), and lets the others through."""
    token_headers: frozenset[str] = frozenset()
    """Headers (lower-case names) besides `Authorization: Bearer` in which the surface's clients send the server's
    token (ORS's `x-api-key`): the guard takes it from any of them, on every path."""


class Episodes(Protocol):
    """The live episodes of the served environment, as a surface may use them: the registry's public face.

    They are the control API's and MCP's episodes too, under the same limits. Every episode is a `LocalSession` on
    its own environment instance, run in the server's workers under the call timeout, one call at a time; a call
    that times out closes its episode. Each method that takes `surface` words the errors it raises for that
    surface's clients (`ClientAdvice`); without it, for the control API's.
    """

    @property
    def environment(self) -> type[Environment]:
        """The served environment class."""
        ...

    @property
    def limits(self) -> Limits:
        """The app's limits."""
        ...

    def tools(self) -> list[dict[str, Any]]:
        """The environment's published tools (`name`, `description`, `inputSchema`), exactly as in process."""
        ...

    def count(self) -> int:
        """How many episodes are live."""
        ...

    def touch(self, episode_id: str, surface: ClientAdvice = ...) -> None:
        """Count an episode as used now (a client keeping it alive), so that it does not idle out.

        Raises:
            EpisodeNotFoundError: No live episode has that id.
        """
        ...

    async def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The rows of a dataset split, each one a valid reset row (read once per split).

        Raises:
            DatasetNotFoundError: No dataset, or no such split (its `splits` names the ones it has, when it knows).
        """
        ...

    def is_live(self, episode_id: str) -> bool:
        """Whether an episode is open."""
        ...

    async def open(
        self, row: Mapping[str, Any] | None, surface: ClientAdvice = ...
    ) -> tuple[str, str | None]:
        """A new episode, reset from `row` (None: opened, not started); its id and first observation.

        Raises:
            TooManyEpisodesError: The server holds `max_episodes` already.
            ResetError: The environment refused the row (nothing is left open).
        """
        ...

    async def reset(self, episode_id: str, row: Mapping[str, Any], surface: ClientAdvice = ...) -> str | None:
        """Start the next episode on the same environment instance; its first observation.

        Raises:
            EpisodeNotFoundError: No live episode has that id.
        """
        ...

    async def call(self, episode_id: str, name: str, arguments: Any, surface: ClientAdvice = ...) -> str:
        """Validate and run one tool call, as `LocalSession.call_tool` does; its text.

        Raises:
            AgentEnvError: One of `MODEL_ERRORS` when the model can fix the call; any other when it cannot.
        """
        ...

    async def reward(self, episode_id: str, surface: ClientAdvice = ...) -> float:
        """The episode's reward, ending it first if it is still running."""
        ...

    async def score(self, episode_id: str, surface: ClientAdvice = ...) -> Score:
        """The episode's reward and its breakdown, ending it first if it is still running."""
        ...

    def ended(self, episode_id: str, surface: ClientAdvice = ...) -> str | None:
        """Why the episode has ended, or None while it runs or once it is closed."""
        ...

    def close(self, episode_id: str, surface: ClientAdvice = ...) -> None:
        """Close an episode and free it.

        Raises:
            EpisodeNotFoundError: No live episode has that id.
        """
        ...


class Surface(Protocol):
    """A wire protocol served beside MCP and the control API, on the same episodes under the same guard and limits."""

    def describe(self) -> str:
        """Where it is served, as `serve`'s start-up line says it (`"OpenEnv's at /openenv"`)."""
        ...

    def mount(self, episodes: Episodes, limits: Limits) -> Mount:
        """Its routes over `episodes`, and what the guard must know of them; `build_app` calls this once per app."""
        ...
