"""The OpenEnv client (`openenv/client.py`): transcripts against frames recorded from OpenEnv's real servers."""

from __future__ import annotations

import json
import pickle
import time
from typing import Any

import pytest

from agent_env import AgentEnv, Environment
from agent_env.errors import (
    EpisodeEndedError,
    EpisodeNotStartedError,
    InfrastructureFailedError,
    SessionClosedError,
    TimedOutEpisodeError,
    ToolArgumentError,
    ToolDefinitionError,
    ToolError,
    UnknownToolError,
)
from agent_env.openenv import _wire as wire
from agent_env.openenv.client import OpenEnvProvider, WebSocketTransport
from agent_env.server.errors import (
    CallTimeoutError,
    DatasetNotFoundError,
    EpisodeNotFoundError,
    InvalidRequestError,
    ResetError,
    ServerUnavailableError,
    TooManyEpisodesError,
)

from .recorded import RECORDED
from .transports import Scripted

URL = "http://127.0.0.1:8000"
PLACE = {"orders": [{"side": "buy", "qty": 3}]}
PLACE_ORDERS_SCHEMA = {
    "type": "object",
    "properties": {
        "orders": {
            "type": "array",
            "description": "The orders, at least one.",
            "items": {
                "type": "object",
                "properties": {
                    "side": {"type": "string", "description": "Buy or sell.", "enum": ["buy", "sell"]},
                    "qty": {
                        "type": "integer",
                        "description": "How many units.",
                        "minimum": 1,
                        "maximum": 100,
                    },
                    "price": {
                        "description": "Limit price; none for market.",
                        "anyOf": [{"type": "number"}, {"type": "null"}],
                        "default": None,
                    },
                },
                "required": ["side", "qty"],
            },
        },
        "note": {"type": "string", "description": "A note to keep.", "default": ""},
    },
    "required": ["orders"],
    "additionalProperties": False,
}


def ledger(version: str, **overrides: str | Exception) -> Scripted:
    """A ledger server answering with the frames recorded from OpenEnv `version` (or the overrides)."""
    frames = {**RECORDED[version], **overrides}

    def answer(message: dict[str, Any]) -> str | Exception:
        if message["type"] == "reset":
            return frames["reset"]
        action = message["data"]
        if action["type"] == "list_tools":
            return frames["list_tools"]
        name, arguments = action["tool_name"], action["arguments"]
        if name == "place_orders":
            return frames["place"] if arguments["orders"] else frames["place_empty"]
        return frames[name]

    return Scripted(answer)


def provider(transport: Scripted, **options: Any) -> OpenEnvProvider:
    return OpenEnvProvider(URL, transport=transport, **options)


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "step", "data": {"type": "call_tool", "tool_name": name, "arguments": arguments}}


LIST_TOOLS = {"type": "step", "data": {"type": "list_tools"}}


@pytest.mark.parametrize("version", ["0.3.0", "0.10.0"])
def test_the_tools_are_the_servers_schemas_normalized_with_end_turn_added(version):
    tools = provider(ledger(version)).tools()
    assert [tool["name"] for tool in tools] == ["place_orders", "submit", "end_turn"]
    assert tools[0] == {
        "name": "place_orders",
        "description": "Place orders in the book.",
        "inputSchema": PLACE_ORDERS_SCHEMA,
    }
    assert json.dumps(tools[0]["inputSchema"]) == json.dumps(
        PLACE_ORDERS_SCHEMA
    )  # one key order, either version
    assert tools[2] == Environment.tools["end_turn"].published()


def test_a_listing_that_names_the_schema_inputschema_is_read_the_same():
    listing = json.loads(RECORDED["0.10.0"]["list_tools"])
    for tool in listing["data"]["observation"]["tools"]:
        tool["inputSchema"] = tool.pop("input_schema")
    tools = provider(ledger("0.10.0", list_tools=json.dumps(listing))).tools()
    assert tools[0]["inputSchema"] == PLACE_ORDERS_SCHEMA


