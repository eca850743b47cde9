"""The client side (`client.py`): a `RemoteSession` behaves as a `LocalSession` does, error for error, and every
failure of the network is a typed error that arrives in bounded time."""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from agent_env import AgentEnv
from agent_env.errors import (
    AgentEnvError,
    EpisodeEndedError,
    InfrastructureFailedError,
    TimedOutEpisodeError,
)
from agent_env.server import (
    CallTimeoutError,
    EpisodeNotFoundError,
    RemoteError,
    RemoteProvider,
    RemoteSession,
    ServerUnavailableError,
    TooManyEpisodesError,
    UnauthorizedError,
)
from agent_env.server.app import build_app
from agent_env.server.client import base_url, wire_error
from agent_env.session import LocalSession, Session

from .running import running
from .toy import RELEASE, ToyDesk

Step = Callable[[Session], Any]

SCRIPTS: dict[str, list[Step]] = {
    "a good episode": [
        lambda s: s.reset(seed=2),
        lambda s: s.call_tool("add", {"amount": 5}),
        lambda s: s.call_tool("submit", {"offers": [{"hour": 3, "mw": 1.5}]}),
        lambda s: s.call_tool("echo", {"text": "ünïcode"}),
        lambda s: s.reward(),
    ],
    "bad nested arguments": [
        lambda s: s.reset(),
        lambda s: s.call_tool("submit", {"offers": [{"hour": 0, "mw": "lots"}, {"price": 1}]}),
    ],
    "an unknown tool": [lambda s: s.reset(), lambda s: s.call_tool("sell_everything", {"now": True})],
    "a rule the schema cannot say": [
        lambda s: s.reset(),
        lambda s: s.call_tool("submit", {"offers": [{"hour": 1, "mw": 1}, {"hour": 1, "mw": 1}]}),
    ],
    "a call before reset": [lambda s: s.call_tool("add", {"amount": 1})],
    "a reward before reset": [lambda s: s.reward()],
    "a call after end_turn": [
        lambda s: s.reset(),
        lambda s: s.call_tool("end_turn", {}),
        lambda s: s.call_tool("add", {"amount": 1}),
    ],
    "a second reward": [lambda s: s.reset(seed=1), lambda s: s.reward(), lambda s: s.reward()],
    "episodes one after another": [
        lambda s: s.reset(seed=1),
        lambda s: s.call_tool("add", {"amount": 1}),
        lambda s: s.reward(),
        lambda s: s.reset(seed=10),
        lambda s: s.call_tool("add", {"amount": 1}),
        lambda s: s.reward(),
    ],
    "use after close": [
        lambda s: s.reset(),
        lambda s: s.close(),
        lambda s: s.call_tool("add", {"amount": 1}),
    ],
    "reset after close": [lambda s: s.close(), lambda s: s.close(), lambda s: s.reset()],
}


def play(session: Session, script: list[Step]) -> list[Any]:
    outcomes: list[Any] = []
    for step in script:
        try:
            outcomes.append(("ok", step(session)))
        except AgentEnvError as error:
            outcomes.append((type(error), str(error)))
            break
    return outcomes


@pytest.fixture(scope="module")
def provider(served_toy) -> RemoteProvider:
    _, url = served_toy
    return RemoteProvider(url)


@pytest.mark.parametrize("script", SCRIPTS.values(), ids=SCRIPTS.keys())
def test_a_remote_session_answers_as_a_local_one_error_for_error(provider, script):
    assert play(provider.open(), script) == play(LocalSession(ToyDesk()), script)


def test_the_provider_names_and_lists_the_served_environment(provider, served_toy):
    _, url = served_toy
    assert provider.name == "ToyDesk"
    assert provider.tools() == ToyDesk.tools.published
    assert provider.dataset_rows("train") == [{"seed": 0}, {"seed": 1}, {"seed": 2}]
    assert RemoteProvider(f"{url}/mcp/").url == url
    assert base_url("http://h:1/") == "http://h:1"


def test_reset_reuses_the_server_episode(provider, served_toy):
    app, _ = served_toy
    session = provider.open()
    session.reset(seed=1)
    first = session.episode_id
    session.reset(seed=2)
    assert session.episode_id == first
    live = app.state.episodes.count()
    session.close()
    assert app.state.episodes.count() == live - 1


def test_a_provider_pickles_without_its_http_client(provider):
    provider.tools()
    copy = pickle.loads(pickle.dumps(provider))
    assert (copy.url, copy.token, copy.timeout, copy.name) == (provider.url, None, 30.0, "ToyDesk")
    assert copy.capacity_wait == 30.0
    assert copy._client is None
    session = copy.open()
    assert session.reset(seed=4) == "counter starts at 4"
    session.close()


