"""The MCP endpoint over a real socket with the official `mcp` client: the published schemas byte for byte, one
episode per MCP session, and tool errors as `isError` results carrying the in-process message."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from agent_env.errors import AgentEnvError
from agent_env.server._bindings import MCP
from agent_env.server.app import build_app
from agent_env.session import LocalSession

from .running import running
from .toy import ToyDesk


async def eventually(condition: Any, within: float = 10.0) -> bool:
    """Whether `condition()` holds within `within` seconds (checked every 20 ms)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


pytestmark = pytest.mark.anyio

GOOD_OFFERS = {"offers": [{"hour": 7, "mw": 5}, {"hour": 8, "mw": 2.5, "price": 30}]}
BAD_OFFERS = {"offers": [{"hour": 30, "mw": -1, "price": "cheap"}, {"mw": 1}]}


@contextlib.asynccontextmanager
async def mcp_session(
    url: str, headers: dict[str, str] | None = None, seen: dict[str, Any] | None = None
) -> AsyncIterator[tuple[ClientSession, dict[str, Any]]]:
    """An initialized official MCP client session, and a dict recording the HTTP statuses and MCP session id."""
    seen = seen if seen is not None else {}
    seen.setdefault("statuses", [])

    async def record(response: httpx2.Response) -> None:
        seen["statuses"].append(response.status_code)
        if "mcp-session-id" in response.headers:
            seen["id"] = response.headers["mcp-session-id"]

    http = httpx2.AsyncClient(headers=headers or {}, timeout=30, event_hooks={"response": [record]})
    async with (
        http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session, seen


def in_process(name: str, arguments: dict[str, Any], *, end_first: bool = False) -> tuple[bool, str]:
    """(is_error, text) of the same call on a fresh in-process session, reset with an empty row, whose messages
    tell its user to start an episode as an MCP client does."""
    session = LocalSession(ToyDesk(), start_hint=MCP.start_hint)
    session.reset()
    if end_first:
        session.call_tool("end_turn", {})
    try:
        return False, session.call_tool(name, arguments)
    except AgentEnvError as error:
        return True, str(error)


def outcome(result: Any) -> tuple[bool, str]:
    assert len(result.content) == 1
    return result.is_error, result.content[0].text


async def test_every_listed_input_schema_is_the_published_one_byte_for_byte(served_toy):
    _, url = served_toy
    async with mcp_session(url) as (session, _):
        listed = (await session.list_tools()).tools
    published = ToyDesk.tools.published
    assert [tool.name for tool in listed] == [tool["name"] for tool in published]
    for tool, expected in zip(listed, published, strict=True):
        assert json.dumps(tool.input_schema) == json.dumps(expected["inputSchema"])
        assert tool.description == expected["description"]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("submit", GOOD_OFFERS),
        ("submit", BAD_OFFERS),
        ("submit", {"offers": [{"hour": 1, "mw": 1}, {"hour": 1, "mw": 2}]}),
        ("submit", {"offers": [], "extra": 1}),
        ("add", {"amount": "two"}),
        ("echo", {"text": "héllo"}),
        ("nope", {}),
    ],
)
async def test_a_call_answers_exactly_what_it_answers_in_process(served_toy, name, arguments):
    _, url = served_toy
    async with mcp_session(url) as (session, _):
        result = await session.call_tool(name, arguments)
    assert outcome(result) == in_process(name, arguments)


async def test_invalid_nested_arguments_are_an_is_error_result_the_model_can_read(served_toy):
    _, url = served_toy
    async with mcp_session(url) as (session, _):
        result = await session.call_tool("submit", BAD_OFFERS)
    assert result.is_error
    assert result.content[0].text.startswith(
        "Invalid arguments for tool 'submit'; fix these and call it again:\n"
    )
    assert "offers[0].hour: 30 is greater than the maximum of 24" in result.content[0].text


async def test_a_call_after_end_turn_is_the_in_process_episode_state_error(served_toy):
    _, url = served_toy
    async with mcp_session(url) as (session, _):
        await session.call_tool("end_turn", {})
        result = await session.call_tool("add", {"amount": 1})
    assert outcome(result) == in_process("add", {"amount": 1}, end_first=True)
    assert outcome(result) == (
        True,
        "tool 'add' was not run: the episode has ended (end_turn was called) and takes no more calls",
    )


