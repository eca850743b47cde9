"""`POST /episodes` with an `Mcp-Session-Id` takes the id on the caller's word: ids that no MCP session ever uses
do not pile up, because their bindings are forgotten once idle, like any other."""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.anyio


async def test_bindings_for_made_up_mcp_session_ids_are_forgotten_once_idle(control):
    client = await control(mcp_idle_timeout=0.5)
    episodes, bindings = client.app.state.episodes, client.app.state.sessions
    for index in range(50):
        answer = await client.post("/episodes", json={}, headers={"Mcp-Session-Id": f"made-up-{index}"})
        assert answer.status_code == 201
        assert (await client.delete(f"/episodes/{answer.json()['episode_id']}")).status_code == 204
    assert bindings.count() == 50
    await asyncio.sleep(1.3)  # twice the MCP idle timeout
    await client.post("/episodes", json={}, headers={"Mcp-Session-Id": "one-more"})
    assert bindings.count() == 1
    assert episodes.count() == 1
