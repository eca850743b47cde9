"""OpenEnv's `/ws`: one OpenEnv session per WebSocket, an episode of the server's registry driven by JSON messages.

A connection opens an episode (or, with `?session_id=`, attaches to one opened over `POST /mcp`). `reset` starts it
from the message's data (a dataset row), `step` lists the tools or calls one (`{"type": "list_tools"}`,
`{"type": "call_tool", "tool_name", "arguments"}`), `state` reports it, `close` (or the socket going) closes it.
Calls run through the registry, so they are validated and run exactly as in process: a tool error comes back in
the call's observation (`error: {"error_type", "message"}` with the in-process message), and `end_turn` answers
`done: true` with the episode's reward. A message that is not standard JSON, or larger than the server's body
limit or holding more values than its value limit, and a connection idle past the idle timeout are refused the way
the rest of the server refuses them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from agent_env.environment import class_reference
from agent_env.errors import AgentEnvError, ToolArgumentError, UnknownToolError
from agent_env.openenv import _wire as wire
from agent_env.openenv.server._rpc import OpenEnvRpc
from agent_env.openenv.server._sessions import OPENENV, OpenEnvSessions
from agent_env.schema._validator import short
from agent_env.server.errors import CallTimeoutError, EpisodeNotFoundError, TooManyEpisodesError
from agent_env.server.surface import MODEL_ERRORS, Episodes, Limits, NotJsonError, json_values, parse_json

logger = logging.getLogger("agent_env.server")

MESSAGE_TOO_BIG = 1009
"""The WebSocket close code for a message larger than the server takes (RFC 6455)."""

REFUSAL_WAIT = 5.0
"""Seconds a refused connection waits for the client's first message, to answer it with the refusal."""

Reply = dict[str, Any] | None
"""What the server sends back; None closes the session."""

_MESSAGE_KEYS = {
    "reset": frozenset({"type", "data"}),
    "step": frozenset({"type", "data"}),
    "state": frozenset({"type"}),
    "close": frozenset({"type"}),
    "mcp": frozenset({"type", "data"}),
}
_ACTION_KEYS = {
    "list_tools": frozenset({"type", "metadata"}),
    "call_tool": frozenset({"type", "tool_name", "arguments", "metadata"}),
}


@dataclass
class Connection:
    """One WebSocket's session: the episode it drives, and whether it opened that episode (and closes it)."""

    episode_id: str
    owned: bool


