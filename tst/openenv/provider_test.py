"""agent_env's OpenEnv provider on OpenEnv's real servers (openenv-core 0.3.0 and openenv 0.10.0, each serving
testbed/openenv_ledger.py): the full nested schemas, calls validated before they leave, the server's errors and
reward, and its capacity."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from agent_env import AgentEnv, Environment
from agent_env.errors import EpisodeEndedError, InfrastructureFailedError, ToolArgumentError, ToolError
from agent_env.openenv import OpenEnvSession
from agent_env.server.errors import TooManyEpisodesError
from testbed.openenv_venvs import LEDGER_SESSIONS
from tst.openenv.fixtures import VERSIONS
from tst.unit.openenv.client_test import PLACE_ORDERS_SCHEMA

pytestmark = pytest.mark.parametrize("version", VERSIONS)

BUY_3 = {"orders": [{"side": "buy", "qty": 3}]}


@pytest.fixture
def sessions() -> Iterator[list[OpenEnvSession]]:
    """Sessions a test opens, closed when it ends whatever happened (a leaked one would hold a server slot)."""
    opened: list[OpenEnvSession] = []
    yield opened
    for session in opened:
        session.close()


def test_the_tools_are_the_servers_full_nested_schemas_with_end_turn(openenv_tier, version):
    env = AgentEnv.openenv(openenv_tier.ledger_url(version))
    assert env.provider.name == "Ledger"  # from OpenEnv's /metadata
    tools = env.tools()
    assert [tool["name"] for tool in tools] == ["place_orders", "submit", "end_turn"]
    assert tools[0]["inputSchema"] == PLACE_ORDERS_SCHEMA
    assert tools[1]["inputSchema"] == {
        "type": "object",
        "properties": {"total": {"type": "integer", "description": "Units bought minus units sold."}},
        "required": ["total"],
        "additionalProperties": False,
    }
    assert tools[2] == Environment.tools["end_turn"].published()


def test_an_episode_runs_to_the_servers_reward_and_a_bad_call_never_leaves(openenv_tier, version, sessions):
    session = AgentEnv.openenv(openenv_tier.ledger_url(version)).open()
    sessions.append(session)
    session.reset(
        target=3, prompt=[{"role": "user", "content": "Buy 3."}]
    )  # OpenEnv's server passes reset the keys it takes
    with pytest.raises(
        ToolArgumentError, match=r'orders\[0\]\.side: expected one of "buy", "sell"; got "hold"'
    ):
        session.call_tool("place_orders", {"orders": [{"side": "hold", "qty": 3}]})
    with pytest.raises(
        ToolError, match=r"^Error calling tool 'place_orders': orders: send at least one order$"
    ):
        session.call_tool("place_orders", {"orders": []})  # valid here, refused by the tool on the server
    assert (
        session.call_tool("place_orders", BUY_3) == "1 orders in the book"
    )  # the refused calls booked nothing
    assert session.call_tool("submit", {"total": 3}) == "submitted 3"
    assert session.reward() == 1.0  # done: true came with it
    with pytest.raises(EpisodeEndedError):
        session.call_tool("submit", {"total": 3})
    session.reset(target=3)
    session.call_tool("place_orders", BUY_3)
    session.call_tool("submit", {"total": 2})
    assert session.reward() == 0.25


def test_past_the_servers_capacity_a_reset_waits_for_room_and_past_its_wait_is_left_out(
    openenv_tier, version, sessions
):
    url = openenv_tier.ledger_url(version)
    env = AgentEnv.openenv(url, capacity_wait=15)  # the server frees a closed session's slot a moment later
    impatient = AgentEnv.openenv(url, capacity_wait=1).open()
    sessions.extend(env.open() for _ in range(LEDGER_SESSIONS))
    for session in sessions:
        session.reset()
    sessions.append(impatient)
    with pytest.raises(InfrastructureFailedError) as full:  # unscored: None under TRL
        impatient.reset()
    assert isinstance(full.value.cause, TooManyEpisodesError)
    assert str(full.value.cause).startswith(
        f"Server at capacity: {LEDGER_SESSIONS}/{LEDGER_SESSIONS} sessions"
    )
    waiting = env.open()
    sessions.append(waiting)
    threading.Timer(0.5, sessions[0].close).start()
    waiting.reset()  # room freed while it waited