def listing_of(*tools: dict[str, Any]) -> str:
    return wire.dumps(wire.observation_message({"tools": list(tools)}))


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        (
            {"name": "get-weather", "input_schema": {"type": "object"}},
            "tool name 'get-weather' is not a Python identifier",
        ),
        ({"name": "reward", "input_schema": {"type": "object"}}, "tool name 'reward' is reserved"),
        ({"name": "_hidden", "input_schema": {"type": "object"}}, "starts with '_', which TRL skips"),
        (
            {"name": "f", "input_schema": {"type": "string"}},
            'its input schema must be a JSON object with "type": "object"',
        ),
        ({"name": "f"}, 'its input schema must be a JSON object with "type": "object"'),
        (
            {"name": "f", "input_schema": {"type": "object", "properties": {"x": {"type": "nope"}}}},
            "not a valid JSON Schema",
        ),
        (
            {
                "name": "f",
                "input_schema": {
                    "type": "object",
                    "properties": {"x": {"$ref": "#/$defs/Node"}},
                    "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
                },
            },
            "recursive",
        ),
        ({"description": "no name"}, "a listed tool has no name"),
    ],
)
def test_a_tool_agent_env_cannot_hold_calls_to_is_refused_when_the_provider_is_built(tool, message):
    server = Scripted(lambda message: listing_of(tool))
    with pytest.raises(ToolDefinitionError) as refused:
        provider(server)
    assert str(refused.value).startswith(
        f"the OpenEnv server at {URL} publishes a tool that agent_env cannot"
    )
    assert message in str(refused.value)


def test_a_listing_that_names_a_tool_twice_is_refused():
    tool = {"name": "f", "description": "", "input_schema": {"type": "object"}}
    with pytest.raises(ToolDefinitionError, match=r"lists tool names twice: \['f'\]"):
        provider(Scripted(lambda message: listing_of(tool, tool)))


def test_an_environment_that_takes_no_mcp_actions_is_refused_with_what_to_do():
    refusal = wire.dumps(wire.error_message("Invalid message", "VALIDATION_ERROR"))
    with pytest.raises(ToolDefinitionError) as refused:
        provider(Scripted(lambda message: refusal))
    assert str(refused.value) == (
        f"the OpenEnv environment at {URL} takes no MCP tool calls (it refused list_tools: Invalid message); "
        "AgentEnv.openenv trains on OpenEnv environments with MCP tools"
    )


@pytest.mark.parametrize("version", ["0.3.0", "0.10.0"])
def test_an_episode_sends_the_row_and_validated_calls_and_takes_the_last_reward(version):
    server = ledger(version)
    session = provider(server).open()
    observation = session.reset(target=3, prompt=[{"role": "user", "content": "trade"}])
    assert observation == (None if version == "0.3.0" else '{"metadata":{"target":3}}')
    assert session.call_tool("place_orders", PLACE) == "1 orders in the book"
    assert session.call_tool("submit", {"total": 3}) == "submitted 3"
    assert session.reward() == 1.0
    assert server.sent[1] == [  # the first connection listed the tools; the session has its own
        {"type": "reset", "data": {"target": 3, "prompt": [{"role": "user", "content": "trade"}]}},
        call("place_orders", PLACE),
        call("submit", {"total": 3}),
    ]


def test_a_call_that_breaks_the_schema_is_refused_here_with_the_in_process_message_and_never_sent():
    server = ledger("0.10.0")
    session = provider(server).open()
    session.reset(target=3)
    with pytest.raises(ToolArgumentError) as refused:
        session.call_tool("place_orders", {"orders": [{"side": "hold", "qty": 300}], "extra": 1})
    assert str(refused.value) == (
        "Invalid arguments for tool 'place_orders'; fix these and call it again:\n"
        '- orders[0].side: expected one of "buy", "sell"; got "hold"\n'
        "- orders[0].qty: 300 is greater than the maximum of 100\n"
        "- extra: unknown argument; this tool takes note, orders"
    )
    with pytest.raises(ToolArgumentError) as refused:
        session.call_tool("place_orders", {"orders": [{"side": "hold", "qty": 300}]})
    assert str(refused.value) == (
        "Invalid arguments for tool 'place_orders'; fix these and call it again:\n"
        '- orders[0].side: expected one of "buy", "sell"; got "hold"\n'
        "- orders[0].qty: 300 is greater than the maximum of 100"
    )
    with pytest.raises(
        UnknownToolError, match='unknown tool "nope"; the tools are: place_orders, submit, end_turn'
    ):
        session.call_tool("nope", {})
    assert server.sent[1] == [{"type": "reset", "data": {"target": 3}}]


