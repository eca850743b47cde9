"""The seam for other wire protocols (`agent_env/server/surface.py`): a surface's routes are served on the app's
episodes, under its guard, with its lifespan, and `serve`'s start-up line names it."""

from __future__ import annotations

import ast
import contextlib
import inspect
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

import agent_env.server.surface as seam
from agent_env.server._episodes import EpisodeRegistry
from agent_env.server._serve import announcement
from agent_env.server.app import build_app
from agent_env.server.surface import Dialect, Episodes, Limits, Mount, Surface

from .toy import ToyDesk


class Counting:
    """A surface of one page that counts the app's live episodes, with a health check and a lifespan of its own."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.limits: Limits | None = None

    def describe(self) -> str:
        return "counting at /count"

    def mount(self, episodes: Episodes, limits: Limits) -> Mount:
        self.limits = limits

        async def count(request: Request) -> Response:
            return JSONResponse({"episodes": episodes.count()})

        async def health(request: Request) -> Response:
            return JSONResponse({"ok": True})

        @contextlib.asynccontextmanager
        async def lifespan() -> AsyncIterator[None]:
            self.events.append("started")
            yield
            self.events.append("stopped")

        return Mount(
            routes=[
                Route("/count", count),
                Route("/count/health", health),
                Route("/count/rpc", count, methods=["POST"]),
            ],
            open_paths=frozenset({"/count/health"}),
            rpc_paths={"/count/rpc": Dialect(tool_results=True, anonymous_status=413)},
            lifespan=lifespan,
        )


def test_a_surface_is_served_on_the_apps_episodes_under_its_guard_and_lifespan():
    surface = Counting()
    surfaces: list[Surface] = [surface]  # a Protocol: nothing to inherit, mypy checks the shape
    app = build_app(ToyDesk, token="s3cret", max_body_bytes=100, surfaces=surfaces)
    assert surface.limits is not None and surface.limits.token == "s3cret"
    auth = {"Authorization": "Bearer s3cret"}
    with TestClient(app) as client:
        assert surface.events == ["started"]
        assert client.get("/count").status_code == 401  # the guard's token, on the surface's route too
        assert client.get("/count/health").json() == {"ok": True}  # its open path
        client.post("/episodes", json={}, headers=auth)
        assert client.get("/count", headers=auth).json() == {"episodes": 1}  # the control API's episodes
        big: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"x": "y" * 200}}
        refused = client.post("/count/rpc", json=big, headers=auth)
        assert refused.status_code == 200 and refused.json()["result"]["isError"]  # answered in its dialect
    assert surface.events == ["started", "stopped"]


def test_without_surfaces_none_of_their_routes_is_served():
    with TestClient(build_app(ToyDesk)) as client:
        assert client.get("/count").status_code == 404


def test_serves_start_up_line_names_each_surface():
    line = announcement(ToyDesk, "127.0.0.1", 8000, surfaces=[Counting()])
    assert line.endswith("AgentEnv.connect('http://127.0.0.1:8000'), counting at /count")


def test_the_seam_exports_exactly_what_a_surface_may_use_each_with_a_docstring():
    assert seam.__all__ == [
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
    module = ast.parse(inspect.getsource(seam))
    documented_constants = {
        target.id
        for statement, following in zip(module.body, module.body[1:], strict=False)
        if isinstance(statement, ast.Assign) and isinstance(following, ast.Expr)
        and isinstance(following.value, ast.Constant) and isinstance(following.value.value, str)
        for target in statement.targets if isinstance(target, ast.Name)
    }  # fmt: skip
    for name in seam.__all__:
        value = getattr(seam, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            doc = inspect.getdoc(value) or ""
            assert doc and not doc.startswith(f"{name}("), f"{name} has no docstring of its own"
        else:
            assert name in documented_constants, f"{name} has no docstring below it in surface.py"


def test_the_registrys_public_face_is_documented_and_the_registry_has_every_member_of_it():
    members = [name for name in vars(seam.Episodes) if not name.startswith("_")]
    assert {"open", "reset", "call", "reward", "ended", "close", "is_live", "environment", "limits"} <= set(
        members
    )
    registry = EpisodeRegistry(ToyDesk, {}, Limits())
    for name in members:
        assert inspect.getdoc(getattr(seam.Episodes, name)), f"Episodes.{name} has no docstring"
        assert hasattr(registry, name), f"the registry has no {name}, which Episodes promises surfaces"
