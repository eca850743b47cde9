"""The ORS routes over one registry: sessions, the environment's tools, splits and tasks, its prompt, and calls.

Every route answers as the SDK server answers (its errors as `{"detail": ...}`, which its client reads), on the
server's episodes: `/create` opens an episode from the task (a dataset row), `/{env}/call` runs one validated call
through the registry and streams its result as SSE events, and the result of the call that ends the episode
(`end_turn`, or a call that ends it from within) carries its reward with `finished: true`; every later call is
refused with `reason: episode_finished`, as the SDK server's latch refuses them.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from agent_env._version import __version__
from agent_env.errors import (
    AgentEnvError,
    DatasetRowsError,
    EpisodeStateError,
    ToolArgumentError,
    ToolError,
    UnknownToolError,
)
from agent_env.ors import _wire as wire
from agent_env.ors.server._sessions import ORS, SESSION_ID, Call, ORSSessions, Session
from agent_env.server.errors import (
    DatasetNotFoundError,
    ResetError,
    TooManyEpisodesError,
    http_status,
)
from agent_env.server.surface import Episodes, NotJsonError, parse_json
from agent_env.training.trl import own_paragraph

logger = logging.getLogger("agent_env.server")

Endpoint = Callable[[Request], Awaitable[Response]]

BLOCK_TYPES = ["text"]
"""The block types this server's prompts and messages hold."""
_STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_running: set[asyncio.Task[Any]] = set()
"""Calls under way, held until they end (asyncio keeps only a weak reference to a task)."""