def test_calls_before_reset_and_after_the_episode_ended_get_the_in_process_errors_and_send_nothing():
    server = ledger("0.10.0")
    session = provider(server).open()
    with pytest.raises(EpisodeNotStartedError, match="tool 'submit' was called before the episode started"):
        session.call_tool("submit", {"total": 3})
    with pytest.raises(EpisodeNotStartedError, match="no episode to score"):
        session.reward()
    session.reset()
    session.call_tool("submit", {"total": 3})  # done: true
    with pytest.raises(EpisodeEndedError) as ended:
        session.call_tool("place_orders", PLACE)
    assert str(ended.value) == (
        "tool 'place_orders' was not run: the episode has ended (the server answered tool 'submit' with done: "
        "true) and takes no more calls"
    )
    assert server.messages() == [LIST_TOOLS, {"type": "reset", "data": {}}, call("submit", {"total": 3})]


@pytest.mark.parametrize("version", ["0.3.0", "0.10.0"])
def test_a_tool_error_from_the_server_is_raised_with_the_servers_message(version):
    session = provider(ledger(version)).open()
    session.reset()
    with pytest.raises(ToolError) as failed:
        session.call_tool("place_orders", {"orders": []})
    assert type(failed.value) is ToolError
    assert str(failed.value) == "Error calling tool 'place_orders': orders: send at least one order"


@pytest.mark.parametrize(
    ("error_type", "raised"),
    [
        ("invalid_args", ToolArgumentError),
        ("tool_not_found", UnknownToolError),
        ("timeout", CallTimeoutError),
    ],
)
def test_each_error_type_is_raised_as_its_in_process_class(error_type, raised):
    failed = wire.dumps(wire.observation_message(wire.call_error("submit", error_type, "why")))
    session = provider(ledger("0.10.0", submit=failed)).open()
    session.reset()
    with pytest.raises(raised) as caught:
        session.call_tool("submit", {"total": 1})
    assert type(caught.value) is raised and str(caught.value) == "why"


def test_a_result_marked_is_error_is_a_tool_error_with_its_text():
    result = {**wire.mcp_result("bad total"), "is_error": True}
    frame = wire.dumps(wire.observation_message({"tool_name": "submit", "result": result, "error": None}))
    session = provider(ledger("0.3.0", submit=frame)).open()
    session.reset()
    with pytest.raises(ToolError, match=r"^bad total$"):
        session.call_tool("submit", {"total": 1})


def test_reading_the_reward_of_a_running_episode_ends_it_here_and_sends_nothing():
    server = ledger("0.3.0")
    session = provider(server).open()
    session.reset()
    session.call_tool("place_orders", PLACE)
    assert session.reward() == 0.0  # no step returned a reward
    with pytest.raises(EpisodeEndedError):
        session.call_tool("place_orders", PLACE)
    session.reset()
    assert session.call_tool("end_turn", {}) == "Turn ended."
    assert server.messages()[-1] == {"type": "reset", "data": {}}  # end_turn is agent_env's own: nothing sent


def test_the_reward_is_the_last_one_a_step_returned():
    rewarded = wire.dumps(wire.observation_message(wire.call_result("place_orders", "ok"), reward=0.5))
    unrewarded = wire.dumps(wire.observation_message(wire.call_result("submit", "ok")))
    session = provider(ledger("0.10.0", place=rewarded, submit=unrewarded)).open()
    session.reset()
    session.call_tool("place_orders", PLACE)
    session.call_tool("submit", {"total": 0})
    assert session.reward() == 0.5


