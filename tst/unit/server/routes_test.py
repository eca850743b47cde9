"""`_routes.py`: the control API's routes, matched by splitting paths, answer every request as Starlette's own routes
with the same patterns do: the endpoint and its path parameters, 404, 405 with its Allow header, HEAD on a GET, and
the redirect of a path with a trailing slash."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from agent_env.server._routes import ControlRoutes

PATTERNS = [
    ("POST", "/episodes/{episode_id}/tools/{name:path}"),
    ("POST", "/episodes/{episode_id}/reset"),
    ("POST", "/episodes"),
    ("DELETE", "/episodes/{episode_id}"),
    ("GET", "/health"),
    ("GET", "/datasets/{split}"),
]

REQUESTS = [
    ("POST", "/episodes/abc/tools/add"),
    ("POST", "/episodes/abc/tools/a/b/c"),
    ("POST", "/episodes/abc/tools/"),
    ("POST", "/episodes/abc/tools"),
    ("POST", "/episodes//tools/add"),
    ("POST", "/episodes/abc/reset"),
    ("POST", "/episodes/abc/reset/"),
    ("GET", "/episodes/abc/reset"),
    ("POST", "/episodes"),
    ("POST", "/episodes/"),
    ("GET", "/episodes"),
    ("DELETE", "/episodes/abc"),
    ("POST", "/episodes/abc"),
    ("GET", "/health"),
    ("HEAD", "/health"),
    ("GET", "/health/"),
    ("POST", "/health"),
    ("GET", "/datasets/train"),
    ("GET", "/datasets/"),
    ("GET", "/datasets/a%2Fb"),
    ("GET", "/datasets/caf%C3%A9"),
    ("GET", "/"),
    ("GET", "/nowhere"),
    ("GET", "//health"),
    ("PUT", "/episodes/abc/tools/add"),
]


def echo(method: str, pattern: str) -> Any:
    async def endpoint(request: Request) -> Response:
        return JSONResponse({"route": [method, pattern], "params": request.path_params})

    return endpoint


def answers(app: Starlette) -> list[tuple[int, str, str | None, str | None]]:
    client = TestClient(app)
    seen = []
    for method, path in REQUESTS:
        answer = client.request(method, path, follow_redirects=False)
        allowed = answer.headers.get("allow")  # Starlette lists a route's methods from a set, in no set order
        allow = ", ".join(sorted(allowed.split(", "))) if allowed is not None else None
        seen.append((answer.status_code, answer.text, allow, answer.headers.get("location")))
    return seen


def test_split_routes_answer_every_request_as_starlettes_routes_do():
    by_regex = Starlette(routes=[Route(p, echo(m, p), methods=[m]) for m, p in PATTERNS])
    by_split = Starlette(routes=[ControlRoutes({(m, p): echo(m, p) for m, p in PATTERNS})])
    expected = answers(by_regex)
    assert answers(by_split) == expected
    assert {status for status, *_ in expected} >= {200, 404, 405, 307}  # the requests cover every outcome


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/episodes/abc/tools/a/b", {"episode_id": "abc", "name": "a/b"}),
        ("/episodes/abc/tools/", {"episode_id": "abc", "name": ""}),
    ],
)
def test_a_path_parameter_takes_the_rest_of_the_path(path, params):
    app = Starlette(routes=[ControlRoutes({(m, p): echo(m, p) for m, p in PATTERNS})])
    assert TestClient(app).post(path).json()["params"] == params