class Refused(Exception):
    """A request answered with an HTTP error: `{"detail": ...}` and its status."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers


def answered(endpoint: Endpoint) -> Endpoint:
    """An endpoint whose refusals and agent_env errors answer `{"detail": message}` with their status (what the SDK
    client reads), and whose other failures a 500 that says so (the traceback in the server's log)."""

    async def answer(request: Request) -> Response:
        try:
            return await endpoint(request)
        except Refused as refused:
            return detail(refused.status, refused.detail, refused.headers)
        except AgentEnvError as error:
            return detail(http_status(error), str(error))
        except Exception as error:
            logger.exception("agent_env: %s %s failed", request.method, request.url.path)
            return detail(500, f"the server failed: {type(error).__name__}: {error}")

    return answer


def detail(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """An error answer as the SDK server writes one."""
    return json_response({"detail": message}, status, headers)


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """`value` as compact JSON (a dict's keys in their order, so a schema keeps its bytes)."""
    return Response(
        wire.dumps(value).encode(), status_code=status, media_type="application/json", headers=headers
    )


class ORSRoutes:
    """The ORS endpoints of one registry, for the environment named `name` on the wire."""

    def __init__(self, episodes: Episodes, name: str) -> None:
        self.episodes = episodes
        self.name = name
        self.sessions = ORSSessions(episodes)
        listed = [
            {"name": tool["name"], "description": tool["description"], "input_schema": tool["inputSchema"]}
            for tool in episodes.tools()
        ]
        listing = {
            "tools": listed,
            "terminal_tool": None,
            "supports_score_group": False,
            "message_block_types": BLOCK_TYPES,
        }
        self._listing = wire.dumps(listing).encode()
        self._splits: list[str] | None = None

    # Sessions.

    async def create_session(self, request: Request) -> Response:
        """`POST /create_session`: a new session id, as the SDK server sends it (an SSE `task_id`, then `end`)."""
        sid = str(uuid.uuid4())
        body = wire.sse_event(wire.TASK_ID, sid) + wire.sse_event(wire.END, "")
        return Response(body, media_type="text/event-stream", headers=_STREAM_HEADERS)

    async def create(self, request: Request) -> Response:
        """`POST /create`: the session's episode, started from its task (`task_spec`, or `split` and `index`)."""
        sid = session_id(request)
        body = await json_body(request, {"env_name", "task_spec", "split", "index", "toolset_name"})
        self._check_name(body.get("env_name"))
        if body.get("toolset_name") is not None:
            raise Refused(400, "this server has no toolsets: send no toolset_name")
        row = await self._task_row(body)
        session = self.sessions.claim(sid)
        if session is None:
            raise Refused(400, "Session already exists")
        try:
            episode_id, observation = await self.episodes.open(row, ORS)
        except TooManyEpisodesError as error:
            self.sessions.release(session)
            raise Refused(503, str(error), {"Retry-After": "2"}) from None
        except (ResetError, DatasetRowsError) as error:
            self.sessions.release(session)
            raise Refused(400, str(error)) from None
        except BaseException:
            self.sessions.release(session)
            raise
        session.episode_id = episode_id
        session.messages = opening_messages(row, observation)
        return json_response({"sid": sid})

    async def ping(self, request: Request) -> Response:
        """`POST /ping`: keep the session's episode from idling out."""
        session = self._live(request)
        assert session.episode_id is not None
        self.episodes.touch(session.episode_id, ORS)
        return json_response({"status": "ok"})

    async def delete(self, request: Request) -> Response:
        """`POST /delete` and `POST /delete_session`: close the session's episode; deleting twice does nothing."""
        sid = session_id(request)
        self.sessions.delete(sid)
        return json_response({"sid": sid})

    # The environment.

    async def list_environments(self, request: Request) -> Response:
        """`GET /list_environments`: the one environment served."""
        return json_response([self.name])

    async def version(self, request: Request) -> Response:
        """`GET /version`: agent_env's."""
        return json_response({"version": f"agent_env {__version__}", "build_sha": None})

    async def tools(self, request: Request) -> Response:
        """`GET /{env}/tools`: each tool with its published schema, byte for byte, as `input_schema`."""
        self._check_path_name(request)
        return Response(self._listing, media_type="application/json")

    async def task_tools(self, request: Request) -> Response:
        """`GET /{env}/task_tools`: the same tools (every task has them all), for a session's episode."""
        self._check_path_name(request)
        self._live(request)
        return Response(self._listing, media_type="application/json")

    async def splits(self, request: Request) -> Response:
        """`GET /{env}/splits`: the environment's dataset splits, each typed as the SDK types them."""
        self._check_path_name(request)
        return json_response([wire.split_entry(name) for name in await self._split_names()])

    async def tasks(self, request: Request) -> Response:
        """`POST /{env}/tasks`: a split's tasks, its dataset rows."""
        self._check_path_name(request)
        body = await json_body(request, {"split"}, required={"split"})
        return json_response({"tasks": await self._rows(body["split"]), "env_name": self.name})

    async def num_tasks(self, request: Request) -> Response:
        """`POST /{env}/num_tasks`: how many tasks a split has."""
        self._check_path_name(request)
        body = await json_body(request, {"split"}, required={"split"})
        return json_response({"num_tasks": len(await self._rows(body["split"]))})

    async def task(self, request: Request) -> Response:
        """`POST /{env}/task`: one task of a split, by index."""
        self._check_path_name(request)
        body = await json_body(request, {"split", "index"}, required={"split", "index"})
        return json_response({"task": await self._indexed(body), "env_name": self.name})

    async def task_range(self, request: Request) -> Response:
        """`POST /{env}/task_range`: the tasks `start` (inclusive) to `stop` (exclusive) of a split, as a slice
        reads them (negative indexes from the end, null for either end)."""
        self._check_path_name(request)
        body = await json_body(request, {"split", "start", "stop"}, required={"split"})
        for bound in ("start", "stop"):
            if body.get(bound) is not None and not _whole(body[bound]):
                raise Refused(422, f"{bound} must be a whole number or null")
        rows = await self._rows(body["split"])
        return json_response(
            {"tasks": rows[slice(body.get("start"), body.get("stop"))], "env_name": self.name}
        )

    # An episode.

    async def prompt(self, request: Request) -> Response:
        """`GET /{env}/prompt`: the episode's first turn as blocks (one conversation of several messages flattened
        as the SDK flattens one)."""
        self._check_path_name(request)
        return json_response(wire.prompt_blocks(self._live(request).messages))

    async def messages(self, request: Request) -> Response:
        """`GET /{env}/messages`: the episode's first turn as a conversation."""
        self._check_path_name(request)
        messages = self._live(request).messages
        return json_response([{**message, "detail": None} for message in messages])

    async def call(self, request: Request) -> Response:
        """`POST /{env}/call`: one tool call, answered as an SSE stream (`task_id`, then the result in chunks, or
        `error`); with a `task_id`, the answer of that call again (a stream cut short, resumed)."""
        self._check_path_name(request)
        body = await json_body(request, {"name", "input", "task_id"}, required={"name", "input"})
        name, arguments, task_id = body["name"], body["input"], body.get("task_id")
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise Refused(422, 'a call needs "name" (a string) and "input" (a JSON object of its arguments)')
        if task_id is not None and not isinstance(task_id, str):
            raise Refused(422, '"task_id" must be a string, the id of the call to resume')
        session = self._live(request)
        if task_id is not None:
            found = self.sessions.resumed(session.sid, task_id)
            if found is None:  # as the SDK server answers a result it no longer holds
                return _stream_response(_events(wire.sse_event(wire.ERROR, "unknown task_id")))
            return _stream_response(self._answer(found))
        assert session.episode_id is not None
        task = asyncio.get_running_loop().create_task(self._run(session.episode_id, name, arguments))
        _running.add(task)
        task.add_done_callback(_running.discard)
        call = self.sessions.start(session, uuid.uuid4().hex, task)
        task.add_done_callback(lambda _: setattr(call, "done_at", time.monotonic()))
        # Most calls end well before the first keep-alive is due: their whole stream goes as one body, which costs
        # the server about half what a streamed one does (bench/ors_throughput.py); a longer call is streamed, with
        # its keep-alives.
        done, _ = await asyncio.wait({task}, timeout=wire.KEEPALIVE_SECONDS)
        if done:
            whole = wire.sse_event(wire.TASK_ID, call.task_id) + b"".join(_result(call))
            return Response(whole, media_type="text/event-stream", headers=_STREAM_HEADERS)
        return _stream_response(self._answer(call))

    async def _answer(self, call: Call) -> AsyncIterator[bytes]:
        yield wire.sse_event(wire.TASK_ID, call.task_id)
        while not call.task.done():
            done, _ = await asyncio.wait({call.task}, timeout=wire.KEEPALIVE_SECONDS)
            if not done:
                yield wire.SSE_KEEPALIVE
        for event in _result(call):
            yield event

    async def _run(self, episode_id: str, name: str, arguments: dict[str, Any]) -> tuple[str, str]:
        """Run the call through the registry; `("end", result JSON)`, or `("error", message)` when the episode is
        gone (it timed out, it was closed) or cannot be scored."""
        try:
            text: str = await self.episodes.call(episode_id, name, arguments, ORS)
            ended = self.episodes.ended(episode_id, ORS) is not None
            error: AgentEnvError | None = None
        except EpisodeStateError as refused:  # after the end: the SDK server's latch
            return wire.END, wire.dumps(wire.refusal_result(str(refused), wire.EPISODE_FINISHED))
        except (ToolArgumentError, UnknownToolError) as refused:
            if refused.ended is None:
                reason = wire.INPUT_VALIDATION if isinstance(refused, ToolArgumentError) else wire.NOT_FOUND
                return wire.END, wire.dumps(wire.refusal_result(str(refused), reason))
            text, ended, error = str(refused), True, refused
        except ToolError as refused:  # the tool ran and refused (or failed): what it says is its output
            text, ended, error = str(refused), refused.ended is not None, refused
        except AgentEnvError as failure:  # the episode is gone (timed out, closed), or the server failed
            return wire.ERROR, str(failure)
        except Exception as failure:
            logger.exception("agent_env: ORS call of tool %r failed in episode %s", name, episode_id)
            return wire.ERROR, f"the server failed: {type(failure).__name__}: {failure}"
        metadata = {"error": error.code} if error is not None else None
        if not ended:
            return wire.END, wire.dumps(wire.output_result(text, metadata=metadata))
        try:  # the call ended the episode: its reward goes with it
            reward = await self.episodes.reward(episode_id, ORS)
        except AgentEnvError as failure:
            return wire.ERROR, str(failure)
        return wire.END, wire.dumps(wire.output_result(text, reward=reward, finished=True, metadata=metadata))

    # Helpers.

    def _live(self, request: Request) -> Session:
        session = self.sessions.live(session_id(request))
        if session is None or session.episode_id is None:
            raise Refused(
                404,
                "Active environment not found: this session has no episode (it was never created with POST /create, "
                f"was deleted, or idled out); {ORS.start_again}",
            )
        return session

    def _check_path_name(self, request: Request) -> None:
        named = request.path_params.get("env_name")
        if named is not None:
            self._check_name(named)

    def _check_name(self, named: Any) -> None:
        if named is not None and (not isinstance(named, str) or named.lower() != self.name.lower()):
            shown = wire.dumps(named)[:100]
            raise Refused(404, f"unknown environment {shown}; this server serves {self.name!r}")

    async def _task_row(self, body: dict[str, Any]) -> dict[str, Any]:
        has_spec = body.get("task_spec") is not None
        has_index = body.get("split") is not None or body.get("index") is not None
        if has_spec == has_index:
            raise Refused(422, "Provide either task_spec or both split and index, not both/neither")
        if has_spec:
            if not isinstance(body["task_spec"], dict):
                raise Refused(422, "task_spec must be a JSON object: a task as POST /{env}/tasks lists them")
            row: dict[str, Any] = body["task_spec"]
            return row
        return await self._indexed(body)

    async def _indexed(self, body: dict[str, Any]) -> dict[str, Any]:
        split, index = body.get("split"), body.get("index")
        if not isinstance(split, str) or not isinstance(index, int) or isinstance(index, bool):
            raise Refused(
                422, "split and index must both be provided together: a split's name and a whole number"
            )
        rows = await self._rows(split)
        if not 0 <= index < len(rows):
            raise Refused(400, f"Invalid index: split {split!r} has {len(rows)} tasks")
        return rows[index]

    async def _rows(self, split: Any) -> list[dict[str, Any]]:
        if not isinstance(split, str):
            raise Refused(422, "split must be a split's name")
        if split not in await self._split_names():
            raise Refused(
                400, f"Invalid split: {wire.dumps(split)[:100]}; the splits are {await self._split_names()}"
            )
        return await self.episodes.dataset_rows(split)

    async def _split_names(self) -> list[str]:
        """The environment's splits: those of the three ORS types it has, or, where asking for one it lacks names
        them, all it names, in its order."""
        if self._splits is None:
            found: list[str] = []
            named: list[str] = []
            for split in wire.SPLIT_TYPES:
                try:
                    await self.episodes.dataset_rows(split)
                except DatasetNotFoundError as missing:
                    named = named or list(missing.splits)
                    continue
                found.append(split)
            self._splits = named or found
        return self._splits


def session_id(request: Request) -> str:
    """The request's `X-Session-ID`, held to what a session id may be."""
    sid = request.headers.get(wire.SESSION_HEADER)
    if sid is None:
        raise Refused(400, "X-Session-ID header is required")
    sid = sid.strip()
    if not SESSION_ID.fullmatch(sid):
        raise Refused(
            400, "X-Session-ID must be a session id from POST /create_session (letters, digits, '.-_~')"
        )
    return sid


async def json_body(
    request: Request, allowed: set[str], *, required: frozenset[str] | set[str] = frozenset()
) -> dict[str, Any]:
    """The body as a JSON object with only `allowed` keys and every `required` one (422 naming what is wrong; 400
    for a body that is not standard JSON)."""
    raw = await request.body()
    if not raw.strip():
        raise Refused(422, f"the body must be a JSON object with {', '.join(sorted(required or allowed))}")
    try:
        body = await parse_json(raw)
    except NotJsonError as error:
        raise Refused(400, f"the body is not standard JSON: {error}") from None
    if not isinstance(body, dict):
        raise Refused(422, "the body must be a JSON object")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise Refused(
            422,
            f"unknown fields {', '.join(map(repr, unknown))}; this request takes {', '.join(sorted(allowed))}",
        )
    missing = sorted(key for key in required if key not in body)
    if missing:
        raise Refused(422, f"missing fields {', '.join(map(repr, missing))}")
    return body


def opening_messages(row: dict[str, Any], observation: str | None) -> list[dict[str, Any]]:
    """The episode's first turn as ORS messages: the row's prompt with the reset's observation appended to its last
    message as TRL appends it (a paragraph of its own), so an ORS client's model reads what a trainer's reads."""
    prompt = row.get("prompt")
    if isinstance(prompt, str):
        prompt = [{"role": "user", "content": prompt}]
    messages = []
    for message in prompt if isinstance(prompt, list) else []:
        if isinstance(message, dict) and message.get("role") in ("system", "user", "assistant"):
            messages.append({"role": message["role"], "blocks": _blocks(message.get("content"))})
    appended: Any = own_paragraph(observation, row)
    if isinstance(appended, list):  # content parts: one more block each
        parts = _blocks(appended)
        if messages and messages[-1]["role"] == "user":
            messages[-1]["blocks"].extend(parts)
        else:
            messages.append({"role": "user", "blocks": parts})
    elif appended:
        if messages and messages[-1]["role"] == "user":
            last = messages[-1]["blocks"]
            if last and last[-1]["type"] == "text":
                last[-1] = wire.text_block(last[-1]["text"] + appended)
            else:
                last.append(wire.text_block(appended))
        else:
            messages.append({"role": "user", "blocks": [wire.text_block(appended)]})
    return messages or [{"role": "user", "blocks": [wire.text_block("")]}]


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [wire.text_block(content)]
    blocks = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
            blocks.append(wire.text_block(part["text"]))
        elif isinstance(part, dict):
            blocks.append(wire.text_block(f"[{part.get('type', 'unknown')} part]"))
    return blocks


def _result(call: Call) -> list[bytes]:
    """The events of a finished call after its `task_id`: its result in chunks, or its error."""
    kind, data = call.task.result()
    if kind == wire.ERROR:
        return [wire.sse_event(wire.ERROR, data)]
    return list(wire.result_events(call.task_id, data))


def _stream_response(events: AsyncIterator[bytes]) -> Response:
    return StreamingResponse(events, media_type="text/event-stream", headers=_STREAM_HEADERS)


async def _events(*events: bytes) -> AsyncIterator[bytes]:
    for event in events:
        yield event


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


__all__ = ["ORSRoutes", "Refused", "answered", "detail", "json_body", "opening_messages", "session_id"]
