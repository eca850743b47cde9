"""Hostile requests to the MCP endpoint of the served desk, over a real socket: a body that is not standard JSON
is a JSON-RPC parse error, a hostile tool or argument name is a tool error the model can read, and the MCP
session goes on with its episode unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agent_env.server.app import build_app

from .running import running

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class RawMcp:
    """One MCP session spoken by hand, so that bodies no MCP client would send can be sent."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http
        answer = http.post("/mcp", json=INITIALIZE, headers=ACCEPT)
        self.headers = {
            **ACCEPT,
            "Mcp-Session-Id": answer.headers["mcp-session-id"],
            "Mcp-Protocol-Version": "2025-11-25",
        }
        http.post(
            "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers
        )

    def post(self, body: bytes) -> httpx.Response:
        return self.http.post("/mcp", content=body, headers=self.headers)

    def call(self, name: str, arguments: Any) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        answer = self.post(json.dumps(body).encode())
        assert answer.status_code == 200, answer.text
        return answer.json()["result"]


def call_body(arguments: bytes, name: bytes = b'"submit_dam_offers"') -> bytes:
    return (
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": '
        + name
        + b', "arguments": '
        + arguments
        + b"}}"
    )


@pytest.fixture(scope="module")
def served_desk(stack: dict[str, str]) -> Iterator[str]:
    with running(build_app("gridsim-desk", mcp_row={"task_id": "desk-v4/train/0002"}), **stack) as url:
        yield url


@pytest.fixture
def session(served_desk) -> Iterator[RawMcp]:
    with httpx.Client(base_url=served_desk, timeout=30) as http:
        session = RawMcp(http)
        booked = session.call(
            "submit_dam_offers", {"curves": [{"hours": "HE02", "points": [[-50, 20], [0, 21]]}]}
        )
        assert not booked["isError"]
        yield session


def unchanged(session: RawMcp) -> None:
    book = json.loads(session.call("list_offers", {})["content"][0]["text"])
    assert book["curves"] == [{"hours": "HE02", "points": [[-50.0, 20.0], [0.0, 21.0]]}]
    assert session.http.get("/health").status_code == 200


BODIES = {
    "nested 10,000 levels": (
        call_body(b"[" * 10_000 + b"]" * 10_000),
        "it nests arrays and objects too deeply",
    ),
    "nested 300 levels": (call_body(b"[" * 300 + b"]" * 300), "recursion limit exceeded"),
    "NaN": (
        call_body(b'{"curves": [{"hours": "HE05", "points": [[0, NaN], [1, 2]]}]}'),
        "NaN is not a JSON number",
    ),
    "Infinity": (
        call_body(b'{"curves": [{"hours": "HE05", "points": [[0, 1], [1, -Infinity]]}]}'),
        "-Infinity is not",
    ),
    "a number past a double": (
        call_body(b'{"curves": [{"hours": "HE05", "points": [[0, 1e999], [1, 2]]}]}'),
        "1e999",
    ),
    "a duplicate argument": (
        call_body(b'{"curves": [], "curves": [{"hours": "HE05"}]}'),
        'key "curves" appears twice',
    ),
    "a duplicate tool name": (
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_offers", "name": "end_turn"}}',
        'key "name" appears twice',
    ),
    "Latin-1": (call_body('{"curves": [{"hours": "HÉ05"}]}'.encode("latin-1")), "it is not UTF-8 text"),
    "UTF-16": (call_body(b'{"curves": []}').decode().encode("utf-16"), "it is not UTF-8 text"),
    "a lone surrogate": (
        call_body(b'{"curves": [{"hours": "\\udfff", "points": []}]}'),
        "lone UTF-16 surrogate",
    ),
    "an integer of 4,299 digits": (
        call_body(b'{"curves": ' + b"9" * 4_299 + b"}"),
        "an integer of 4299 digits",
    ),
}


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_a_body_that_is_not_standard_json_is_a_parse_error_and_the_session_goes_on(session, body):
    content, message = body
    answer = session.post(content)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == -32700
    assert error["message"].startswith("Parse error: ") and message in error["message"]
    unchanged(session)


@pytest.mark.parametrize(
    ("name", "arguments", "text"),
    [
        ("__class__", {}, 'unknown tool "__class__"; the tools are: desk_brief'),
        ("../../etc/passwd", {}, 'unknown tool "../../etc/passwd"'),
        ("reset", {"task_id": "../../etc/passwd"}, 'unknown tool "reset"'),
        ("x" * 100_000, {}, 'unknown tool "xxxxxxxx'),
        (
            "dam_price_forecast",
            {"__class__": 1},
            "- __class__: unknown argument; this tool takes bands, hours",
        ),
        ("dam_price_forecast", {"../../etc/passwd": 1}, '- ["../../etc/passwd"]: unknown argument'),
        ("dam_price_forecast", {"hours": [[[[[[1]]]]]] * 3}, "- hours[0]: expected integer; got array"),
        ("dam_price_forecast", {"hours": "x" * 2_000_000}, "hour set 'xxxxxxxxxxxxxxxxxxxxxxxxxxx...xxx"),
        (
            "dam_price_forecast",
            {"hours": [30] * 15_000},
            "- hours[0]: 30 is greater than the maximum of 24",
        ),
        (
            "dam_price_forecast",
            {"hours": [30] * 1_000_000},
            "the request body holds about 1000008 JSON values (counted from its commas and brackets), more than "
            "the server's limit of 20000: send smaller arguments",
        ),
    ],
)
def test_hostile_names_and_sizes_are_tool_errors_the_model_can_read(session, name, arguments, text):
    result = session.call(name, arguments)
    assert result["isError"] is True
    assert text in result["content"][0]["text"]
    assert len(result["content"][0]["text"]) < 1000
    unchanged(session)


@pytest.mark.parametrize(
    "request_id",
    [b'{"n": 1}', b"[1]", b"1.5", b"true", b"null"],
    ids=["object", "array", "float", "bool", "null"],
)
def test_a_request_whose_id_is_not_a_string_or_an_integer_is_answered_invalid_request_not_dropped(
    session, request_id
):
    answer = session.post(b'{"jsonrpc": "2.0", "id": ' + request_id + b', "method": "tools/list"}')
    assert answer.status_code == 400  # not 202, as for a notification the server drops
    assert answer.json()["id"] is None and answer.json()["error"]["code"] == -32600
    assert answer.json()["error"]["message"].startswith('Invalid Request: a request\'s "id" must be a string')
    unchanged(session)