def test_agent_env_connect_gives_a_picklable_factory_whose_environments_reach_the_server(served_toy):
    _, url = served_toy
    env = AgentEnv.connect(url)
    assert repr(env) == "AgentEnv('ToyDesk')"
    factory = pickle.loads(pickle.dumps(env.factory))
    environment = factory()
    assert environment.reset(seed=2) == "counter starts at 2"
    assert environment.add(amount=3) == "total 5"
    assert dict(environment.submit)["function"]["parameters"] == ToyDesk.tools["submit"].input_schema
    assert environment.get_reward() == 5.0
    assert env.dataset("train").to_list() == [{"seed": 0}, {"seed": 1}, {"seed": 2}]


def test_a_served_reset_the_environment_refused_says_once_that_the_episode_could_not_start(
    served_toy, caplog
):
    _, url = served_toy
    environment = AgentEnv.connect(url).factory()
    assert environment.reset(seed="three") is None  # TRL's step goes on
    with caplog.at_level("WARNING", logger="agent_env"):
        assert environment.get_reward() == 0.0
    (warning,) = [record.getMessage() for record in caplog.records if record.name == "agent_env.training"]
    assert warning.count("could not start") == 1, warning  # the server's message names it; not named twice
    assert warning.startswith(
        'agent_env: ToyDesk could not start the episode of row {"seed": "three"} (in served episode '
    )


def test_an_episode_the_server_forgot_raises_episode_not_found_and_the_next_reset_starts_afresh():
    app = build_app(ToyDesk)
    with running(app) as url:
        port = urlsplit(url).port
        session = RemoteProvider(url, timeout=5).open()
        session.reset(seed=1)
    with running(build_app(ToyDesk), port=port):  # the server restarted: its episodes are gone
        with pytest.raises(
            EpisodeNotFoundError, match="expired or unknown: it was closed, idled out after 600 s"
        ):
            session.call_tool("add", {"amount": 1})
        assert session.reset(seed=7) == "counter starts at 7"
        assert session.call_tool("add", {"amount": 1}) == "total 8"


def test_an_episode_the_server_lost_ends_unscored_and_a_trainer_reads_none(caplog):
    with running(build_app(ToyDesk, idle_timeout=0.2)) as url:
        session = RemoteProvider(url, timeout=5).open()
        session.reset(seed=1)
        session.call_tool("add", {"amount": 2})
        time.sleep(0.5)  # the server idles it out, as it forgets every episode when it restarts
        with pytest.raises(EpisodeNotFoundError, match="expired or unknown"):
            session.call_tool("add", {"amount": 1})  # the model reads this
        with pytest.raises(
            EpisodeEndedError, match=r"the episode has ended \(the episode was lost where it ran"
        ):
            session.call_tool("add", {"amount": 1})  # opens no episode that was never reset
        with pytest.raises(
            InfrastructureFailedError, match=r"the episode was lost: episode '.*' expired or unknown"
        ):
            session.reward()  # what it became is unknown: unscored, never a reward it did not earn
        assert session.ended() == "the episode was lost where it ran"
        assert session.reset(seed=3) == "counter starts at 3"
        assert session.call_tool("add", {"amount": 1}) == "total 4"

        env = AgentEnv.connect(url).factory
        instance = env()
        instance.reset(seed=1)
        time.sleep(0.5)
        with caplog.at_level(logging.WARNING, logger="agent_env.training"):
            with pytest.raises(EpisodeNotFoundError):
                instance.add(amount=1)  # TRL hands the model this error, and goes on
            assert instance.get_reward() is None  # left out of its group, not a failed step
        assert "the episode was lost" in caplog.text


def test_an_idled_out_episode_is_replaced_by_the_next_reset():
    with running(build_app(ToyDesk, idle_timeout=0.2)) as url:
        session = RemoteProvider(url).open()
        session.reset(seed=1)
        first = session.episode_id
        time.sleep(0.5)
        assert session.reset(seed=3) == "counter starts at 3"
        assert session.episode_id != first
        assert session.call_tool("add", {"amount": 1}) == "total 4"


def test_a_server_that_is_gone_raises_server_unavailable_at_once():
    with running(build_app(ToyDesk)) as url:
        provider = RemoteProvider(url, timeout=5)
        session = provider.open()
        session.reset()
    started = time.monotonic()
    with pytest.raises(ServerUnavailableError, match="cannot reach the agent_env server at"):
        session.call_tool("add", {"amount": 1})
    with pytest.raises(ServerUnavailableError, match="is `agent-env serve` running there"):
        RemoteProvider(url, timeout=5)
    session.close()  # closing never raises
    assert time.monotonic() - started < 3
    assert isinstance(ServerUnavailableError("x"), ConnectionError)


