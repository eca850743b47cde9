"""Answer a JSON-RPC request the server refuses as JSON-RPC: one over the limits, from its ends alone, and one
whose id no JSON-RPC answer can carry.

A client SDK throws on an HTTP error, but hands a JSON-RPC answer to its caller, so an MCP request refused for its
size is answered with its own id: a `tools/call` with an `isError` result (the model reads it and sends smaller
arguments), any other request with a JSON-RPC error. The id and method are top-level members of the request
object; clients write them before `params` (the Python SDK) or after it (the TypeScript SDK), so they are looked
for among the simple members at the start of the body and at its end, never by parsing the whole.

An MCP request's id must be a string or an integer (JSON-RPC 2.0 allows null and discourages fractions; MCP
allows neither). The SDK reads a request with any other id (an object, an array, a float, a boolean, null) as a
notification and drops it with a 202, so the client waits for an answer that never comes; such a request is
answered with Invalid Request (-32600) and a null id, as JSON-RPC 2.0 says.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse, Response

ENDS = 1024
"""Bytes kept from each end of a refused body: room for the simple members before and after `params`."""

INVALID_REQUEST = -32600

_SCALAR = rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null'
_MEMBER = rb'\s*"(?P<key>[A-Za-z_]+)"\s*:\s*(?P<value>' + _SCALAR + rb")\s*"
_LEADING = re.compile(rb"\s*\{(?:" + _MEMBER + rb",)*")
_TRAILING = re.compile(rb"(?:," + _MEMBER + rb")+\}\s*$")
_ONE = re.compile(_MEMBER)


@dataclass(frozen=True)
class Dialect:
    """How a JSON-RPC endpoint answers a request it refuses for its size.

    Attributes:
        tool_results: A refused `tools/call` gets a tool result with `isError` (MCP: the model reads it), rather
            than a JSON-RPC error (OpenEnv's dialect, which answers every failed call so).
        anonymous_status: The HTTP status of the answer to a request whose id cannot be found.
    """

    tool_results: bool
    anonymous_status: int


MCP = Dialect(tool_results=True, anonymous_status=413)
"""Streamable HTTP: as the MCP SDK answers a body over its limit when it has no id to answer. A surface's own
endpoints name their dialects in its `Mount` (OpenEnv's `POST /mcp`: every answer HTTP 200)."""


def valid_id(value: Any) -> bool:
    """Whether `value` can be an MCP request's id: a string or an integer (not a boolean, a float or null)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def invalid_id(message: Any) -> Response | None:
    """The answer to a JSON-RPC request whose id is not a string or an integer (Invalid Request, id null, HTTP
    400 as the SDK answers an invalid message), or None when `message` is no such request."""
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    if valid_id(message["id"]):
        return None
    kind = _JSON_KINDS.get(type(message["id"]), "value")
    error = {
        "code": INVALID_REQUEST,
        "message": f'Invalid Request: a request\'s "id" must be a string or an integer, not {kind}',
    }
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=400)


_JSON_KINDS = {
    dict: "an object",
    list: "an array",
    float: "a number with a fraction or an exponent",
    bool: "a boolean",
    type(None): "null",
}


def refused_rpc(head: bytes, tail: bytes, message: str, dialect: Dialect = MCP) -> Response:
    """The answer to a JSON-RPC request refused for its size (`message` says why).

    Args:
        head: The body's first bytes (up to `ENDS`).
        tail: Its last bytes.
        message: Why it was refused.
        dialect: The endpoint's way of answering.

    Returns:
        HTTP 200 with the request's own id: for `tools/call`, an `isError` tool result (or, in a dialect without
        those, a JSON-RPC error); for any other method, a JSON-RPC error. If no id can be found (a notification,
        or not JSON-RPC), or it is not a string or an integer, a JSON-RPC error without one, with the dialect's
        `anonymous_status`.
    """
    members = _simple_members(head, tail)
    if not valid_id(members.get("id")):
        error = {"code": INVALID_REQUEST, "message": message}
        return JSONResponse(
            {"jsonrpc": "2.0", "id": None, "error": error}, status_code=dialect.anonymous_status
        )
    request_id = members["id"]
    if members.get("method") == "tools/call" and dialect.tool_results:
        text = f"{message}: send smaller arguments"
        result = {"content": [{"type": "text", "text": text}], "isError": True}
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result})
    error = {"code": INVALID_REQUEST, "message": f"{message}; send a smaller request"}
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error})


def _simple_members(head: bytes, tail: bytes) -> dict[str, Any]:
    """The top-level members with simple values (strings, numbers, literals) before the first complex one and
    after the last, read from the body's ends."""
    members: dict[str, Any] = {}
    found = [_LEADING.match(head[:ENDS])]
    trailing = _TRAILING.search(tail[-ENDS:])
    found.append(trailing)
    for match in found:
        if match is None:
            continue
        for member in _ONE.finditer(match.group(0)):
            try:
                members.setdefault(member["key"].decode(), json.loads(member["value"]))
            except ValueError:
                continue
    return members
