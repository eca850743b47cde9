"""The Open Reward Standard's wire as its reference SDK speaks it: routes, headers, SSE events, results and blocks.

Read from `openreward` 0.1.167 (its server, `environments/server.py` and `reconnect.py`; its client,
`api/environments/client.py` and `api/_session/`) and checked against them running. Where the specification pages
say otherwise (`/create_session` answering JSON), this follows the SDK, which is what clients speak. Only plain
data lives here, so both directions (serving ORS in `agent_env.ors.server`, reaching an ORS server in
`agent_env.ors._client`) read and write exactly the same shapes; it imports neither.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

SESSION_HEADER = "X-Session-ID"
"""The header naming the session on every session route (and, sent by the SDK client, on listings too)."""
API_KEY_HEADER = "X-API-Key"
"""The only header the SDK client sends its key in."""

# Why a call was not run (`RunToolError.reason`); the SDK client adds `bad_input_shape`, which it raises itself.
NOT_FOUND = "not_found"
INPUT_VALIDATION = "input_validation"
NAME_COLLISION = "name_collision"
EPISODE_FINISHED = "episode_finished"
BAD_INPUT_SHAPE = "bad_input_shape"
REASONS = frozenset({NOT_FOUND, INPUT_VALIDATION, NAME_COLLISION, EPISODE_FINISHED, BAD_INPUT_SHAPE})

# The events of a `/call` (and `/create_session`) stream.
TASK_ID = "task_id"
CHUNK = "chunk"
END = "end"
ERROR = "error"
CHUNK_SIZE = 4096
"""The SDK server sends a result in pieces of this many characters, the last one as `end`."""
KEEPALIVE_SECONDS = 10.0
"""How often the SDK server sends an SSE comment (`: ping`) while a tool runs."""
PING_SECONDS = 10.0
"""How often the SDK client keeps a session alive with `POST /ping`."""

SPLIT_TYPES = ("train", "validation", "test")
"""The types a split can have; a split of another name is typed `validation`, as the SDK server types it."""


class MalformedError(ValueError):
    """What a server sent is not what the wire allows (an event, a result, a listing); the message says what."""


def dumps(value: Any) -> str:
    """Compact JSON text, with a dict's keys in their order (so a schema's bytes are kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# SSE, written (by a server) and read (by a client).


def sse_event(event: str, data: str) -> bytes:
    """One SSE event, its data split into one `data:` line per line, as sse-starlette writes it."""
    lines = [f"event: {event}", *(f"data: {line}" for line in data.split("\n"))]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


SSE_KEEPALIVE = b": ping\r\n\r\n"
"""The comment a server sends while a tool runs, so that proxies and clients know the stream is alive."""


def result_events(task_id: str, result: str) -> Iterator[bytes]:
    """A `/call` stream's events after its `task_id`: the result's JSON text in `chunk`s, the last one `end`."""
    if not result:
        yield sse_event(END, "")
        return
    for start in range(0, len(result), CHUNK_SIZE):
        last = start + CHUNK_SIZE >= len(result)
        yield sse_event(END if last else CHUNK, result[start : start + CHUNK_SIZE])


class EventReader:
    """Reads SSE events from a stream's lines, as the SDK client reads them; a line it cannot read is an error
    (`MalformedError`) where the SDK client would fail on it unnamed."""

    def __init__(self) -> None:
        self._event: str | None = None
        self._data: list[str] = []

    def line(self, line: str) -> tuple[str, str] | None:
        """Take one line (without its line break); the event it completes, as `(event, data)`, or None."""
        if not line:
            event, data = self._event, "\n".join(self._data)
            self._event, self._data = None, []
            return (event, data) if event is not None else None
        if line.startswith(":"):
            return None  # a comment: the server's keep-alive
        field, colon, value = line.partition(":")
        if not colon:
            raise MalformedError(f"the stream sent a line that is no SSE field: {_shown(line)}")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        # other fields (id, retry) say nothing this wire uses
        return None


# A tool's result (`RunToolOutput`).


@dataclass(frozen=True)
class Output:
    """A successful call's output (`ok: true`)."""

    blocks: list[dict[str, Any]]
    reward: float | None
    finished: bool
    metadata: dict[str, Any] | None


@dataclass(frozen=True)
class Refusal:
    """A call the server did not run (`ok: false`): why, in its words, and the reason it gives (None if it gives
    none, as servers before the field did)."""

    error: str
    reason: str | None