def test_a_call_the_server_does_not_answer_in_time_raises_call_timeout_and_lets_the_episode_go():
    app = build_app(ToyDesk, call_timeout=10)
    with running(app) as url:
        session = RemoteProvider(url, timeout=0.3).open()
        session.reset()
        started = time.monotonic()
        with pytest.raises(
            CallTimeoutError, match=r"tool 'hang': no answer from the agent_env server at .* 0.3 s"
        ):
            session.call_tool("hang", {"seconds": 30})
        assert time.monotonic() - started < 2
        assert session.episode_id is None
        deadline = time.monotonic() + 5  # the episode is closed on the server in the background
        while app.state.episodes.count() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert app.state.episodes.count() == 0
        RELEASE.set()  # the server's worker is still in the call; let it finish so the server stops at once


def test_a_server_that_answers_nothing_costs_one_timeout_not_two():
    """A server that holds connections without answering (unreachable behind a dead link, frozen): the call fails
    after one timeout; the session's closing of its episode, which meets the same silence, does not add another."""
    with silent_server() as (url, requests):
        session = RemoteProvider(url, timeout=2.0, name="ToyDesk").open()
        session.episode_id = "0123abcd"  # an episode opened before the server fell silent
        started = time.monotonic()
        with pytest.raises(CallTimeoutError, match=r"^tool 'add': no answer from .* within 2 s$"):
            session.call_tool("add", {"amount": 1})
        assert time.monotonic() - started < 3.5  # one timeout and slack; two would be 4 s
        assert session.episode_id is None
        deadline = time.monotonic() + 10
        while not any(line.startswith(b"DELETE /episodes/0123abcd ") for line in requests):
            assert time.monotonic() < deadline, f"the episode was never closed: {requests}"
            time.sleep(0.01)


