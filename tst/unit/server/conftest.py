"""Fixtures for the server tests: the toy environment's app, driven in process or over a real socket."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from agent_env.server.app import build_app

from .running import running
from .toy import RELEASE, ToyDesk

STACKS = {
    "httptools+uvloop": {"http": "httptools", "loop": "uvloop"},
    "h11+asyncio": {"http": "h11", "loop": "asyncio"},
}
"""The HTTP parsers and event loops `agent-env serve` runs: httptools on uvloop where they are installed (the server
extra installs them), h11 on asyncio's loop where they are not."""
if os.environ.get("AGENT_ENV_TEST_GRANIAN") == "1":
    STACKS["granian"] = {"server": "granian"}
    """granian, measured under the same app and not adopted (docs/scaling.md): on request, every test over a real
    socket runs on it too, as when it was measured (`AGENT_ENV_TEST_GRANIAN=1 make unit-test`)."""


@pytest.fixture(scope="module", params=STACKS.keys())
def stack(request: pytest.FixtureRequest) -> dict[str, str]:
    """Each HTTP stack `agent-env serve` can run, as `running`'s (and `uvicorn_options`') `http` and `loop`: a test
    over a real socket that takes this runs once on each, so both are held to the same limits."""
    chosen = STACKS[request.param]
    missing = [name for name in chosen.values() if importlib.util.find_spec(name) is None]
    if missing and missing != ["asyncio"]:
        pytest.skip(
            f"{', '.join(missing)} not installed (the server extra installs them); h11 is tested alone"
        )
    return chosen


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def release_hanging_tools() -> Iterator[None]:
    """Every `hang` call still waiting when a test ends returns, so no worker thread outlives its test for long."""
    RELEASE.clear()
    yield
    RELEASE.set()


@pytest.fixture
async def control() -> AsyncIterator[Callable[..., Any]]:
    """`await control(**build_app_options)`: an httpx client on a started toy app, in process (no socket)."""
    opened: list[tuple[Any, httpx.AsyncClient]] = []

    async def start(**options: Any) -> httpx.AsyncClient:
        app = build_app(ToyDesk, **options)
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://testserver")
        client.app = app  # type: ignore[attr-defined]
        opened.append((lifespan, client))
        return client

    yield start
    for lifespan, client in reversed(opened):
        await client.aclose()
        await lifespan.__aexit__(None, None, None)


@pytest.fixture(scope="module")
def served_toy() -> Iterator[tuple[Starlette, str]]:
    """One toy app on a real loopback socket for a whole test module: (app, base URL)."""
    app = build_app(ToyDesk, call_timeout=2.0)
    with running(app) as url:
        yield app, url
