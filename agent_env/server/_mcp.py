"""The MCP endpoint: the official SDK's low-level server over streamable HTTP, one episode per MCP session.

Tools are listed with each tool's published `inputSchema`, byte for byte, and a call runs in the episode of the
caller's MCP session through the registry, so it is validated and run by that episode's `LocalSession`. A plain
MCP client needs nothing else: its session's first call starts the episode (from the row in the endpoint's URL,
or the server's default row), the result of `end_turn` carries the reward, and a new session starts a new
episode. A tool error (bad arguments, an unknown tool, an episode that has ended or expired, a call that timed
out) comes back as a tool result with `isError: true` whose text is the error's message, for the model to read
and fix; a failure that is not the model's (a row the environment refuses, no room for another episode, a broken
environment) is a JSON-RPC error whose message says what to do.

Episodes live in MCP sessions, so the server speaks the initialize handshake (protocol 2025-11-25 and earlier):
its `server/discover` answer names only those versions, which makes a client that probes first fall back to the
handshake, and a tool call without a session is refused with a message that says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from agent_env._version import __version__
from agent_env.errors import AgentEnvError
from agent_env.server._bindings import MCP, SessionEpisodes
from agent_env.server._episodes import EpisodeRegistry
from agent_env.server._http import MCP_SESSION_HEADER, error_response
from agent_env.server._json import NotJsonError, parse_json, read_json
from agent_env.server._jsonrpc import invalid_id
from agent_env.server.errors import ResetError, ServerUnavailableError
from agent_env.server.limits import Limits
from agent_env.server.surface import MODEL_ERRORS

EPISODE_META_KEY = "agent-env/episode_id"
"""The `_meta` key of every tool result that names the episode the call ran in."""

REWARD_META_KEY = "agent-env/reward"
"""The `_meta` key of the result of the call that ended the episode (`end_turn`): its reward."""

OBSERVATION_META_KEY = "agent-env/observation"
"""The `_meta` key of the result of a session's first call: the observation its episode started with."""

INSTRUCTIONS = (
    "Each MCP session plays one episode of {name}. The session's first tool call starts it, from the dataset row in "
    "this endpoint's URL query (/mcp?task_id=...&seed=...; values are JSON where they parse) or else the server's "
    "default row. end_turn ends the episode: its result's _meta['{reward}'] is the reward. Open a new MCP session to "
    "play another episode."
)


class RowError(ValueError):
    """The endpoint URL's query is not a dataset row."""


def mcp_server(episodes: EpisodeRegistry, sessions: SessionEpisodes) -> Server[Any]:
    """The low-level MCP server of one registry: `tools/list`, `tools/call`, and a handshake-only discover."""
    name = episodes.environment.__name__
    published = episodes.tools()
    listed = [
        types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
        for t in published
    ]
    instructions = INSTRUCTIONS.format(name=name, reward=REWARD_META_KEY)

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        mcp_session_id = _mcp_session_id(ctx)
        episode_id, observation = sessions.bound(mcp_session_id), None
        if episode_id is None:  # the session's first call (the row in its URL is read only then)
            episode_id, observation = await _episode_for(sessions, mcp_session_id, _url_row(ctx))
        meta: dict[str, Any] = {EPISODE_META_KEY: episode_id}
        if observation is not None:
            meta[OBSERVATION_META_KEY] = observation
        try:
            text, reward = await episodes.call_and_score(episode_id, params.name, params.arguments or {}, MCP)
        except MODEL_ERRORS as error:
            return _tool_result(str(error), meta, is_error=True)
        except AgentEnvError as error:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(error)) from error
        if reward is not None:
            meta[REWARD_META_KEY] = reward
        return _tool_result(text, meta)

    server: Server[Any] = Server(
        name, version=__version__, instructions=instructions, on_list_tools=list_tools, on_call_tool=call_tool
    )

    async def discover(
        ctx: ServerRequestContext[Any, Any], params: types.RequestParams
    ) -> types.DiscoverResult:
        return types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=server.get_capabilities(),
            instructions=instructions,
        )

    server.add_request_handler("server/discover", types.RequestParams, discover)
    server.middleware.append(PublishedSchemas(published))
    return server