CAPACITY_REACHED = wire.dumps(
    wire.error_message(
        "Server at capacity: 1/1 sessions active. Cannot accept new connections.",
        "CAPACITY_REACHED",
        active_sessions=1,
        max_sessions=1,
    )
)


def test_past_the_servers_capacity_a_reset_waits_for_room_on_a_new_connection():
    answers = iter([RECORDED["0.10.0"]["list_tools"], CAPACITY_REACHED, RECORDED["0.10.0"]["reset"]])
    server = Scripted(lambda message: next(answers))
    session = provider(server).open()
    started = time.monotonic()
    assert session.reset() == '{"metadata":{"target":3}}'
    assert (
        1.0 <= time.monotonic() - started < 3
    )  # OpenEnv's refusal says nothing of when: asked again after 1-1.5 s
    assert len(server.sent) == 3  # the listing's connection, the refused one, a new one


def test_a_full_server_is_asked_again_for_the_tool_listing_too():
    answers = iter([CAPACITY_REACHED, RECORDED["0.10.0"]["list_tools"]])
    server = Scripted(lambda message: next(answers))
    assert [tool["name"] for tool in provider(server).tools()][-1] == "end_turn"
    assert len(server.sent) == 2  # the refused connection, and a new one


def test_a_server_still_full_past_the_wait_fails_the_reset_as_an_infrastructure_error_and_the_next_reconnects():
    answers = iter([RECORDED["0.10.0"]["list_tools"], CAPACITY_REACHED, RECORDED["0.10.0"]["reset"]])
    server = Scripted(lambda message: next(answers))
    session = provider(server, capacity_wait=0).open()
    with pytest.raises(InfrastructureFailedError) as failed:
        session.reset()
    assert isinstance(failed.value.cause, TooManyEpisodesError) and failed.value.starting
    assert str(failed.value).startswith(
        "Ledger could not start the episode of an empty row (on the OpenEnv server at http://127.0.0.1:8000): Server "
        "at capacity: 1/1 sessions active. Cannot accept new connections. (full, and the client waits for no room"
    )
    assert session.reset() == '{"metadata":{"target":3}}'
    assert len(server.sent) == 3  # the listing's connection, the refused one, a new one


def test_a_drop_loses_the_episode_unscored_until_the_next_reset():
    failure = ServerUnavailableError("the server closed the connection")
    answers = iter([RECORDED["0.10.0"]["list_tools"], RECORDED["0.10.0"]["reset"], failure])
    answers_after = iter([RECORDED["0.10.0"]["reset"], RECORDED["0.10.0"]["submit"]])
    server = Scripted(lambda message: next(answers, None) or next(answers_after))
    session = provider(server).open()
    session.reset()
    with pytest.raises(ServerUnavailableError):
        session.call_tool("place_orders", PLACE)
    with pytest.raises(EpisodeNotFoundError, match="the episode was lost with its connection: call reset"):
        session.call_tool("place_orders", PLACE)
    with pytest.raises(
        InfrastructureFailedError, match="the episode was lost: the server closed the connection"
    ):
        session.reward()  # what the server's episode became is unknown: unscored, never a 0 it did not earn
    session.reset()
    assert session.call_tool("submit", {"total": 3}) == "submitted 3"
    assert len(server.sent) == 3