class OpenEnvSocket:
    """The ASGI app at `{prefix}/ws`."""

    def __init__(
        self, episodes: Episodes, sessions: OpenEnvSessions, rpc: OpenEnvRpc, limits: Limits
    ) -> None:
        self.episodes = episodes
        self.sessions = sessions
        self.rpc = rpc
        self.limits = limits
        self.listing = wire.tool_listing(episodes.tools(), class_reference(episodes.environment))
        self._answers: dict[str, Callable[[Connection, dict[str, Any]], Awaitable[Reply]]] = {
            "reset": self._reset,
            "step": self._step,
            "state": self._state,
            "close": self._close,
            "mcp": self._mcp,
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        websocket = WebSocket(scope, receive, send)
        await websocket.accept()
        connection = await self._start(websocket)
        if connection is None:
            return
        try:
            await self._serve(websocket, connection)
        except WebSocketDisconnect:
            pass
        except Exception as error:  # a bug here must not leave the episode open or the client waiting
            logger.exception("agent_env: OpenEnv session %s failed", connection.episode_id)
            with contextlib.suppress(Exception):
                failed = wire.error_message(
                    f"the server failed: {type(error).__name__}: {error}", wire.SESSION_ERROR
                )
                await websocket.send_text(wire.dumps(failed))
        finally:
            self.sessions.detach(connection.episode_id, close=connection.owned)
            await _close(websocket)

    async def _start(self, websocket: WebSocket) -> Connection | None:
        """The connection's session, or None once the client has been told why it gets none."""
        session_id = websocket.query_params.get("session_id")
        try:
            if session_id:
                self.sessions.attach(session_id)
                return Connection(session_id, owned=False)
            episode_id, _ = await self.sessions.open(attach=True)
            return Connection(episode_id, owned=True)
        except TooManyEpisodesError as error:
            refusal = wire.error_message(
                str(error),
                wire.CAPACITY_REACHED,
                active_sessions=self.episodes.count(),
                max_sessions=self.limits.max_episodes,
            )
        except AgentEnvError as error:
            refusal = wire.error_message(str(error), wire.SESSION_ERROR if session_id else wire.FACTORY_ERROR)
        with contextlib.suppress(TimeoutError, WebSocketDisconnect, RuntimeError):
            # answer the client's first message, so a client that sends before it reads (openenv-core 0.3.0's
            # does) reads the refusal instead of a closed socket
            await asyncio.wait_for(websocket.receive(), REFUSAL_WAIT)
        with contextlib.suppress(Exception):
            await websocket.send_text(wire.dumps(refusal))
        await _close(websocket)
        return None

    async def _serve(self, websocket: WebSocket, connection: Connection) -> None:
        while True:
            raw = await self._receive(websocket)
            if raw is None:
                return
            reply = await self._answer(connection, raw)
            if reply is None:
                return
            await websocket.send_text(wire.dumps(reply))

    async def _receive(self, websocket: WebSocket) -> bytes | None:
        """The next message's bytes; None when the client left, or was sent away (idle, or a message too large)."""
        idle = self.limits.idle_timeout
        try:
            message = await asyncio.wait_for(websocket.receive(), idle)
        except TimeoutError:
            await _close(websocket, reason=f"idle for more than {idle:g} s; the session was closed")
            return None
        if message["type"] == "websocket.disconnect":
            return None
        raw: bytes = (
            message["bytes"] if message.get("bytes") is not None else message.get("text", "").encode()
        )
        limit = self.limits.max_body_bytes
        if len(raw) > limit:
            await _close(websocket, code=MESSAGE_TOO_BIG, reason=f"message larger than {limit} bytes")
            return None
        return raw

    async def _answer(self, connection: Connection, raw: bytes) -> Reply:
        most = self.limits.max_body_values
        if most is not None and len(raw) > most and (count := json_values(raw)) > most:
            return _invalid(
                f"it holds about {count} JSON values (counted from its commas and brackets), more than the server's "
                f"limit of {most}; send fewer"
            )
        try:
            message = await parse_json(raw)
        except NotJsonError as error:
            return wire.error_message(f"Invalid JSON: {error}", wire.INVALID_JSON)
        if not isinstance(message, dict):
            return _invalid('send a JSON object with a "type": reset, step, state, close or mcp')
        kind = message.get("type", "")
        answer = self._answers.get(kind) if isinstance(kind, str) else None
        if answer is None:
            return wire.error_message(f"Unknown message type: {wire.shown(kind)}", wire.UNKNOWN_TYPE)
        unknown = sorted(set(message) - _MESSAGE_KEYS[kind])
        if unknown:
            return _invalid(f"a {kind} message has no keys {', '.join(map(short, unknown))}")
        return await answer(connection, message)

    async def _reset(self, connection: Connection, message: dict[str, Any]) -> Reply:
        row = message.get("data", {})
        if not isinstance(row, dict):
            return _invalid("a reset's data must be a JSON object: the dataset row to start the episode from")
        try:
            observation = await self.episodes.reset(connection.episode_id, row, OPENENV)
        except EpisodeNotFoundError as error:
            if not connection.owned:
                return wire.error_message(str(error), wire.EXECUTION_ERROR)
            return await self._reopen(connection, row)  # idled out or timed out: a reset starts afresh anyway
        except CallTimeoutError as error:  # said as a call's timeout is, so that a client can tell
            return wire.error_message(str(error), wire.EXECUTION_ERROR, error_type=wire.TOOL_TIMEOUT)
        except AgentEnvError as error:
            return wire.error_message(str(error), wire.EXECUTION_ERROR)
        self.sessions.restart(connection.episode_id)
        return wire.observation_message(wire.reset_observation(observation))

    async def _reopen(self, connection: Connection, row: dict[str, Any]) -> Reply:
        self.sessions.detach(connection.episode_id, close=True)
        try:
            connection.episode_id, observation = await self.sessions.open(row, attach=True)
        except TooManyEpisodesError as error:
            return wire.error_message(str(error), wire.CAPACITY_REACHED)
        except AgentEnvError as error:
            return wire.error_message(str(error), wire.EXECUTION_ERROR)
        return wire.observation_message(wire.reset_observation(observation))

    async def _step(self, connection: Connection, message: dict[str, Any]) -> Reply:
        action = message.get("data")
        if not isinstance(action, dict):
            return _invalid(
                'a step\'s data must be an action: {"type": "list_tools"} or {"type": "call_tool", ...}'
            )
        kind = action.get("type")
        if kind not in _ACTION_KEYS:
            return _invalid(
                f"{self.episodes.environment.__name__} takes MCP actions: "
                '{"type": "list_tools"}, or {"type": "call_tool", "tool_name": "...", "arguments": {...}}'
            )
        unknown = sorted(set(action) - _ACTION_KEYS[kind])
        if unknown:
            return _invalid(f"a {kind} action has no keys {', '.join(map(short, unknown))}")
        self.sessions.step(connection.episode_id)
        if kind == "list_tools":
            return wire.observation_message(self.listing)
        return await self._call(connection, action)

    async def _call(self, connection: Connection, action: dict[str, Any]) -> Reply:
        name, arguments = action.get("tool_name"), action.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return _invalid('a call_tool action needs "tool_name" (a string) and "arguments" (a JSON object)')
        try:
            text = await self.episodes.call(connection.episode_id, name, arguments, OPENENV)
            observation = wire.call_result(name, text)
        except MODEL_ERRORS as error:
            observation = wire.call_error(name, _error_type(error), str(error))
            if isinstance(error, CallTimeoutError):  # the episode has ended, unscored (and is closed): done
                return wire.observation_message(observation, reward=None, done=True)
        except AgentEnvError as error:  # not the model's to fix: a broken environment
            return wire.error_message(str(error), wire.EXECUTION_ERROR)
        if self.episodes.ended(connection.episode_id, OPENENV) is None:
            return wire.observation_message(observation)
        try:  # end_turn, or a call (refused or not) that ended the episode: its reward goes with it
            reward = await self.episodes.reward(connection.episode_id, OPENENV)
        except AgentEnvError as error:
            return wire.error_message(str(error), wire.EXECUTION_ERROR)
        return wire.observation_message(observation, reward=reward, done=True)

    async def _state(self, connection: Connection, message: dict[str, Any]) -> Reply:
        return wire.state_message(connection.episode_id, self.sessions.steps(connection.episode_id))

    async def _close(self, connection: Connection, message: dict[str, Any]) -> Reply:
        return None

    async def _mcp(self, connection: Connection, message: dict[str, Any]) -> Reply:
        return {
            "type": "mcp",
            "data": await self.rpc.dispatch(message.get("data"), bound=connection.episode_id),
        }


def _error_type(error: Exception) -> str:
    if isinstance(error, ToolArgumentError):
        return wire.INVALID_ARGS
    if isinstance(error, UnknownToolError):
        return wire.TOOL_NOT_FOUND
    if isinstance(error, CallTimeoutError):
        return wire.TOOL_TIMEOUT
    return wire.TOOL_EXECUTION_ERROR


def _invalid(why: str) -> dict[str, Any]:
    return wire.error_message(f"Invalid message: {why}", wire.VALIDATION_ERROR)


async def _close(websocket: WebSocket, code: int = 1000, reason: str = "") -> None:
    if websocket.application_state is WebSocketState.CONNECTED:
        with contextlib.suppress(Exception):  # the client may be gone already
            await websocket.close(code=code, reason=reason)
