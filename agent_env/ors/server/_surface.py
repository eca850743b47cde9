"""The Open Reward Standard's routes at the server's root, beside MCP and the control API: a `Surface`.

ORS clients address a server by its root: the SDK client (aiohttp) joins its leading-slash paths to the base URL's
origin, so a path in the base URL is lost, and a surface under a prefix could not be reached. The routes are the
SDK server's: `/create_session`, `/create`, `/ping`, `/delete`, `/delete_session`, `/list_environments`, `/version`,
and, per environment, `/{env}/tools`, `/{env}/splits`, `/{env}/tasks`, `/{env}/prompt`, `/{env}/call`, ... (the
variant form); the SDK client asked for an environment without a variant (TRL's adapter does) sends them bare:
`/tools`, `/splits`, `/call`, ..., and they are served bare too.

One path is the control API's as well: `GET /tools`. The SDK client sends a session id (`X-Session-ID`) with every
request, its listings included (each in a session of its own), and `AgentEnv.connect` never does; so a `GET /tools`
with `X-Session-ID` is ORS's, and one without is the control API's (`/health` answers both alike). Every request
passes the server's guard, which takes the token in `X-API-Key` too, the one header the SDK client sends its key in.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from agent_env.ors import _wire as wire
from agent_env.ors.server._routes import ORSRoutes, answered
from agent_env.server.surface import Episodes, Limits, Mount

ROOT_ROUTES = ("create_session", "create", "ping", "delete", "delete_session", "list_environments", "version")
TAKEN = frozenset({*ROOT_ROUTES, "mcp", "health", "tools", "datasets", "episodes", "openenv"})
"""First path segments an environment's name cannot be: ORS's own root routes, and the server's other surfaces'."""
_SESSION_HEADER = wire.SESSION_HEADER.lower().encode()


class ORSSurface:
    """The Open Reward Standard's routes at the server's root, for `build_app(environment, surfaces=[ORSSurface()])`:
    a `Surface`. Every agent_env environment is then an ORS environment: its tools listed with their published
    schemas, its dataset splits as ORS splits and their rows as tasks, its reward in the result of the call that ends
    each episode.

    Args:
        name: The environment's name on the wire (`/{name}/tools`, `env_name` in `/create`); default: its class's
            name, lower-cased, as the SDK server names its environments. Matched without regard to case.

    Raises:
        ValueError: `name` is not one path segment, or is one of the server's own routes.
    """

    def __init__(self, name: str | None = None) -> None:
        if name is not None:
            check_name(name)
        self.name = name

    def describe(self) -> str:
        """Where the surface is served, for `serve`'s start-up line."""
        return f"ORS at the root (environment {self.name!r})" if self.name else "ORS at the root"

    def mount(self, episodes: Episodes, limits: Limits) -> Mount:
        """The surface's routes over `episodes`; its `GET /tools` claims only requests with a session id."""
        name = self.name or check_name(episodes.environment.__name__.lower())
        routes = ORSRoutes(episodes, name)
        return Mount(
            routes=route_table(routes),
            shared_routes=[SessionRoute("/tools", answered(routes.tools), methods=["GET"])],
            token_headers=frozenset({wire.API_KEY_HEADER.lower()}),
        )

    def __repr__(self) -> str:
        return f"ORSSurface({self.name!r})" if self.name else "ORSSurface()"


def check_name(name: str) -> str:
    """`name`, if it can name the environment on the wire; else `ValueError` saying why."""
    if not (
        isinstance(name, str) and name and "/" not in name and name.isprintable() and name.strip() == name
    ):
        raise ValueError(f"an ORS environment's name must be one path segment, not {name!r}")
    if name.lower() in TAKEN:
        raise ValueError(
            f"an ORS environment cannot be named {name!r}, a route of the server's own ({', '.join(sorted(TAKEN))}): "
            "name it with ORSSurface(name=...)"
        )
    return name


def route_table(routes: ORSRoutes) -> list[BaseRoute]:
    """Every ORS route: at the root, per environment (`/{env_name}/...`), and bare (but `/tools`, shared)."""
    root = [
        Route("/create_session", answered(routes.create_session), methods=["POST"]),
        Route("/create", answered(routes.create), methods=["POST"]),
        Route("/ping", answered(routes.ping), methods=["POST"]),
        Route("/delete", answered(routes.delete), methods=["POST"]),
        Route("/delete_session", answered(routes.delete), methods=["POST"]),
        Route("/list_environments", answered(routes.list_environments), methods=["GET"]),
        Route("/version", answered(routes.version), methods=["GET"]),
    ]
    per_environment = {
        "tools": (routes.tools, "GET"),
        "task_tools": (routes.task_tools, "GET"),
        "splits": (routes.splits, "GET"),
        "prompt": (routes.prompt, "GET"),
        "messages": (routes.messages, "GET"),
        "tasks": (routes.tasks, "POST"),
        "num_tasks": (routes.num_tasks, "POST"),
        "task": (routes.task, "POST"),
        "task_range": (routes.task_range, "POST"),
        "call": (routes.call, "POST"),
    }
    bare = [
        Route(f"/{suffix}", answered(endpoint), methods=[method])
        for suffix, (endpoint, method) in per_environment.items()
        if suffix != "tools"
    ]
    named = [
        Route(f"/{{env_name}}/{suffix}", answered(endpoint), methods=[method])
        for suffix, (endpoint, method) in per_environment.items()
    ]
    return [*root, *bare, *named]


class SessionRoute(Route):
    """A route that claims only the requests carrying a session id (`X-Session-ID`), which ORS clients send and the
    control API's clients never do; any other request to its path goes on to the routes after it."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is Match.NONE or not any(name.lower() == _SESSION_HEADER for name, _ in scope["headers"]):
            return Match.NONE, {}
        return match, child


__all__ = ["ORSSurface", "SessionRoute", "check_name", "route_table"]
