"""The ORS surface over a real socket: what only a socket shows (a client that hangs up mid-stream), and
`AgentEnv.ors` against an agent_env server end to end."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from agent_env import AgentEnv, LocalSession, ToolArgumentError
from agent_env.ors import ORSSurface
from agent_env.ors import _wire as wire
from agent_env.server.app import build_app
from testbed.toy import MALFORMED, VALID, ToyDesk
from tst.unit.ors.server_test import Chatty, events
from tst.unit.server.running import running


@pytest.fixture(scope="module")
def chatty() -> Iterator[str]:
    with running(build_app(Chatty, surfaces=[ORSSurface()], idle_timeout=3.0)) as url:
        yield url


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls longer than 0.1 s are streamed, with a keep-alive every 0.1 s (10 s as served), so a short nap shows
    what a long call does."""
    monkeypatch.setattr(wire, "KEEPALIVE_SECONDS", 0.1)


@pytest.fixture(scope="module")
def toy() -> Iterator[str]:
    with running(build_app(ToyDesk, surfaces=[ORSSurface()])) as url:
        yield url


def created(url: str) -> str:
    sid = events(httpx.post(f"{url}/create_session", json={}).text)[0][1]
    answer = httpx.post(
        f"{url}/create", json={"split": "base", "index": 0}, headers={wire.SESSION_HEADER: sid}
    )
    assert answer.status_code == 200
    return sid


def test_a_client_that_hangs_up_mid_stream_leaves_the_server_up_and_no_episode_behind(chatty, streamed):
    sid = created(chatty)
    with (
        httpx.Client(base_url=chatty, timeout=10) as client,
        client.stream(
            "POST",
            "/chatty/call",
            json={"name": "nap", "input": {"seconds": 0.5}},
            headers={wire.SESSION_HEADER: sid},
        ) as stream,
    ):
        lines = stream.iter_lines()
        assert next(lines) == "event: task_id"
        task_id = next(lines).removeprefix("data: ")
        assert [next(lines), next(lines)] == ["", ": ping"]  # streamed, kept alive while the tool runs
    # hung up before the result: the call still runs to its end, and can be read again by its task_id
    assert httpx.get(f"{chatty}/health").json()["episodes"] == 1
    time.sleep(0.7)
    again = httpx.post(
        f"{chatty}/chatty/call",
        json={"name": "nap", "input": {"seconds": 0.5}, "task_id": task_id},
        headers={wire.SESSION_HEADER: sid},
    )
    assert again.status_code == 200, again.text
    assert wire.read_result(events(again.text)[-1][1]).blocks[0]["text"] == "rested"
    # and a client that never comes back holds its episode no longer than the idle timeout
    deadline = time.monotonic() + 10
    while httpx.get(f"{chatty}/health").json()["episodes"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert httpx.get(f"{chatty}/health").json()["episodes"] == 0
    assert httpx.post(f"{chatty}/ping", headers={wire.SESSION_HEADER: sid}).status_code == 404


def test_many_clients_hanging_up_at_once_take_nothing_down(chatty, streamed):
    sids = [created(chatty) for _ in range(8)]

    def hang_up(sid: str) -> None:
        with (
            httpx.Client(base_url=chatty, timeout=10) as client,
            client.stream(
                "POST",
                "/chatty/call",
                json={"name": "nap", "input": {"seconds": 0.3}},
                headers={wire.SESSION_HEADER: sid},
            ) as stream,
        ):
            next(stream.iter_lines())

    threads = [threading.Thread(target=hang_up, args=(sid,)) for sid in sids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for sid in sids:
        assert httpx.post(f"{chatty}/delete", headers={wire.SESSION_HEADER: sid}).status_code == 200
    assert httpx.get(f"{chatty}/health").json()["episodes"] == 0


def test_agent_env_ors_on_an_agent_env_server_publishes_byte_for_byte_and_scores_as_in_process(toy):
    env = AgentEnv.ors(toy, "toydesk")
    assert env.tools() == ToyDesk.tools.published  # normalizing a published schema changes nothing
    rows = env.provider.dataset_rows("train")
    assert [row["task_spec"] for row in rows] == ToyDesk().dataset_rows("train")
    with env.open() as session, LocalSession(ToyDesk()) as local:
        assert session.reset(**rows[0]) == "Trade.\n\n" + local.reset(**rows[0]["task_spec"])
        assert session.call_tool("submit_offers", VALID) == local.call_tool("submit_offers", VALID)
        with pytest.raises(ToolArgumentError) as refused:
            session.call_tool("submit_offers", MALFORMED)
        with pytest.raises(ToolArgumentError) as here:
            local.call_tool("submit_offers", MALFORMED)
        assert str(refused.value) == str(here.value)  # refused here, before the call left, in the same words
        assert session.score().reward == local.score().reward == 0.3  # end_turn sent to read it: the server's
    assert httpx.get(f"{toy}/health").json()["episodes"] == 0


def test_a_process_that_exits_without_closing_its_episodes_deletes_their_sessions(toy):
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        from agent_env import AgentEnv
        env = AgentEnv.ors({toy!r}, "toydesk")
        sessions = [env.open() for _ in range(3)]
        for index, session in enumerate(sessions):
            session.reset(split="train", index=index)
        print("open", flush=True)
        """
    )
    opened = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert opened.returncode == 0 and opened.stdout.strip() == "open", opened.stderr
    assert httpx.get(f"{toy}/health").json()["episodes"] == 0  # deleted as it exited, not left to the reaper
