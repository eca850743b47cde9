"""Both directions at once: the OpenEnv client on an agent_env server's OpenEnv surface behaves as in process.

In memory through Starlette's TestClient, and once over a real socket for what only a socket shows (the token on
the WebSocket handshake, the message-size cap as a close frame).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from agent_env import AgentEnv, LocalSession
from agent_env.openenv import OpenEnvSurface
from agent_env.openenv.client import OpenEnvProvider
from agent_env.server.app import build_app
from agent_env.server.errors import EpisodeNotFoundError, ServerUnavailableError, UnauthorizedError
from testbed.toy import ToyDesk
from tst.unit.server.running import running

from .transports import InProcess

VALID = {
    "curves": [
        {"hours": "HE07-HE10", "points": [[-100, 15], [100, 40]]},
        {"hours": [17, 18], "points": [[0, 5], [9, 9]]},
    ],
    "as_offers": [{"product": "regup", "hours": "HE07", "mw": 10, "price": 4}],
}
MALFORMED = {"curves": [{"hours": "HE07", "points": [[0, 10], [100]]}]}


@pytest.fixture
def transport() -> Iterator[InProcess]:
    """An in-memory transport to a started ToyDesk app with the OpenEnv surface at /openenv."""
    with TestClient(build_app(ToyDesk, surfaces=[OpenEnvSurface()])) as client:
        transport = InProcess(client)
        try:
            yield transport
        finally:
            transport.close()


def outcome(session: Any, name: str, arguments: dict[str, Any]) -> str:
    try:
        return str(session.call_tool(name, arguments))
    except Exception as error:
        return f"{type(error).__name__}: {error}"


def test_the_tools_come_back_exactly_as_published_with_the_servers_end_turn(transport):
    env = AgentEnv(OpenEnvProvider("http://testserver/openenv", transport=transport))
    assert env.tools() == ToyDesk.tools.published
    assert repr(env) == "AgentEnv('ToyDesk')"


def test_an_episode_over_openenv_reads_as_it_does_in_process(transport):
    remote = OpenEnvProvider("http://testserver/openenv", transport=transport).open()
    local = LocalSession(ToyDesk())
    assert remote.reset(task="train-1") == local.reset(task="train-1")
    calls = [
        ("submit_offers", VALID),
        ("submit_offers", MALFORMED),
        ("submit_offers", {"curves": [{"hours": "HE07", "points": [[0, 50], [10, 40]]}]}),  # the tool refuses
        ("write_note", {"text": "hi"}),  # an async tool
        ("battery_status", {}),
        ("nope", {}),
    ]
    for name, arguments in calls:
        assert outcome(remote, name, arguments) == outcome(local, name, arguments)
    assert remote.reward() == local.reward() == 0.2
    sent = [
        message["data"]["tool_name"]
        for message in transport.sent
        if message["type"] == "step" and message["data"]["type"] == "call_tool"
    ]
    assert sent == [
        "submit_offers",
        "submit_offers",
        "write_note",
        "battery_status",
        "end_turn",
    ]  # refused here: never sent
    remote.close()
    assert transport.client.app.state.episodes.count() == 0


def test_over_a_real_socket_the_token_is_checked_on_the_handshake_and_a_message_too_large_ends_the_session():
    app = build_app(ToyDesk, token="s3cret", max_body_bytes=2000, surfaces=[OpenEnvSurface()])
    with running(app) as url:
        with pytest.raises(UnauthorizedError, match="refused the connection: missing or wrong bearer token"):
            AgentEnv.openenv(f"{url}/openenv")
        env = AgentEnv.openenv(f"{url}/openenv", headers={"Authorization": "Bearer s3cret"}, timeout=10)
        assert env.provider.name == "ToyDesk" and env.tools() == ToyDesk.tools.published
        session = env.open()
        session.reset(task="train-0")
        assert session.call_tool("write_note", {"text": "hi"}) == "1 notes"
        with pytest.raises(ServerUnavailableError, match="1009"):
            session.call_tool("submit_offers", {"curves": [{"hours": "HE07", "points": [[0, 1]] * 10}] * 30})
        with pytest.raises(EpisodeNotFoundError, match="lost with its connection"):
            session.call_tool("write_note", {"text": "again"})
        session.reset(task="train-1")
        assert session.call_tool("write_note", {"text": "again"}) == "1 notes"
        session.close()
