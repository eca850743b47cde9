"""The control API's routes as one Starlette route that matches by splitting the path, not by trying each route's
regular expression in turn.

Starlette matches a request against every route in order, each with a regular expression, then wraps the endpoint
in two more layers (its request/response adapter and its exception handling). For a tool call, the control API's
most frequent request and its seventh route, that was about a fifth of what the server spent on the call outside
the tool. This route finds the endpoint from the path's segments and calls it directly; the answers are the same,
404 and 405 included (the router still answers those, through the app's handlers), as are the paths a trailing
slash redirects.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette._utils import get_route_path
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import Receive, Scope, Send

Endpoint = Callable[[Request], Awaitable[Response]]


class ControlRoutes(BaseRoute):
    """The control API's routes: `(method, pattern) -> endpoint`, where a pattern's segments are literal words,
    `{name}` (one segment) or, last, `{name:path}` (the rest of the path, slashes and all)."""

    def __init__(self, routes: Mapping[tuple[str, str], Endpoint]) -> None:
        self._routes: dict[tuple[str, ...], dict[str, Endpoint]] = {}
        for (method, pattern), endpoint in routes.items():
            methods = self._routes.setdefault(tuple(pattern[1:].split("/")), {})
            methods[method] = endpoint
            if method == "GET":
                methods["HEAD"] = endpoint

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        found = self._find(get_route_path(scope))
        if found is None:
            return Match.NONE, {}
        methods, parameters = found
        endpoint = methods.get(scope["method"])
        child: dict[str, Any] = {
            "endpoint": endpoint,
            "path_params": {**scope.get("path_params", {}), **parameters},
        }
        if endpoint is None:
            child["allowed"] = ", ".join(methods)
            return Match.PARTIAL, child
        return Match.FULL, child

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = scope["endpoint"]
        if endpoint is None:
            raise HTTPException(status_code=405, headers={"Allow": scope.pop("allowed")})
        response = await endpoint(Request(scope, receive, send))
        await response(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        from starlette.routing import NoMatchFound

        raise NoMatchFound(name, path_params)

    def _find(self, path: str) -> tuple[dict[str, Endpoint], dict[str, str]] | None:
        if not path.startswith("/"):
            return None
        segments = path[1:].split("/")
        for pattern, methods in self._routes.items():
            parameters = _bind(pattern, segments)
            if parameters is not None:
                return methods, parameters
        return None


def _bind(pattern: tuple[str, ...], segments: list[str]) -> dict[str, str] | None:
    """The path parameters `pattern` binds in a path's `segments`, or None if it does not match it (as Starlette's
    `{name}` matches one non-empty segment, and `{name:path}` the rest of the path, even an empty rest)."""
    parameters: dict[str, str] = {}
    for index, part in enumerate(pattern):
        if part.endswith(":path}"):
            if len(segments) <= index:
                return None
            parameters[part[1:-6]] = "/".join(segments[index:])
            return parameters
        if index >= len(segments):
            return None
        segment = segments[index]
        if part.startswith("{"):
            if not segment:
                return None
            parameters[part[1:-1]] = segment
        elif segment != part:
            return None
    return parameters if len(segments) == len(pattern) else None
