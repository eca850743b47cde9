"""A plain MCP client runs whole episodes with nothing but MCP: its session's first call starts the episode (from
the row in the endpoint's URL, or the server's default), `end_turn`'s result carries the reward, a new session
starts again, and a session that never says goodbye is ended, with its episode, after the MCP idle timeout."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import httpx
import pytest
from mcp import Client, MCPError

from agent_env.server.app import build_app

from .running import running
from .toy import ToyDesk

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "one-shot", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def text(result: Any) -> str:
    return result.content[0].text


async def test_a_plain_client_plays_an_episode_from_the_row_in_its_url_and_reads_the_reward(served_toy):
    _, url = served_toy
    async with Client(f"{url}/mcp?seed=40") as client:
        first = await client.call_tool("add", {"amount": 1})
        second = await client.call_tool("add", {"amount": 1})
        ended = await client.call_tool("end_turn", {})
        after = await client.call_tool("add", {"amount": 1})
    assert (text(first), text(second)) == ("total 41", "total 42")
    assert first.meta["agent-env/observation"] == "counter starts at 40"  # only the call that started it
    assert "agent-env/observation" not in second.meta and "agent-env/reward" not in second.meta
    assert ended.meta["agent-env/reward"] == 42.0
    assert ended.meta["agent-env/episode_id"] == first.meta["agent-env/episode_id"]
    assert after.is_error and text(after) == (
        "tool 'add' was not run: the episode has ended (end_turn was called) and takes no more calls"
    )
    async with Client(f"{url}/mcp?seed=40") as client:  # starting again: a new session
        again = await client.call_tool("add", {"amount": 1})
    assert (
        text(again) == "total 41" and again.meta["agent-env/episode_id"] != first.meta["agent-env/episode_id"]
    )


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        (
            "?seed=three",
            -32600,
            'ToyDesk could not start the episode of row {"seed": "three"} (in served episode *): its reset raised '
            "TypeError: seed must be an integer, not 'three'; connect with a row it can start from in the endpoint's "
            "URL (like /mcp?seed=3)",
        ),
        ("?seed=1&seed=2", -32600, "the MCP endpoint's URL query gives 'seed' twice; give each row key once"),
        (
            "?1x=2",
            -32600,
            "the MCP endpoint's URL query names '1x', which is not a dataset row key; give the row as key=value "
            "pairs, like /mcp?task_id=desk-v4/test/0003 or /mcp?seed=7",
        ),
    ],
)
async def test_a_row_in_the_url_the_environment_cannot_start_from_is_a_json_rpc_error(
    served_toy, query, code, message
):
    app, url = served_toy
    live = app.state.episodes.count()
    async with Client(f"{url}/mcp{query}") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("add", {"amount": 1})
    assert refused.value.error.code == code
    assert re.fullmatch(re.escape(message).replace(r"\*", "[0-9a-f]{32}"), str(refused.value)), str(
        refused.value
    )
    assert app.state.episodes.count() == live


async def test_without_a_row_the_desk_starts_from_the_first_test_task():
    with running(build_app("gridsim-desk")) as url:
        async with Client(f"{url}/mcp") as client:
            brief = await client.call_tool("desk_brief", {})
            ended = await client.call_tool("end_turn", {})
        async with Client(f"{url}/mcp?task_id=desk-v4/train/0003") as client:
            other = await client.call_tool("desk_brief", {})
        async with httpx.AsyncClient(base_url=url) as control:
            first_test = (await control.get("/datasets/test")).json()["rows"][0]["task_id"]
            opened = await control.post("/episodes", json={"task_id": first_test})
            expected = json.loads(
                (await control.post(f"/episodes/{opened.json()['episode_id']}/tools/desk_brief")).json()[
                    "result"
                ]
            )
    assert not brief.is_error and json.loads(text(brief))["date"] == expected["date"]
    assert brief.meta["agent-env/observation"].startswith("You are the day-ahead trader")
    assert 0.0 <= ended.meta["agent-env/reward"] <= 1.0
    assert json.loads(text(other))["date"] != expected["date"]


async def test_a_session_that_never_sends_delete_ends_with_its_episode_after_the_mcp_idle_timeout():
    app = build_app(ToyDesk, mcp_idle_timeout=0.5)
    with running(app) as url, httpx.Client(base_url=url, headers=HEADERS) as http:
        session = http.post("/mcp", json=INITIALIZE).headers["mcp-session-id"]
        headers = {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
        http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"amount": 1}},
        }
        assert (
            http.post("/mcp", json=call, headers=headers).json()["result"]["content"][0]["text"] == "total 1"
        )
        assert app.state.episodes.count() == 1
        deadline = time.monotonic() + 10
        while app.state.episodes.count() and time.monotonic() < deadline:  # the client just goes away
            time.sleep(0.1)
        assert app.state.episodes.count() == 0
        assert (
            http.post("/mcp", json=call, headers=headers).status_code == 404
        )  # the MCP spec's "session ended"


async def test_sessions_in_use_are_not_idle():
    app = build_app(ToyDesk, mcp_idle_timeout=0.5)
    with running(app) as url:
        async with Client(f"{url}/mcp") as client:
            for _ in range(4):
                assert not (await client.call_tool("add", {"amount": 1})).is_error
                await asyncio.sleep(0.3)
            assert not (await client.call_tool("sleep", {"seconds": 1.0})).is_error  # a call in flight
            assert text(await client.call_tool("add", {"amount": 0})) == "total 4"
