"""Faults injected into a served environment over a real socket, each repeated: a client that disconnects mid-call,
a tool that raises, a tool that hangs past the call timeout, a client that never closes its episode, and the server
restarted under a trainer. In each case the other episodes are unaffected, the server keeps serving, and the
traced Python heap of the process (server and clients both run in it) returns to its baseline.

The single-fault behaviours (the 500's body, the 504's message, the 404 after a restart) are pinned in
`control_api_test.py`, `episodes_test.py` and `client_test.py`; this file adds repetition, bystanders and memory.
"""

from __future__ import annotations

import gc
import json
import logging
import socket
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from agent_env import AgentEnv
from agent_env.server import EpisodeNotFoundError, RemoteProvider, ServerUnavailableError
from agent_env.server.app import build_app

from .running import running
from .toy import ToyDesk

REPEATS = 12
HEAP_TOLERANCE = 384 * 1024
"""Bytes the traced heap may stay above its baseline after the repeats (allocator and interning noise)."""


@pytest.fixture(autouse=True)
def quiet_server_log(monkeypatch):
    """The server logs every crash with its traceback; kept records would count as memory that never returns."""
    monkeypatch.setattr(logging.getLogger("agent_env.server"), "disabled", True)
    monkeypatch.setattr(logging.getLogger("agent_env.session"), "disabled", True)


def heap() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


class Served:
    """A toy app on a real socket, a client, and a bystander episode whose counter must only move when told."""

    def __init__(self, url: str, app: Any) -> None:
        self.url, self.app, self.registry = url, app, app.state.episodes
        self.http = httpx.Client(base_url=url, timeout=10)
        self.bystander = self.open()
        self.total = 0

    def open(self, row: dict[str, Any] | None = None) -> str:
        answer = self.http.post("/episodes", json=row or {})
        assert answer.status_code == 201, answer.text
        return str(answer.json()["episode_id"])

    def bystander_adds(self) -> None:
        self.total += 1
        answer = self.http.post(f"/episodes/{self.bystander}/tools/add", json={"amount": 1})
        assert answer.json() == {"result": f"total {self.total}"}

    def settled(self) -> None:
        """Every call has finished and only the bystander is live."""
        wait_for(lambda: self.registry.stuck_workers() == 0 and self.registry.count() == 1)


