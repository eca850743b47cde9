"""Fixtures for the server tests: the toy environment's app, driven in process or over a real socket."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from agent_env.server.app import build_app

from .running import running
from .toy import RELEASE, ToyDesk


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
