"""A small OpenAI-compatible server whose every chat reply a script decides: for the fault tests and the benchmarks.

It speaks just enough HTTP/1.1 (keep-alive, Content-Length bodies) on a plain asyncio socket server, so that it
answers thousands of requests a second and is never what a benchmark measures. `GET /v1/models` lists its models;
`POST /v1/chat/completions` gets the script's answer to the request's JSON body.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests"}


@dataclass
class Answer:
    """What the server sends back: a status, a JSON body (or raw text, sent as `content_type` says: text/plain by
    default), headers, after an optional delay; or, with `drop`, nothing: the connection is closed."""

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    content_type: str | None = None


Script = Callable[[dict[str, Any], dict[str, str]], Answer]
"""Decides the answer to a chat request from its JSON body and its headers (lower-case names)."""


def call(name: str, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    """A tool call as a server returns it: `arguments` as a JSON string (a string is sent as it is)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": call_id or f"call-{name}",
        "type": "function",
        "function": {"name": name, "arguments": text},
    }


def completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    finish_reason: str | None = None,
    usage: tuple[int, int] | None = (100, 10),
    choices: list[Any] | None = None,
) -> dict[str, Any]:
    """A chat completion with one choice (or `choices` as given)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    reason = finish_reason or ("tool_calls" if tool_calls else "stop")
    body: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": reason}]
        if choices is None
        else choices,
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return body


def tool_results(body: dict[str, Any]) -> list[str]:
    """The tool messages' texts in a chat request, in order."""
    return [message["content"] for message in body["messages"] if message["role"] == "tool"]


def toy_policy(body: dict[str, Any], headers: dict[str, str] | None = None) -> Answer:
    """A model that plays ToyDesk well: submits its valid offers, then ends its turn, then says it is done."""
    from testbed.toy import VALID

    results = tool_results(body)
    if not results:
        return Answer(completion(tool_calls=[call("submit_offers", VALID)]))
    if len(results) == 1:
        return Answer(completion(tool_calls=[call("end_turn", {})]))
    return Answer(completion("Done."))


class ScriptedServer:
    """The server, its script, and every chat request it got (their bodies and headers). `listing`, when given, is
    what `GET /v1/models` answers instead of a list of `models`."""

    def __init__(
        self,
        script: Script,
        models: tuple[str, ...] = ("scripted",),
        record: bool = True,
        listing: Answer | None = None,
    ) -> None:
        self.script = script
        self.models = models
        self.listing = listing
        self.record = record
        self.requests: list[tuple[dict[str, Any], dict[str, str]]] = []
        self.port = 0
        self.in_flight = 0
        self.most_in_flight = 0
        """The most chat requests it held at once (received, not yet answered)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def serve(self, port: int = 0, started: threading.Event | None = None) -> None:
        server = await asyncio.start_server(self._connection, "127.0.0.1", port, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        self._server = server
        if started is not None:
            started.set()
        async with server:
            await server.serve_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {
                    name.strip().lower(): value.strip()
                    for name, _, value in (line.partition(":") for line in lines[1:] if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
                try:
                    answer = self._answer(method, path, body, headers)
                    if answer.delay:
                        await asyncio.sleep(answer.delay)
                finally:
                    self.in_flight -= 1
                if answer.drop:
                    break
                payload = answer.body if isinstance(answer.body, bytes) else (
                    answer.body.encode() if isinstance(answer.body, str) else json.dumps(answer.body).encode()
                )  # fmt: skip
                kind = answer.content_type or (
                    "application/json" if not isinstance(answer.body, str | bytes) else "text/plain"
                )
                extra = "".join(f"{name}: {value}\r\n" for name, value in answer.headers.items())
                writer.write(
                    f"HTTP/1.1 {answer.status} {REASONS.get(answer.status, 'Error')}\r\ncontent-type: {kind}\r\n"
                    f"content-length: {len(payload)}\r\n{extra}\r\n".encode()
                    + payload
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            # The server is stopping. End the handler as finished, not cancelled: Python 3.11's start_server
            # asks a finished handler for its exception(), which a cancelled one raises, printing a traceback.
            pass
        finally:
            writer.close()

    def _answer(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> Answer:
        if method == "GET" and path == "/v1/models":
            if self.listing is not None:
                return self.listing
            return Answer({"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]})
        if method == "POST" and path == "/v1/chat/completions":
            request = json.loads(body)
            if self.record:
                self.requests.append((request, headers))
            return self.script(request, headers)
        return Answer({"error": {"message": f"no route {method} {path}"}}, status=404)


@contextmanager
def scripted(
    script: Script, models: tuple[str, ...] = ("scripted",), listing: Answer | None = None
) -> Iterator[ScriptedServer]:
    """Run a `ScriptedServer` in a thread of its own on a free loopback port until the block ends."""
    server = ScriptedServer(script, models, listing=listing)
    started = threading.Event()
    loop = asyncio.new_event_loop()
    task: list[asyncio.Task[None]] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        task.append(loop.create_task(server.serve(started=started)))
        with suppress(asyncio.CancelledError):
            loop.run_until_complete(task[0])
        pending = asyncio.all_tasks(loop)  # connections still open (a client gone, an answer still delayed)
        for connection in pending:
            connection.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()

    thread = threading.Thread(target=run, name="scripted-openai", daemon=True)
    thread.start()
    if not started.wait(10):
        raise RuntimeError("the scripted server did not start")
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(task[0].cancel)
        thread.join(10)
