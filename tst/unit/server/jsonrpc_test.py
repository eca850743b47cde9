"""Answering a JSON-RPC request refused for its size (`_jsonrpc.py`), from its ends alone: its own id, as an
`isError` result for a tool call and a JSON-RPC error otherwise, and never an id from inside `params` or one no
answer can carry; and a request whose id is not a string or an integer: Invalid Request, with a null id."""

from __future__ import annotations

import json

import pytest

from agent_env.server._jsonrpc import ENDS, invalid_id, refused_rpc

WHY = "the request body is larger than the server's limit of 1000 bytes"
ARGUMENTS = '{"text": "' + "x" * 5000 + '", "id": 666, "method": "initialize"}'


def ends(body: str) -> tuple[bytes, bytes]:
    raw = body.encode()
    return raw[:ENDS], raw[-ENDS:]


def answer(body: str) -> tuple[int, dict]:
    response = refused_rpc(*ends(body), WHY)
    return response.status_code, json.loads(response.body)


@pytest.mark.parametrize(
    "body",
    [
        # the Python SDK writes the id first, the TypeScript SDK last
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":'
        + ARGUMENTS
        + "}}",
        '{"method":"tools/call","params":{"name":"echo","arguments":'
        + ARGUMENTS
        + '},"jsonrpc":"2.0","id":7}',
        ' { "method" : "tools/call" , "params":{"arguments":'
        + ARGUMENTS
        + '} , "id" : 7 , "jsonrpc":"2.0" }\n',
    ],
    ids=["id first", "id last", "spaced"],
)
def test_a_tool_call_gets_an_is_error_result_with_its_own_id(body):
    assert answer(body) == (
        200,
        {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {
                "content": [{"type": "text", "text": f"{WHY}: send smaller arguments"}],
                "isError": True,
            },
        },
    )


def test_another_request_gets_a_json_rpc_error_with_its_id():
    body = '{"jsonrpc":"2.0","id":"a\\"b","method":"resources/read","params":{"uri":"' + "x" * 5000 + '"}}'
    assert answer(body) == (
        200,
        {
            "jsonrpc": "2.0",
            "id": 'a"b',
            "error": {"code": -32600, "message": f"{WHY}; send a smaller request"},
        },
    )


@pytest.mark.parametrize(
    "body",
    [
        '{"jsonrpc":"2.0","method":"notifications/message","params":{"data":' + ARGUMENTS + "}}",
        '{"params":{"id":3,"method":"tools/call","x":' + ARGUMENTS + "}}",
        "[" + ARGUMENTS + "]",
        "not json at all " + "x" * 5000,
    ],
    ids=["a notification", "an id only inside params", "a batch", "not JSON"],
)
def test_without_a_top_level_id_it_is_a_413_with_a_json_rpc_error_that_has_no_id(body):
    assert answer(body) == (413, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": WHY}})


@pytest.mark.parametrize("request_id", ["true", "1.5", "null", "1e3"])
def test_an_id_that_is_not_a_string_or_an_integer_is_not_echoed(request_id):
    body = (
        '{"jsonrpc":"2.0","id":'
        + request_id
        + ',"method":"tools/call","params":{"arguments":'
        + ARGUMENTS
        + "}}"
    )
    assert answer(body) == (413, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": WHY}})


@pytest.mark.parametrize(
    ("request_id", "kind"),
    [
        ({"a": 1}, "an object"),
        ([1], "an array"),
        (1.5, "a number with a fraction or an exponent"),
        (True, "a boolean"),
        (None, "null"),
    ],
)
def test_a_request_whose_id_is_not_a_string_or_an_integer_is_an_invalid_request_with_a_null_id(
    request_id, kind
):
    refused = invalid_id({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
    assert refused is not None and refused.status_code == 400
    assert json.loads(refused.body) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": f'Invalid Request: a request\'s "id" must be a string or an integer, not {kind}',
        },
    }


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": "a", "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},  # a notification has no id
        {"jsonrpc": "2.0", "id": True, "result": {}},  # no method: a response, the SDK's to judge
        [{"jsonrpc": "2.0", "id": True, "method": "tools/list"}],  # a batch: the SDK refuses it
    ],
)
def test_anything_else_is_left_to_the_sdk(message):
    assert invalid_id(message) is None