def disconnect_mid_call(served: Served) -> None:
    episode = served.open()
    host, port = urlsplit(served.url).hostname, urlsplit(served.url).port
    body = json.dumps({"seconds": 0.05}).encode()
    with socket.create_connection((host, port)) as raw:
        raw.sendall(
            f"POST /episodes/{episode}/tools/hang HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        time.sleep(0.01)  # the call is running when the client goes
    served.bystander_adds()
    after = served.http.post(
        f"/episodes/{episode}/tools/add", json={"amount": 2}
    )  # waits for the hang to end
    assert after.json() == {"result": "total 2"}  # the episode is intact and usable
    assert served.http.delete(f"/episodes/{episode}").status_code == 204


def tool_raises(served: Served) -> None:
    episode = served.open({"seed": 5})
    crashed = served.http.post(f"/episodes/{episode}/tools/crash", json={})
    assert (crashed.status_code, crashed.json()["error"]["code"]) == (500, "tool_failed")
    served.bystander_adds()
    assert served.http.post(f"/episodes/{episode}/tools/add", json={"amount": 1}).json() == {
        "result": "total 6"
    }
    assert served.http.delete(f"/episodes/{episode}").status_code == 204


def tool_hangs(served: Served) -> None:
    episode = served.open()
    hung = served.http.post(f"/episodes/{episode}/tools/hang", json={"seconds": 0.4})
    assert (hung.status_code, hung.json()["error"]["code"]) == (504, "call_timeout")
    served.bystander_adds()
    assert served.http.post(f"/episodes/{episode}/reward").status_code == 404  # closed: its state is unknown


FORGOTTEN = 3
"""Episodes a never-closing client leaves at once: each wait for the reaper frees them together."""


def never_closed(served: Served) -> None:
    for seed in range(FORGOTTEN):
        served.open({"seed": seed})
    deadline = time.monotonic() + 15
    while served.registry.count() > 1:  # until the reaper frees the forgotten one
        assert time.monotonic() < deadline, "the idle episode was never freed"
        time.sleep(0.05)
        served.bystander_adds()  # the bystander is in use, so it never idles out


FAULTS: dict[str, tuple[Callable[[Served], None], dict[str, float], int]] = {
    "a client disconnects mid-call": (disconnect_mid_call, {}, REPEATS),
    "a tool raises": (tool_raises, {}, REPEATS),
    "a tool hangs past the call timeout": (tool_hangs, {"call_timeout": 0.2}, REPEATS),
    # Long enough that the bystander, touched between steps, never idles out on a loaded 2-core machine; each
    # repeat waits that long, so fewer repeats leave as many episodes (FORGOTTEN a repeat).
    "a client never closes its episode": (never_closed, {"idle_timeout": 1.5}, REPEATS // FORGOTTEN),
}


@pytest.mark.parametrize(("fault", "limits", "repeats"), FAULTS.values(), ids=FAULTS.keys())
def test_a_repeated_fault_leaves_other_episodes_alone_and_memory_at_its_baseline(
    fault, limits, repeats, stack
):
    app = build_app(ToyDesk, **limits)
    tracemalloc.start()
    try:
        with running(app, **stack) as url:
            served = Served(url, app)
            for _ in range(2):  # warm up: lazy imports, worker threads, connection pools
                fault(served)
            served.settled()
            served.bystander_adds()  # used just now, so it outlives the pause of counting the heap
            baseline = heap()
            for _ in range(repeats):
                fault(served)
            served.settled()
            grown = heap() - baseline
            assert (served.http.get("/health")).json()["episodes"] == 1
            served.http.close()
    finally:
        tracemalloc.stop()
    print(f"{fault.__name__} x {repeats}: traced heap {grown / 1024:+.0f} KiB")
    assert grown < HEAP_TOLERANCE, f"the heap grew by {grown / 1024:.0f} KiB over {repeats} repeats"


@contextmanager
def server_on(port: int) -> Iterator[str]:
    with running(build_app(ToyDesk), port=port) as url:
        yield url


def test_a_server_restart_under_a_trainer_fails_each_session_typed_and_training_goes_on():
    with running(build_app(ToyDesk)) as url:
        port = urlsplit(url).port
    provider = RemoteProvider(url, timeout=5, name="ToyDesk")
    tracemalloc.start()
    try:
        for round_ in range(4):
            with server_on(port):
                if round_ == 0:
                    sessions = [provider.open() for _ in range(4)]
                    trainee = AgentEnv.connect(url, timeout=5).factory()  # what TRL builds
                for index, session in enumerate(sessions):
                    if round_ == 0:
                        session.reset(seed=index)
                    else:  # the server restarted: the held episode is gone, said so, and the next reset works
                        with pytest.raises(EpisodeNotFoundError, match="expired or unknown"):
                            session.call_tool("add", {"amount": 1})
                        assert session.reset(seed=index) == f"counter starts at {index}"
                    assert session.call_tool("add", {"amount": 10}) == f"total {index + 10}"
                if round_:
                    with pytest.raises(EpisodeNotFoundError):
                        trainee.add(amount=1)
                assert trainee.reset(seed=round_) == f"counter starts at {round_}"
                assert trainee.add(amount=1) == f"total {round_ + 1}"
                if round_ == 1:
                    baseline = heap()
            started = time.monotonic()  # the server is down: every session fails at once, typed
            for session in sessions:
                with pytest.raises(ServerUnavailableError, match="cannot reach the agent_env server"):
                    session.call_tool("add", {"amount": 1})
            with pytest.raises(ServerUnavailableError):
                trainee.add(amount=1)
            assert time.monotonic() - started < 5
        grown = heap() - baseline
    finally:
        tracemalloc.stop()
    for session in sessions:
        session.close()
    print(
        f"server restarted x 2 under 4 sessions and a factory environment: traced heap {grown / 1024:+.0f} KiB"
    )
    assert grown < HEAP_TOLERANCE, f"the heap grew by {grown / 1024:.0f} KiB over two restarts"


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_an_mcp_client_that_disconnects_mid_call_keeps_its_session_and_episode(stack):
    app = build_app(ToyDesk, call_timeout=5)
    with running(app, **stack) as url:
        served = Served(url, app)
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        session_id = served.http.post("/mcp", json=initialize, headers=MCP_HEADERS).headers["mcp-session-id"]
        headers = {**MCP_HEADERS, "Mcp-Session-Id": session_id, "Mcp-Protocol-Version": "2025-11-25"}
        served.http.post(
            "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
        )

        def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            body = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
            return served.http.post("/mcp", json=body, headers=headers).json()["result"]

        first = call("add", {"amount": 1})
        host, port = urlsplit(url).hostname, urlsplit(url).port
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "hang", "arguments": {"seconds": 0.3}},
            }
        )
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        with socket.create_connection((host, port)) as raw:
            raw.sendall(
                f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n{lines}Content-Length: {len(body)}\r\n\r\n{body}".encode()
            )
            time.sleep(0.05)
        served.bystander_adds()
        after = call("add", {"amount": 1})
        assert after["content"][0]["text"] == "total 2"
        assert after["_meta"]["agent-env/episode_id"] == first["_meta"]["agent-env/episode_id"]
        wait_for(lambda: app.state.episodes.stuck_workers() == 0)
        assert app.state.episodes.count() == 2  # the bystander and the MCP session's episode
        served.http.close()