@pytest.mark.parametrize(
    "failure",
    [
        CallTimeoutError("no answer from the OpenEnv server at http://127.0.0.1:8000 within 60 s"),
        wire.dumps(
            wire.observation_message(wire.call_error("place_orders", "timeout", "the server gave up"))
        ),
    ],
    ids=["no answer", "the server's timeout"],
)
def test_a_call_out_of_time_ends_the_episode_unscored_until_the_next_reset(failure):
    answers = iter([RECORDED["0.10.0"]["list_tools"], RECORDED["0.10.0"]["reset"], failure])
    answers_after = iter([RECORDED["0.10.0"]["reset"], RECORDED["0.10.0"]["submit"]])
    server = Scripted(lambda message: next(answers, None) or next(answers_after))
    session = provider(server).open()
    session.reset()
    with pytest.raises(CallTimeoutError) as late:  # what the model reads
        session.call_tool("place_orders", PLACE)
    assert late.value.ended == "tool 'place_orders' did not finish in time"
    with pytest.raises(
        EpisodeEndedError, match=r"the episode has ended \(tool 'place_orders' did not finish in"
    ):
        session.call_tool("place_orders", PLACE)
    with pytest.raises(TimedOutEpisodeError) as unscored:
        session.reward()
    assert unscored.value.infrastructure and unscored.value.cause is late.value
    session.reset()
    assert session.call_tool("submit", {"total": 3}) == "submitted 3"


def test_a_row_the_environment_refuses_is_a_reset_error_with_the_servers_message():
    failed = wire.dumps(
        wire.error_message("reset() got an unexpected keyword argument 'x'", "EXECUTION_ERROR")
    )
    session = provider(ledger("0.10.0", reset=failed)).open()
    with pytest.raises(ResetError, match=r"^reset\(\) got an unexpected keyword argument 'x'$"):
        session.reset(x=1)


def test_a_row_that_is_not_json_is_refused_before_it_is_sent():
    server = ledger("0.10.0")
    session = provider(server).open()
    with pytest.raises(InvalidRequestError, match="reset: what was to be sent is not JSON"):
        session.reset(when={1, 2})
    assert server.sent[1] == []


def test_close_tells_the_server_once_and_the_session_refuses_everything_after():
    server = ledger("0.10.0")
    session = provider(server).open()
    session.reset()
    session.close()
    session.close()
    assert server.sent[1] == [{"type": "reset", "data": {}}, {"type": "close"}]
    with pytest.raises(SessionClosedError):
        session.reset()
    with pytest.raises(SessionClosedError):
        session.call_tool("submit", {"total": 1})


def test_the_name_comes_from_metadata_or_is_given_and_datasets_are_the_callers():
    assert provider(ledger("0.10.0")).name == "Ledger"
    assert provider(ledger("0.10.0"), name="Books").name == "Books"
    unnamed = ledger("0.10.0")
    unnamed.name = None
    assert provider(unnamed).name == "OpenEnv"
    with pytest.raises(DatasetNotFoundError, match="an OpenEnv server publishes no datasets over /ws"):
        provider(ledger("0.10.0")).dataset_rows("train")


def test_the_provider_pickles_as_its_url_headers_timeout_and_name_and_lists_again_on_first_use(monkeypatch):
    server = ledger("0.10.0")
    monkeypatch.setattr(WebSocketTransport, "connect", lambda self: server.connect())
    monkeypatch.setattr(WebSocketTransport, "environment_name", lambda self: "Ledger")
    env = AgentEnv.openenv(URL + "/", headers={"Authorization": "Bearer t"}, timeout=5.0)
    assert env.provider.__getstate__() == {
        "url": URL,
        "headers": {"Authorization": "Bearer t"},
        "timeout": 5.0,
        "name": "Ledger",
        "episode_budget": 600.0,
        "capacity_wait": 30.0,
    }
    copy = pickle.loads(pickle.dumps(env.factory)).provider
    assert (copy.url, copy.headers, copy.timeout, copy.name) == (
        URL,
        {"Authorization": "Bearer t"},
        5.0,
        "Ledger",
    )
    assert isinstance(copy.transport, WebSocketTransport) and copy.transport.headers == {
        "Authorization": "Bearer t"
    }
    assert (
        copy._tools is None and len(server.sent) == 1
    )  # nothing fetched, nothing connected, until first use
    assert copy.tools() == env.tools() and len(server.sent) == 2


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "ftp://host", "/openenv"])
def test_a_url_that_is_not_http_or_ws_is_refused(url):
    with pytest.raises(ValueError, match="starts with http://, https://, ws:// or wss://"):
        OpenEnvProvider(url, transport=ledger("0.10.0"))
