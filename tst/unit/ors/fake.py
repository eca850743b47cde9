"""A scripted ORS server in memory (an httpx transport), as the SDK's server answers, that fails on request.

`FakeORS().transport()` is what `ORSEnvironment(..., transport=...)` reaches it by. It serves one environment,
`orders`, with a tool of nested pydantic-shaped inputs (`$defs`, `$ref`, titles), one without arguments (its schema
null), and `submit`, which finishes the episode with reward 1.0. Every request is recorded; `fail(path, ...)` queues
answers (or exceptions) a path gives before its own, and `results` queues what the next calls answer.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import httpx

from agent_env.ors import _wire as wire

PLACE_SCHEMA = {
    "$defs": {
        "Order": {
            "properties": {
                "side": {"enum": ["buy", "sell"], "title": "Side", "type": "string"},
                "qty": {"maximum": 100, "minimum": 1, "title": "Qty", "type": "integer"},
            },
            "required": ["side", "qty"],
            "title": "Order",
            "type": "object",
        }
    },
    "properties": {"orders": {"items": {"$ref": "#/$defs/Order"}, "title": "Orders", "type": "array"}},
    "required": ["orders"],
    "title": "PlaceOrders",
    "type": "object",
}
SUBMIT_SCHEMA = {
    "properties": {"total": {"title": "Total", "type": "integer"}},
    "required": ["total"],
    "title": "Submit",
    "type": "object",
}
TOOLS = [
    {"name": "place_orders", "description": "Place orders.", "input_schema": PLACE_SCHEMA},
    {"name": "peek", "description": "Show the book.", "input_schema": None},
    {"name": "submit", "description": "Submit the total.", "input_schema": SUBMIT_SCHEMA},
]
TASKS = {
    "train": [{"id": "train-0", "target": 3}, {"id": "train-1", "target": 5}],
    "test": [{"id": "test-0", "target": 1}],
}


class Cut(httpx.AsyncByteStream):
    """A body that sends `sent`, then breaks off as a dropped connection does."""

    def __init__(self, sent: bytes) -> None:
        self.sent = sent

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.sent
        raise httpx.ReadError("the connection was reset")


class FakeORS:
    """See the module docstring."""

    def __init__(
        self, *, tools: list[dict[str, Any]] | None = None, listing: dict[str, Any] | None = None
    ) -> None:
        self.tools = TOOLS if tools is None else tools
        self.listing = listing
        self.environments = ["orders"]
        self.requests: list[httpx.Request] = []
        self.sessions: dict[str, dict[str, Any]] = {}
        self.deleted: list[str] = []
        self.faults: dict[str, list[Any]] = defaultdict(list)
        self.results: list[Any] = []
        self.tasks_supported = True

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def fail(self, path: str, *answers: Any) -> None:
        """Answer `path` with `answers` (an `httpx.Response`, or an exception to raise), one per request, first."""
        self.faults[path].extend(answers)

    def calls(self) -> list[dict[str, Any]]:
        """The bodies of every `/call` request, in order."""
        return [
            json.loads(request.content) for request in self.requests if request.url.path.endswith("/call")
        ]

    def paths(self) -> list[str]:
        return [request.url.path for request in self.requests]

    async def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if self.faults[path]:
            fault = self.faults[path].pop(0)
            if isinstance(fault, BaseException):
                raise fault
            return fault
        body = json.loads(request.content) if request.content else None
        sid = request.headers.get(wire.SESSION_HEADER)
        if path == "/list_environments":
            return httpx.Response(200, json=self.environments)
        if path == "/create_session":
            events = wire.sse_event("task_id", str(uuid.uuid4())) + wire.sse_event("end", "")
            return httpx.Response(200, content=events, headers={"content-type": "text/event-stream"})
        if path in ("/delete", "/delete_session"):
            if path == "/delete" and sid in self.sessions:
                self.deleted.append(sid)
                del self.sessions[sid]
            return httpx.Response(200, json={"sid": sid})
        if path == "/ping":
            return httpx.Response(200 if sid in self.sessions else 404, json={"status": "ok"})
        if path == "/create":
            spec = body.get("task_spec") or TASKS[body["split"]][body["index"]]
            self.sessions[sid] = spec
            return httpx.Response(200, json={"sid": sid})
        if path == "/orders/tools":
            return httpx.Response(200, json=self.listing or {"tools": self.tools, "terminal_tool": None})
        if path == "/orders/splits":
            return httpx.Response(200, json=[{"name": name, "type": name} for name in TASKS])
        if path == "/orders/tasks":
            if not self.tasks_supported:
                return httpx.Response(
                    400, json={"detail": "list_tasks is not supported for this environment."}
                )
            if body["split"] not in TASKS:
                return httpx.Response(400, json={"detail": "Invalid split"})
            return httpx.Response(200, json={"tasks": TASKS[body["split"]], "env_name": "orders"})
        if path == "/orders/num_tasks":
            return httpx.Response(200, json={"num_tasks": len(TASKS[body["split"]])})
        if path == "/orders/prompt":
            if sid not in self.sessions:
                return httpx.Response(404, json={"detail": "Active environment not found"})
            return httpx.Response(200, json=[wire.text_block(f"Reach {self.sessions[sid]['target']}.")])
        if path == "/orders/call":
            if sid not in self.sessions:
                return httpx.Response(404, json={"detail": "Active environment not found"})
            return self._call(body)
        return httpx.Response(404, json={"detail": "Not Found"})

    def _call(self, body: dict[str, Any]) -> httpx.Response:
        result = self.results.pop(0) if self.results else None
        if isinstance(result, httpx.Response):
            return result
        if result is None:
            finished = body["name"] == "submit"
            result = wire.output_result(
                f"{body['name']} ran", reward=1.0 if finished else None, finished=finished
            )
        return sse(wire.dumps(result))


def sse(result: str, task_id: str = "a" * 32) -> httpx.Response:
    """A `/call` stream: its `task_id`, then `result` in chunks."""
    events = wire.sse_event("task_id", task_id) + b"".join(wire.result_events(task_id, result))
    return httpx.Response(200, content=events, headers={"content-type": "text/event-stream"})


def stream(body: bytes) -> httpx.Response:
    """A `/call` stream of exactly `body`."""
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


def cut(sent: bytes) -> httpx.Response:
    """A `/call` stream that sends `sent` and breaks off."""
    return httpx.Response(200, stream=Cut(sent), headers={"content-type": "text/event-stream"})
