"""OpenEnv's wire protocol as its servers and clients speak it: the messages, observations, tool listings and errors.

Read from OpenEnv's sources (`openenv/core/env_server/http_server.py`, `types.py`, `mcp_types.py`,
`serialization.py`; openenv-core 0.3.0 and openenv 0.10.0) and checked against their real servers and clients.
Only plain data lives here, so both directions (serving OpenEnv in `agent_env.server`, and reaching an OpenEnv
server in `agent_env.openenv.client`) read and write exactly the same shapes.
"""

from __future__ import annotations

import json
import math
from typing import Any

from agent_env.schema._validator import short

# WebSocket error codes (`WSErrorCode`), sent as `{"type": "error", "data": {"message", "code", ...}}`.
INVALID_JSON = "INVALID_JSON"
UNKNOWN_TYPE = "UNKNOWN_TYPE"
VALIDATION_ERROR = "VALIDATION_ERROR"
EXECUTION_ERROR = "EXECUTION_ERROR"
CAPACITY_REACHED = "CAPACITY_REACHED"
FACTORY_ERROR = "FACTORY_ERROR"
SESSION_ERROR = "SESSION_ERROR"

# Why a tool call failed (`ToolErrorType`), in a call's observation as `error: {"error_type", "message"}`.
INVALID_ARGS = "invalid_args"
TOOL_NOT_FOUND = "tool_not_found"
TOOL_EXECUTION_ERROR = "execution_error"
TOOL_TIMEOUT = "timeout"

# JSON-RPC 2.0 error codes of the `POST /mcp` dialect (`JsonRpcErrorCode`).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000

# The dialect's methods: MCP's two, and OpenEnv's session extension.
TOOLS_LIST = "tools/list"
TOOLS_CALL = "tools/call"
SESSION_CREATE = "openenv/session/create"
SESSION_CLOSE = "openenv/session/close"


def dumps(message: Any) -> str:
    """A message as the compact JSON text sent on the wire; a dict's keys keep their order, so a schema's bytes do."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def observation_message(
    observation: dict[str, Any], *, reward: float | None = None, done: bool = False
) -> dict[str, Any]:
    """`{"type": "observation", "data": {"observation", "reward", "done"}}`: the answer to a reset or a step."""
    return {"type": "observation", "data": {"observation": observation, "reward": reward, "done": done}}


def error_message(message: str, code: str, **details: Any) -> dict[str, Any]:
    """`{"type": "error", "data": {"message", "code", ...}}`: a message the server could not act on."""
    return {"type": "error", "data": {"message": message, "code": code, **details}}


def state_message(episode_id: str, step_count: int) -> dict[str, Any]:
    """`{"type": "state", "data": {"episode_id", "step_count"}}`: OpenEnv's base `State`."""
    return {"type": "state", "data": {"episode_id": episode_id, "step_count": step_count}}


def reset_observation(text: str | None) -> dict[str, Any]:
    """The first observation of an episode: the text the environment's `reset` returned (or null)."""
    return {"metadata": {}, "text": text}


SERVED_CLASS = "agent_env_class"
"""The key of a tool listing's `metadata` under which an agent_env server names the class it serves, when it can be
imported by name (`package.module:Class`)."""


def tool_listing(published: list[dict[str, Any]], served_class: str | None = None) -> dict[str, Any]:
    """A `ListToolsObservation`: each tool as OpenEnv's `Tool` model names it, with its `input_schema`; its metadata
    names the class served, when given (OpenEnv's metadata is any JSON object)."""
    tools = [
        {"name": tool["name"], "description": tool["description"], "input_schema": tool["inputSchema"]}
        for tool in published
    ]
    return {"metadata": {} if served_class is None else {SERVED_CLASS: served_class}, "tools": tools}


def call_result(tool_name: str, text: str) -> dict[str, Any]:
    """A `CallToolObservation` of a call that worked: its result is FastMCP's `CallToolResult`, as OpenEnv sends it."""
    return {"metadata": {}, "tool_name": tool_name, "result": mcp_result(text), "error": None}


def call_error(tool_name: str, error_type: str, message: str) -> dict[str, Any]:
    """A `CallToolObservation` of a call that failed: no result, and `error: {"error_type", "message"}`."""
    return {
        "metadata": {},
        "tool_name": tool_name,
        "result": None,
        "error": {"error_type": error_type, "message": message},
    }


def mcp_result(text: str) -> dict[str, Any]:
    """FastMCP's `CallToolResult` with one text block, in the snake_case form OpenEnv puts on the wire."""
    return {
        "content": [{"type": "text", "text": text, "annotations": None, "meta": None}],
        "structured_content": None,
        "meta": None,
        "data": text,
        "is_error": False,
    }


def rpc_result(request_id: Any, result: Any) -> dict[str, Any]:
    """A JSON-RPC 2.0 success response, keys in OpenEnv's order."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def rpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response, keys in OpenEnv's order."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message, "data": data}}


def listed_schema(tool: dict[str, Any]) -> Any:
    """A listed tool's input schema, under either name OpenEnv uses (`input_schema`; `inputSchema` from MCP 1.x)."""
    return tool["input_schema"] if "input_schema" in tool else tool.get("inputSchema")


def result_text(result: Any) -> tuple[str, bool]:
    """The text a model reads from a call's `result`, and whether the result says it is an error.

    A FastMCP `CallToolResult` gives its text blocks, one per line (its `data`, or its structured content, when it
    has none); any other value gives itself as text.
    """
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        texts = [
            block["text"]
            for block in result["content"]
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        ]
        is_error = bool(result.get("is_error") or result.get("isError"))
        if texts:
            return "\n".join(texts), is_error
        fallback = result.get("data", result.get("structured_content", result.get("structuredContent")))
        return as_text(fallback), is_error
    return as_text(result), False


def observation_text(observation: dict[str, Any]) -> str | None:
    """The text of an observation that is not a tool call's: None when it holds nothing (empty `metadata` and null
    fields do not count), its one string when it holds just one, else its fields as compact JSON."""
    kept = {
        key: value
        for key, value in observation.items()
        if value is not None and not (key == "metadata" and not value)
    }
    if not kept:
        return None
    if len(kept) == 1:
        (value,) = kept.values()
        if isinstance(value, str):
            return value
    return as_text(kept)


def shown(value: Any) -> str:
    """A value a client sent, as OpenEnv's error messages show it: a short printable string as it is, anything else
    as cut-short JSON."""
    if isinstance(value, str) and len(value) <= 60 and value.isprintable():
        return value
    return short(value)


def as_text(value: Any) -> str:
    """A JSON value as text: a string as it is, null as nothing, anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