async def test_each_mcp_session_has_its_own_episode(served_toy):
    _, url = served_toy
    async with mcp_session(url) as (first, _), mcp_session(url) as (second, _):
        one = await first.call_tool("add", {"amount": 1})
        hundred = await second.call_tool("add", {"amount": 100})
        again = await first.call_tool("add", {"amount": 1})
    assert [one.content[0].text, hundred.content[0].text, again.content[0].text] == [
        "total 1",
        "total 100",
        "total 2",
    ]
    assert one.meta["agent-env/episode_id"] == again.meta["agent-env/episode_id"]
    assert one.meta["agent-env/episode_id"] != hundred.meta["agent-env/episode_id"]


async def test_an_mcp_session_starts_an_episode_from_a_row_and_its_reward_is_read_by_id(served_toy):
    app, url = served_toy
    async with mcp_session(url) as (session, seen), httpx.AsyncClient(base_url=url) as control:
        first = (await session.call_tool("add", {"amount": 1})).meta["agent-env/episode_id"]
        opened = await control.post("/episodes", json={"seed": 40}, headers={"Mcp-Session-Id": seen["id"]})
        episode = opened.json()["episode_id"]
        result = await session.call_tool("add", {"amount": 2})
        assert result.content[0].text == "total 42"
        assert result.meta["agent-env/episode_id"] == episode
        assert (await control.post(f"/episodes/{episode}/reward")).json() == {"reward": 42.0}
        assert (
            await control.post(f"/episodes/{first}/reward")
        ).status_code == 404  # the one it replaced is closed
        live = app.state.episodes.count()
    # The client's DELETE of its MCP session closes its episode; the client does not wait for the answer, so
    # neither does the server's side of the test: it waits for the count, within a generous bound.
    assert await eventually(lambda: app.state.episodes.count() == live - 1)


async def test_the_default_client_falls_back_to_the_handshake_and_keeps_its_episode(served_toy):
    _, url = served_toy
    async with Client(f"{url}/mcp") as client:
        assert client.protocol_version == "2025-11-25"
        await client.call_tool("add", {"amount": 3})
        result = await client.call_tool("add", {"amount": 3})
    assert result.content[0].text == "total 6"


async def test_a_sessionless_client_can_list_but_not_call(served_toy):
    _, url = served_toy
    async with Client(f"{url}/mcp", mode="2026-07-28") as client:
        assert [tool.name for tool in (await client.list_tools()).tools][:2] == ["add", "submit"]
        with pytest.raises(
            MCPError, match="this server keeps one episode per MCP session, so a tool call needs"
        ):
            await client.call_tool("add", {"amount": 1})


async def test_a_hung_tool_fails_as_a_tool_result_and_its_episode_is_then_gone():
    with running(build_app(ToyDesk, call_timeout=0.3)) as url:
        async with mcp_session(url) as (session, _):
            hung = await session.call_tool("hang", {"seconds": 30})
            after = await session.call_tool("add", {"amount": 1})
        async with mcp_session(url) as (session, _):
            fresh = await session.call_tool("add", {"amount": 1})
    episode = hung.meta["agent-env/episode_id"]
    assert outcome(hung) == (
        True,
        f"tool 'hang' did not finish within the server's call timeout of 0.3 s; episode '{episode}' was closed "
        "because its state is unknown: open a new MCP session (connect again) to start another",
    )
    assert after.is_error
    assert after.content[0].text.startswith(f"episode '{episode}' expired or unknown")
    assert outcome(fresh) == (False, "total 1")


async def test_the_mcp_endpoint_needs_the_token_too():
    with running(build_app(ToyDesk, token="tok")) as url:
        async with mcp_session(url, {"Authorization": "Bearer tok"}) as (session, _):
            assert (await session.call_tool("add", {"amount": 1})).content[0].text == "total 1"
        seen: dict[str, Any] = {}
        with pytest.raises(Exception, match="unhandled errors"):  # the SDK's error for a refused request
            async with mcp_session(url, seen=seen):
                pass
    assert seen["statuses"] and set(seen["statuses"]) == {401}


