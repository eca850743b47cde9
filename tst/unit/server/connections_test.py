"""The client's connection pool (`_connections.py`): many threads share one provider, and every request keeps its
connection to itself until its answer is read, so none is lost to another thread closing it."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agent_env.errors import TimedOutEpisodeError
from agent_env.server import CallTimeoutError, RemoteProvider
from agent_env.server import client as client_module
from agent_env.server._connections import ConnectionPool
from agent_env.server._serve import with_header_timeout
from agent_env.server.app import build_app
from agent_env.server.client import MAX_CONNECTIONS

from .running import running
from .toy import ToyDesk

THREADS = 256


class _Counted:
    """Counts the TCP connections a server accepts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.accepted = 0

    def protocol(self) -> type:
        counter = self
        base = with_header_timeout(10.0)  # the parser `serve` runs here

        def connection_made(self: Any, transport: Any) -> None:
            with counter.lock:
                counter.accepted += 1
            base.connection_made(self, transport)

        return type("CountingProtocol", (base,), {"connection_made": connection_made})


@pytest.fixture(scope="module")
def counted_toy() -> Iterator[tuple[Any, str, _Counted]]:
    counted = _Counted()
    app = build_app(ToyDesk, max_episodes=2 * THREADS, call_timeout=30)
    with running(app, protocol=counted.protocol()) as url:
        yield app, url, counted


def test_hundreds_of_threads_share_one_provider_and_every_episode_gets_its_own_answers(counted_toy):
    """As TRL's rollout threads share one `AgentEnv.connect`: each thread plays an episode (reset, 5 calls, reward)
    at once with the others; every answer is its own episode's, and none is lost. httpx's own pool closed
    connections other threads were reading from (`ReadError: [Errno 9] Bad file descriptor`) and opened one for
    nearly every request past 20 at once."""
    app, url, counted = counted_toy
    provider = RemoteProvider(url, timeout=60)
    start = threading.Barrier(THREADS)
    answers: dict[int, list[Any]] = {}
    failures: list[str] = []
    before = counted.accepted

    def play(index: int) -> None:
        session = provider.open()
        try:
            start.wait()
            played = [session.reset(seed=index)]
            played += [session.call_tool("add", {"amount": step}) for step in range(1, 6)]
            played.append(session.reward())
            answers[index] = played
        except Exception as error:
            failures.append(f"{index}: {type(error).__name__}: {error}")
        finally:
            session.close()

    threads = [threading.Thread(target=play, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failures == []
    for index in range(THREADS):
        totals = [f"total {index + sum(range(1, step + 1))}" for step in range(1, 6)]
        assert answers[index] == [f"counter starts at {index}", *totals, float(index + 15)]
    # Connections are reused (a few reopened after idling past the keep-alive), not one opened per request.
    assert counted.accepted - before <= 2 * MAX_CONNECTIONS < 8 * THREADS
    assert app.state.episodes.count() == 0


def test_requests_past_the_connection_limit_wait_their_turn_in_order_of_arrival():
    app = build_app(ToyDesk)
    with running(app) as url:
        pool = ConnectionPool(max_connections=1, keepalive_expiry=5.0)
        with httpx.Client(base_url=url, transport=pool, timeout=10) as client:
            episode = client.post("/episodes", json={}).json()["episode_id"]
            order: list[int] = []
            held = threading.Thread(
                target=lambda: client.post(f"/episodes/{episode}/tools/sleep", json={"seconds": 0.3})
            )
            held.start()
            time.sleep(0.1)  # the one connection is taken

            def call(index: int) -> None:
                client.post(f"/episodes/{episode}/tools/add", json={"amount": 1})
                order.append(index)

            waiting = []
            for index in range(5):
                waiting.append(threading.Thread(target=call, args=(index,)))
                waiting[-1].start()
                time.sleep(0.02)
            for thread in [held, *waiting]:
                thread.join(timeout=10)
            assert order == [0, 1, 2, 3, 4]
            assert pool.connections() == 1
            assert client.post(f"/episodes/{episode}/reward").json() == {"reward": 5.0}


def test_a_request_that_cannot_get_a_connection_in_time_is_a_call_timeout_naming_the_limit(monkeypatch):
    monkeypatch.setattr(client_module, "MAX_CONNECTIONS", 1)
    with running(build_app(ToyDesk, call_timeout=10)) as url:
        provider = RemoteProvider(url, timeout=0.5)
        blocker = provider.open()
        blocker.reset()
        path = f"/episodes/{blocker.episode_id}/tools/hang"
        hanging = threading.Thread(
            target=lambda: provider.request("POST", path, body={"seconds": 2}, action="hang", timeout=5)
        )
        hanging.start()
        time.sleep(0.1)  # the one connection is taken, for 2 s
        started = time.monotonic()
        with pytest.raises(TimedOutEpisodeError) as raised:  # the episode never started: unscored
            provider.open().reset()
        assert time.monotonic() - started < 1.5
        assert isinstance(raised.value.cause, CallTimeoutError)
        assert re.match(
            r"reset: no answer from the agent_env server at .* within 0.5 s: all 1 of this process's "
            r"connections to it were busy",
            str(raised.value.cause),
        )
        hanging.join(timeout=10)


def test_a_connection_the_server_closed_is_opened_again_for_the_next_request():
    app = build_app(ToyDesk)
    with running(app) as url:
        pool = ConnectionPool(max_connections=1, keepalive_expiry=5.0)
        with httpx.Client(base_url=url, transport=pool, timeout=10) as client:
            assert client.get("/health").status_code == 200
            first = client.get("/health", headers={"Connection": "close"})  # the server closes it after this
            assert first.status_code == 200
            assert client.get("/health").status_code == 200
            assert pool.connections() == 1


def test_closing_the_pool_lets_requests_in_flight_finish_and_closes_their_connections_after():
    with running(build_app(ToyDesk)) as url:
        pool = ConnectionPool(max_connections=2, keepalive_expiry=5.0)
        client = httpx.Client(base_url=url, transport=pool, timeout=10)
        episode = client.post("/episodes", json={}).json()["episode_id"]
        answers: list[int] = []
        flight = threading.Thread(
            target=lambda: answers.append(
                client.post(f"/episodes/{episode}/tools/sleep", json={"seconds": 0.3}).status_code
            )
        )
        flight.start()
        time.sleep(0.1)
        pool.close()
        flight.join(timeout=10)
        assert answers == [200]
        assert pool.connections() == 0
        with pytest.raises(ValueError, match="max_connections must be at least 1"):
            ConnectionPool(max_connections=0, keepalive_expiry=5.0)