class PublishedSchemas:
    """Server middleware that puts each tool's published `inputSchema` back into `tools/list` results.

    The SDK shapes a result through its protocol models, which keep a schema's content but move `type` after the
    keys they declare; the published schema is meant to reach every client byte for byte, so the exact dict goes
    back in its place.
    """

    def __init__(self, published: list[dict[str, Any]]) -> None:
        self.schemas = {tool["name"]: tool["inputSchema"] for tool in published}

    async def __call__(
        self,
        ctx: ServerRequestContext[Any, Any],
        call_next: Callable[[ServerRequestContext[Any, Any]], Awaitable[HandlerResult]],
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "tools/list" and isinstance(result, dict):
            for tool in result.get("tools", []):
                if tool.get("name") in self.schemas:
                    tool["inputSchema"] = self.schemas[tool["name"]]
        return result


class McpEndpoint:
    """The ASGI app at `/mcp`; its SDK session manager lives for one run of the server's lifespan."""

    def __init__(self, episodes: EpisodeRegistry, sessions: SessionEpisodes, limits: Limits) -> None:
        self.sessions = sessions
        self.limits = limits
        self.server = mcp_server(episodes, sessions)
        self._manager: StreamableHTTPSessionManager | None = None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Serve MCP sessions until the context exits; every session is then closed."""
        manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            session_idle_timeout=self.limits.mcp_idle_timeout,
            max_request_body_size=self.limits.max_body_bytes,
            max_sessions=self.limits.max_episodes,
        )
        async with manager.run(), self.sessions.reaping():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None
                self.sessions.clear()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:
            error = ServerUnavailableError("the server is not started: its lifespan has not run")
            await error_response(error)(scope, receive, send)
            return
        if scope.get("method") == "POST":
            body, receive = await _buffered(receive)
            try:
                message = await parse_json(
                    body
                )  # the SDK's parser would keep the last of two equal keys, take NaN
            except NotJsonError as error:
                await _parse_error(f"Parse error: the body is not standard JSON: {error}")(
                    scope, receive, send
                )
                return
            refused = invalid_id(message)  # the SDK would take the request for a notification and drop it
            if refused is not None:
                await refused(scope, receive, send)
                return
        mcp_session_id = Headers(scope=scope).get(MCP_SESSION_HEADER)
        with self.sessions.in_use(mcp_session_id):  # the SDK's idle clock runs from a session's last request
            await manager.handle_request(scope, receive, send)
        if mcp_session_id and scope.get("method") == "DELETE":
            self.sessions.end(mcp_session_id)


async def _buffered(receive: Receive) -> tuple[bytes, Receive]:
    """The whole request body, and a `receive` that hands it over again (the guard has read it in full already)."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body), receive
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    replay: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}]

    async def replayed() -> Message:
        return replay.pop() if replay else await receive()

    return bytes(body), replayed


def _parse_error(message: str) -> JSONResponse:
    """A JSON-RPC parse error, as the SDK answers a body it cannot parse."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": types.PARSE_ERROR, "message": message}}
    return JSONResponse(body, status_code=400)


def _mcp_session_id(ctx: ServerRequestContext[Any, Any]) -> str:
    request = ctx.request
    mcp_session_id = request.headers.get(MCP_SESSION_HEADER) if request is not None else None
    if not mcp_session_id:
        raise MCPError(
            code=types.INVALID_REQUEST,
            message=(
                "this server keeps one episode per MCP session, so a tool call needs a session: connect with the "
                "initialize handshake (protocol 2025-11-25), as mcp.Client(url) does by default"
            ),
        )
    return str(mcp_session_id)


async def _episode_for(
    sessions: SessionEpisodes, mcp_session_id: str, row: dict[str, Any] | None
) -> tuple[str, str | None]:
    try:
        return await sessions.episode_for(mcp_session_id, row)
    except ResetError as error:
        if row is not None:  # the client's row: it can connect with another
            fix = "connect with a row it can start from in the endpoint's URL (like /mcp?seed=3)"
            raise MCPError(code=types.INVALID_REQUEST, message=f"{error}; {fix}") from error
        fix = (
            "name a row in the endpoint's URL (like /mcp?seed=3), or ask the server's operator for a default row "
            "(agent-env serve --mcp-row '{...}')"
        )
        raise MCPError(code=types.INTERNAL_ERROR, message=f"{error}; {fix}") from error
    except AgentEnvError as error:  # no room for another episode, the environment failed to build, ...
        raise MCPError(code=types.INTERNAL_ERROR, message=str(error)) from error


def _url_row(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | None:
    """The dataset row in the endpoint URL's query (`/mcp?task_id=...&seed=7`), or None when it has none."""
    request = ctx.request
    if request is None or not request.query_params:
        return None
    try:
        return url_row(request.query_params.multi_items())
    except RowError as error:
        raise MCPError(code=types.INVALID_REQUEST, message=str(error)) from error


def url_row(items: list[tuple[str, str]]) -> dict[str, Any]:
    """A dataset row from URL query items: each is a key and its value, read as JSON when it parses as JSON (as
    `-c key=value` is), else kept as text (`task_id=desk-v4/test/0003`; quote text that would parse: `id="7"`).

    Raises:
        RowError: A key that is not an identifier, or a key given twice.
    """
    row: dict[str, Any] = {}
    for key, text in items:
        if not key.isidentifier():
            raise RowError(
                f"the MCP endpoint's URL query names {key[:60]!r}, which is not a dataset row key; give the row as "
                "key=value pairs, like /mcp?task_id=desk-v4/test/0003 or /mcp?seed=7"
            )
        if key in row:
            raise RowError(f"the MCP endpoint's URL query gives {key!r} twice; give each row key once")
        try:
            row[key] = read_json(text.encode())
        except NotJsonError:
            row[key] = text
    return row


def _tool_result(text: str, meta: Mapping[str, Any], *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error, _meta=dict(meta))