def read_result(text: str) -> Output | Refusal:
    """A `/call` result from its JSON text, held to the wire's shape.

    Raises:
        MalformedError: It is not JSON, or not a result: the message says what is wrong.
    """
    try:
        value = json.loads(text)
    except ValueError as error:
        raise MalformedError(f"the result is not JSON ({error}): {_shown(text)}") from None
    if not isinstance(value, dict) or not isinstance(value.get("ok"), bool):
        raise MalformedError(f'the result has no "ok" true or false: {_shown(text)}')
    if not value["ok"]:
        said, reason = value.get("error"), value.get("reason")
        if not isinstance(said, str) or not (reason is None or isinstance(reason, str)):
            raise MalformedError(
                f'a refused call needs a text "error" and a text or null "reason": {_shown(text)}'
            )
        return Refusal(said, reason)
    output = value.get("output")
    if not isinstance(output, dict):
        raise MalformedError(f'a result with "ok": true has no "output" object: {_shown(text)}')
    blocks, reward = output.get("blocks"), output.get("reward")
    finished, metadata = output.get("finished", False), output.get("metadata")
    if not isinstance(blocks, list) or not all(isinstance(block, dict) for block in blocks):
        raise MalformedError(f'an output needs "blocks", a list of objects: {_shown(text)}')
    if reward is not None and not _finite(reward):
        raise MalformedError(f'an output\'s "reward" must be a finite number or null, not {_shown(reward)}')
    if not isinstance(finished, bool):
        raise MalformedError(f'an output\'s "finished" must be true or false, not {_shown(finished)}')
    if metadata is not None and not isinstance(metadata, dict):
        raise MalformedError(f'an output\'s "metadata" must be an object or null, not {_shown(metadata)}')
    return Output(blocks, None if reward is None else float(reward), finished, metadata)


def output_result(
    text: str, *, reward: float | None = None, finished: bool = False, metadata: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`{"ok": true, "output": {...}}`: a call's output as one text block."""
    output = {"blocks": [text_block(text)], "metadata": metadata, "reward": reward, "finished": finished}
    return {"ok": True, "output": output}


def refusal_result(error: str, reason: str) -> dict[str, Any]:
    """`{"ok": false, "error", "reason"}`: a call the server did not run."""
    return {"ok": False, "error": error, "reason": reason}


# Blocks: what a prompt or an output holds.


def text_block(text: str) -> dict[str, Any]:
    """A text block as the SDK writes one."""
    return {"text": text, "detail": None, "type": "text"}


def blocks_text(blocks: list[dict[str, Any]]) -> str:
    """Blocks as the text the model reads: text blocks as they are, one a line; an image (or a block of a kind this
    wire does not know) named with what it holds, never dropped silently."""
    return "\n".join(_block_text(block) for block in blocks)


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return text if isinstance(text, str) else dumps(text)
    if kind == "image":
        return f"[image: {block.get('mimeType') or 'unknown type'}, {_decoded_size(block.get('data'))}]"
    return f"[{kind if isinstance(kind, str) else 'unknown'} block: {_shown(dumps(block))}]"


def prompt_blocks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A conversation as prompt blocks, as the SDK flattens one: a lone user message as its text, else each message
    after a `[role]` block."""
    if len(messages) == 1 and messages[0]["role"] == "user":
        return list(messages[0]["blocks"])
    blocks: list[dict[str, Any]] = []
    for message in messages:
        blocks.append({"text": f"[{message['role']}]", "detail": {"role": message["role"]}, "type": "text"})
        blocks.extend(message["blocks"])
    return blocks


def split_entry(name: str) -> dict[str, str]:
    """`{"name", "type"}` of a split: its type is its name when that is a type, else `validation` (as the SDK)."""
    return {"name": name, "type": name if name in SPLIT_TYPES else "validation"}


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _decoded_size(data: Any) -> str:
    if not isinstance(data, str):
        return "no data"
    try:
        return f"{len(base64.b64decode(data, validate=True)):,} bytes"
    except (binascii.Error, ValueError):
        return f"{len(data):,} characters of data that is not base64"


def _shown(value: Any, most: int = 200) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(text) if len(text) <= most else repr(text[:most]) + f"... ({len(text):,} characters)"


__all__ = [
    "API_KEY_HEADER",
    "BAD_INPUT_SHAPE",
    "CHUNK",
    "CHUNK_SIZE",
    "END",
    "EPISODE_FINISHED",
    "ERROR",
    "INPUT_VALIDATION",
    "KEEPALIVE_SECONDS",
    "NAME_COLLISION",
    "NOT_FOUND",
    "PING_SECONDS",
    "REASONS",
    "SESSION_HEADER",
    "SPLIT_TYPES",
    "SSE_KEEPALIVE",
    "TASK_ID",
    "EventReader",
    "MalformedError",
    "Output",
    "Refusal",
    "blocks_text",
    "dumps",
    "output_result",
    "prompt_blocks",
    "read_result",
    "refusal_result",
    "result_events",
    "split_entry",
    "sse_event",
    "text_block",
]