async def test_failures_that_are_not_the_models_are_mcp_errors_that_say_what_to_do():
    with running(build_app(ToyDesk, mcp_row={"seed": "three"})) as url:
        async with mcp_session(url) as (session, _):
            with pytest.raises(MCPError) as refused:
                await session.call_tool("add", {"amount": 1})
    assert refused.value.error.code == -32603  # the operator's default row
    assert re.fullmatch(
        re.escape(
            'ToyDesk could not start the episode of row {"seed": "three"} (in served episode *): its reset raised '
            "TypeError: seed must be an integer, not 'three'; name a row in the endpoint's URL (like /mcp?seed=3), "
            "or ask the server's operator for a default row (agent-env serve --mcp-row '{...}')"
        ).replace(r"\*", "[0-9a-f]{32}"),
        str(refused.value),
    ), str(refused.value)
    with running(build_app(ToyDesk, max_episodes=1)) as url:
        async with httpx.AsyncClient(base_url=url) as control, mcp_session(url) as (session, _):
            held = (await control.post("/episodes", json={})).json()["episode_id"]
            with pytest.raises(MCPError) as crowded:
                await session.call_tool("add", {"amount": 1})
            await control.delete(f"/episodes/{held}")
    assert str(crowded.value) == (
        "the server already holds 1 live episodes, its limit: end MCP sessions you no longer use (DELETE /mcp), "
        "wait for idle ones to expire, or start the server with a higher max_episodes"
    )


async def test_a_tool_that_raises_is_an_is_error_result_with_the_in_process_text_and_the_session_goes_on(
    served_toy,
):
    _, url = served_toy
    async with mcp_session(url) as (session, _):
        crashed = await session.call_tool("crash", {})
        after = await session.call_tool("add", {"amount": 1})
    assert outcome(crashed) == in_process("crash", {}) == (True, "tool 'crash' failed: KeyError: 'boom'")
    assert outcome(after) == (False, "total 1")


async def test_arguments_past_the_body_limits_are_an_is_error_result_and_the_session_goes_on():
    with running(build_app(ToyDesk, max_body_bytes=20_000, max_body_values=1_000)) as url:
        async with mcp_session(url) as (session, seen):
            too_large = await session.call_tool("echo", {"text": "x" * 30_000})
            too_many = await session.call_tool("submit", {"offers": [{"hour": 1, "mw": 1}] * 500})
            fine = await session.call_tool("add", {"amount": 2})
    assert outcome(too_large) == (
        True,
        "the request body is larger than the server's limit of 20000 bytes: send smaller arguments",
    )
    assert outcome(too_many)[0] and outcome(too_many)[1].startswith("the request body holds about 1")
    assert outcome(too_many)[1].endswith(
        "JSON values (counted from its commas and brackets), more than the server's limit of 1000: send smaller arguments"
    )
    assert outcome(fine) == (False, "total 2")
    assert set(seen["statuses"]) <= {200, 202}  # nothing the client would throw on


async def test_a_request_far_past_the_limit_is_still_answered_with_its_id_and_one_without_an_id_gets_413():
    with running(build_app(ToyDesk, max_body_bytes=1_000)) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            answers = []
            for size in (
                5_000,
                3_000_000,
            ):  # 5 and 3,000 times the limit: read to its end, only its ends kept
                arguments = {"text": "x" * size}
                body = {
                    "jsonrpc": "2.0",
                    "id": 7,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": arguments},
                }
                answers.append(await http.post("/mcp", json=body))
            anonymous = b'{"jsonrpc":"2.0","method":"tools/call","params":{"text":"' + b"x" * 5_000 + b'"}}'
            no_id = await http.post("/mcp", content=anonymous, headers={"Content-Type": "application/json"})
    for answer in answers:
        assert answer.status_code == 200
        assert answer.json() == {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {
                "content": [
                    {
                        "type": "text",
                        "text": "the request body is larger than the server's limit of 1000 bytes: send smaller arguments",
                    }
                ],
                "isError": True,
            },
        }
    assert no_id.status_code == 413  # nothing to answer it with: as the MCP SDK answers
    assert (
        no_id.json()["error"]["message"] == "the request body is larger than the server's limit of 1000 bytes"
    )