@contextlib.contextmanager
def silent_server() -> Iterator[tuple[str, list[bytes]]]:
    """A TCP server on loopback that accepts connections and reads requests but never answers; yields its URL and
    the request lines it has read."""
    listener = socket.create_server(("127.0.0.1", 0))
    requests: list[bytes] = []
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            held.append(connection)
            threading.Thread(target=read, args=(connection,), daemon=True).start()

    def read(connection: socket.socket) -> None:
        with contextlib.suppress(OSError):
            requests.append(connection.recv(65536).split(b"\r\n", 1)[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", requests
    finally:
        listener.close()
        for connection in held:
            connection.close()


def test_a_call_past_the_server_timeout_raises_call_timeout_with_the_server_message_and_ends_the_episode():
    app = build_app(ToyDesk, call_timeout=0.3)
    with running(app) as url:
        session = RemoteProvider(url).open()
        session.reset()
        with pytest.raises(
            CallTimeoutError, match="tool 'hang' did not finish within the server's call timeout"
        ) as late:
            session.call_tool("hang", {"seconds": 30})
        assert session.ended() == "tool 'hang' did not finish in time"
        with pytest.raises(
            EpisodeEndedError, match=r"\(tool 'hang' did not finish in time\) and takes no more"
        ):
            session.call_tool("add", {"amount": 1})  # refused here: the server closed the episode
        with pytest.raises(TimedOutEpisodeError) as unscored:
            session.score()
        assert unscored.value.cause is late.value and unscored.value.infrastructure
        assert app.state.episodes.count() == 0  # nothing was opened on the server for the refused call
        assert session.reset(seed=1) == "counter starts at 1"
        RELEASE.set()


def test_a_new_episode_waits_for_room_on_a_full_server_as_its_retry_after_says():
    app = build_app(ToyDesk, max_episodes=1)
    with running(app) as url:
        provider = RemoteProvider(url)
        holder = provider.open()
        holder.reset()
        threading.Timer(1.2, holder.close).start()  # another client's episode ends
        started = time.monotonic()
        waiting = provider.open()
        assert waiting.reset(seed=3) == "counter starts at 3"
        assert 1.2 <= time.monotonic() - started < 5  # asked again about each second (Retry-After: 1)
        waiting.close()


def test_a_server_still_full_past_the_wait_fails_the_reset_as_an_infrastructure_error():
    with running(build_app(ToyDesk, max_episodes=1)) as url:
        provider = RemoteProvider(url, capacity_wait=0.5)
        holder = provider.open()
        holder.reset()
        started = time.monotonic()
        with pytest.raises(InfrastructureFailedError) as full:
            provider.open().reset(seed=3)
        assert 0.5 <= time.monotonic() - started < 2
        assert full.value.starting and isinstance(full.value.cause, TooManyEpisodesError)
        assert full.value.cause.retry_after == 1.0
        assert str(full.value).startswith(
            'ToyDesk could not start the episode of row {"seed": 3} (on the agent_env server at http://127.0.0.1:'
        )
        assert str(full.value).endswith(
            "(still full after 0.5 s of waiting for room: size the server for every episode the clients run at once)"
        )
        holder.close()


def test_the_token_is_sent_and_a_wrong_one_is_refused():
    with running(build_app(ToyDesk, token="tok")) as url:
        assert RemoteProvider(url, token="tok").open().reset(seed=1) == "counter starts at 1"
        with pytest.raises(UnauthorizedError, match="missing or wrong bearer token"):
            RemoteProvider(url, token="tök")
    with running(build_app(ToyDesk, token="tök")) as url:  # sent and compared as UTF-8
        assert RemoteProvider(url, token="tök").open().reset(seed=1) == "counter starts at 1"
        with pytest.raises(UnauthorizedError, match="missing or wrong bearer token"):
            RemoteProvider(url, token="nope")
    provider = RemoteProvider(url, token="tok", name="ToyDesk")
    assert "tok" not in repr(provider) and "tok" not in repr(
        pickle.loads(pickle.dumps(provider)).__dict__.get("_client")
    )


def test_an_answer_that_is_not_the_wire_form_is_a_remote_error():
    request = httpx.Request("GET", "http://h/tools")
    error = wire_error(
        httpx.Response(502, text="<html>bad gateway</html>", request=request), "listing the tools"
    )
    assert type(error) is RemoteError
    assert str(error) == "listing the tools: HTTP 502 from http://h/tools: '<html>bad gateway</html>'"
    own = wire_error(
        httpx.Response(422, json={"error": {"code": "offer_rule", "message": "m"}}, request=request), "x"
    )
    assert (type(own).__name__, str(own)) == ("ToolError", "m")


def test_remote_session_is_a_session():
    assert issubclass(RemoteSession, Session)


ROOT = Path(__file__).resolve().parents[3]

LEAVES_EPISODES_OPEN = """
import sys
from agent_env.server import client

client.EXIT_TIMEOUT = float(sys.argv[2])
provider = client.RemoteProvider(sys.argv[1])
held = [provider.open() for _ in range(3)]  # as a trainer's environment pool holds them, never closed
for session in held:
    session.reset(seed=1)
"""


def leave_episodes_open(url: str, exit_timeout: float) -> float:
    """Run a process that opens episodes on `url` and exits without closing three; how long its exit took."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", LEAVES_EPISODES_OPEN, url, str(exit_timeout)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    return time.monotonic() - started


def test_episodes_a_process_leaves_open_are_closed_when_it_exits():
    app = build_app(ToyDesk)
    with running(app) as url:
        leave_episodes_open(url, 5.0)
        assert app.state.episodes.count() == 0  # not left to the idle timeout


def test_a_server_that_does_not_answer_holds_an_exiting_process_no_longer_than_the_exit_timeout():
    app = build_app(ToyDesk)

    async def unanswered_closes(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "DELETE":  # a server too busy to answer closes
            while (await receive())["type"] != "http.disconnect":
                pass
            return
        await app(scope, receive, send)

    with running(unanswered_closes) as url:
        took = leave_episodes_open(url, 1.0)
    assert (
        took < 6
    )  # the interpreter's start, its imports and three resets, then at most the 1 s exit timeout


def test_every_request_of_a_session_carries_its_own_routing_key_so_a_proxy_can_keep_it_on_one_server():
    # A proxy in front of several `serve` processes hashes X-Agent-Env-Route (docs/scaling.md): every request of an
    # episode (open, reset, call, reward, score, close) must carry the same key, and another session another one.
    app, seen = build_app(ToyDesk), []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
            seen.append((scope["method"], scope["path"], headers.get("x-agent-env-route")))
        await app(scope, receive, send)

    with running(recording) as url:
        provider = RemoteProvider(url)
        first, second = RemoteSession(provider), RemoteSession(provider)
        for session in (first, second):
            session.reset(seed=1)
            session.call_tool("add", {"amount": 2})
            session.reward()
            session.score()
            session.reset(seed=2)
            session.close()
    episodes = [(method, path, route) for method, path, route in seen if path.startswith("/episodes")]
    assert len(episodes) == 12  # open, call, reward, score, reset, close: for each session
    assert {route for *_, route in episodes[:6]} == {first.route}
    assert {route for *_, route in episodes[6:]} == {second.route}
    assert first.route != second.route
    assert [method for method, *_ in episodes[:6]] == ["POST"] * 5 + ["DELETE"]  # closing too
