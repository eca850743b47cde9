"""OpenEnv's `POST /mcp` dialect: JSON-RPC 2.0 with `tools/list`, `tools/call` and `openenv/session/create|close`.

It is not MCP (no `initialize`; OpenEnv calls it a custom transport), but the 0.10.0 `MCPToolClient` needs it: it
creates a session here, lists and calls tools here with its `session_id`, and attaches `/ws?session_id=` to the
same session for reset and state. A session is an episode of the server's registry, so calls are validated and run
by that episode's `LocalSession`, with the in-process messages. As in OpenEnv, every answer is HTTP 200, a tool
error is a JSON-RPC error (-32603) whose message is the error's, and the dialect carries no reward (the reward
comes with `done` over `/ws`).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from agent_env.errors import AgentEnvError
from agent_env.openenv import _wire as wire
from agent_env.openenv.server._sessions import OPENENV, OpenEnvSessions
from agent_env.schema._validator import short
from agent_env.server.errors import EpisodeNotFoundError, TooManyEpisodesError
from agent_env.server.surface import Dialect, Episodes, NotJsonError, parse_json

_REQUEST_KEYS = frozenset({"jsonrpc", "method", "params", "id"})

DIALECT = Dialect(tool_results=False, anonymous_status=200)
"""How the guard answers a request here that it refuses for its size: as every answer here, with HTTP 200 (and a
refused `tools/call` with a JSON-RPC error, as every failed call)."""


class RpcError(Exception):
    """A JSON-RPC error to answer with."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class OpenEnvRpc:
    """The dialect's dispatcher, over HTTP (`POST {prefix}/mcp`) and inside a WebSocket (`{"type": "mcp"}`)."""

    def __init__(self, episodes: Episodes, sessions: OpenEnvSessions) -> None:
        self.episodes = episodes
        self.sessions = sessions
        self.tools = [
            {"name": tool["name"], "description": tool["description"], "inputSchema": tool["inputSchema"]}
            for tool in episodes.tools()
        ]

    async def endpoint(self, request: Request) -> Response:
        """`POST {prefix}/mcp`: one JSON-RPC request, answered with HTTP 200 whatever happened (as OpenEnv does)."""
        try:
            payload = await parse_json(await request.body())  # the guard has bounded its size and values
        except NotJsonError as error:
            answer = wire.rpc_error(
                None, wire.PARSE_ERROR, f"Parse error: the body is not standard JSON: {error}"
            )
        else:
            answer = await self.dispatch(payload)
        return Response(wire.dumps(answer), media_type="application/json")

    async def dispatch(self, payload: Any, bound: str | None = None) -> dict[str, Any]:
        """Answer one JSON-RPC request; `bound` is the session of the WebSocket it came in on, if any."""
        request_id = _request_id(payload)
        try:
            method, params = _request(payload)
            result = await self._run(method, params, bound)
        except RpcError as error:
            return wire.rpc_error(request_id, error.code, str(error), error.data)
        return wire.rpc_result(request_id, result)

    async def _run(self, method: str, params: dict[str, Any], bound: str | None) -> Any:
        if method == wire.TOOLS_LIST:
            return {"tools": self.tools}
        if method == wire.TOOLS_CALL:
            return await self._call(params, bound)
        if method == wire.SESSION_CREATE:
            return {"session_id": bound if bound is not None else await self._create()}
        if method == wire.SESSION_CLOSE:
            return self._close(params, bound)
        raise RpcError(wire.METHOD_NOT_FOUND, f"Method not found: {wire.shown(method)}")

    async def _call(self, params: dict[str, Any], bound: str | None) -> Any:
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise RpcError(wire.INVALID_PARAMS, "Missing 'name' in params")
        arguments = params.get("arguments")
        arguments = {} if arguments is None else arguments
        if not isinstance(arguments, dict):
            raise RpcError(wire.INVALID_PARAMS, "Invalid params - 'arguments' must be an object")
        session_id = bound if bound is not None else _session_id(params, required=False)
        if session_id is None:
            raise RpcError(
                wire.INVALID_PARAMS,
                "tools/call needs a session: each session is one episode of "
                f"{self.episodes.environment.__name__}, so call openenv/session/create first and pass its "
                "session_id in params (then reset it over /ws?session_id=...)",
            )
        if self.episodes.is_live(session_id):
            self.sessions.step(session_id)
        try:
            text = await self.episodes.call(session_id, name, arguments, OPENENV)
        except EpisodeNotFoundError as error:
            raise RpcError(wire.INVALID_PARAMS, str(error)) from None
        except AgentEnvError as error:
            raise RpcError(wire.INTERNAL_ERROR, str(error)) from None
        return wire.mcp_result(text)

    async def _create(self) -> str:
        try:
            session_id, _ = await self.sessions.open(attach=False)
            return session_id
        except TooManyEpisodesError as error:
            details = {
                "active_sessions": self.episodes.count(),
                "max_sessions": self.episodes.limits.max_episodes,
            }
            raise RpcError(wire.SERVER_ERROR, str(error), details) from None
        except AgentEnvError as error:
            raise RpcError(wire.SERVER_ERROR, str(error)) from None

    def _close(self, params: dict[str, Any], bound: str | None) -> dict[str, Any]:
        session_id = _session_id(params, required=True)
        assert session_id is not None
        if session_id == bound:
            raise RpcError(
                wire.INVALID_REQUEST, "Cannot close active WebSocket-managed session via MCP method"
            )
        try:
            closed = self.sessions.close(session_id)
        except EpisodeNotFoundError as error:
            raise RpcError(wire.INVALID_PARAMS, str(error)) from None
        if closed:
            return {"session_id": session_id, "closed": True}
        return {"session_id": session_id, "closed": False, "closing": True}


def _request_id(payload: Any) -> Any:
    if isinstance(payload, dict):
        request_id = payload.get("id")
        if isinstance(request_id, str | int) and not isinstance(request_id, bool):
            return request_id
    return None


def _request(payload: Any) -> tuple[str, dict[str, Any]]:
    """The method and params of a JSON-RPC 2.0 request, or `RpcError` saying what is wrong with it."""
    if not isinstance(payload, dict):
        raise RpcError(wire.INVALID_REQUEST, "Invalid request: send one JSON-RPC 2.0 request object")
    unknown = sorted(set(payload) - _REQUEST_KEYS)
    if unknown:
        raise RpcError(
            wire.INVALID_REQUEST, f"Invalid request: unknown keys {', '.join(map(short, unknown))}"
        )
    if payload.get("jsonrpc") != "2.0":
        raise RpcError(wire.INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"')
    request_id = payload.get("id")
    if request_id is not None and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
        raise RpcError(wire.INVALID_REQUEST, 'Invalid request: "id" must be a string, a number or null')
    method = payload.get("method")
    if not isinstance(method, str):
        raise RpcError(wire.INVALID_REQUEST, 'Invalid request: "method" must be a string')
    params = payload.get("params", {})
    if not isinstance(params, dict):
        raise RpcError(wire.INVALID_PARAMS, "Params must be an object")
    return method, params


def _session_id(params: dict[str, Any], *, required: bool) -> str | None:
    session_id = params.get("session_id")
    if session_id is None and not required:
        return None
    if not isinstance(session_id, str) or not session_id:
        raise RpcError(wire.INVALID_PARAMS, "Invalid params - 'session_id' is required")
    return session_id
