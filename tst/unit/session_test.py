"""The in-process session: the episode's order of calls, validation before any state changes, results as text."""

import asyncio
import copy

import pytest

from agent_env import (
    EpisodeEndedError,
    EpisodeNotStartedError,
    LocalProvider,
    LocalSession,
    SessionClosedError,
    ToolArgumentError,
    ToolError,
    UnknownToolError,
)
from tst.data.toy import ToyDesk

CURVE = {"hours": "HE07-HE10", "points": [[-50, 20], [50, 40]]}


@pytest.fixture
def session():
    session = LocalSession(ToyDesk())
    session.reset(task="t1")
    return session


def test_reset_returns_the_observation():
    assert (
        LocalSession(ToyDesk()).reset(task="t9", prompt=[]) == "Task t9: submit offers, then end your turn."
    )


def test_a_valid_call_runs_and_returns_text(session):
    assert session.call_tool("submit_offers", {"curves": [CURVE]}) == "accepted 1 curves and 0 AS offers"
    assert session.call_tool("battery_status", {}) == '{"soc_mwh":100.0,"max_mw":100.0}'


def test_an_invalid_call_names_the_path_and_changes_nothing(session):
    session.call_tool("submit_offers", {"curves": [CURVE]})
    before = copy.deepcopy(vars(session.environment))
    bad = {
        "curves": [CURVE, {"hours": [25], "points": [[0, 1], [1, "x"]]}],
        "as_offers": [{"product": "reg"}],
    }
    with pytest.raises(ToolArgumentError) as raised:
        session.call_tool("submit_offers", bad)
    message = str(raised.value)
    assert "- curves[1].hours[0]: 25 is greater than the maximum of 24" in message
    assert '- curves[1].points[1][1]: expected number; got string "x"' in message
    assert "- as_offers[0]: missing required property 'hours'" in message
    assert vars(session.environment) == before


def test_a_rule_the_tool_checks_is_refused_and_changes_nothing(session):
    with pytest.raises(ToolError, match=r"curves\[0\].points: prices must be non-decreasing"):
        session.call_tool("submit_offers", {"curves": [{"hours": "all", "points": [[0, 9], [1, 2]]}]})
    assert session.environment.book == []


def test_an_unknown_tool_is_named_with_the_tools_there_are(session):
    with pytest.raises(
        UnknownToolError, match=r"unknown tool \"../../etc/passwd\"; the tools are: submit_offers, "
    ):
        session.call_tool("../../etc/passwd", {})


def test_calls_before_reset_are_refused():
    with pytest.raises(EpisodeNotStartedError, match="before the episode started: call reset"):
        LocalSession(ToyDesk()).call_tool("battery_status", {})


def test_calls_after_end_turn_are_refused_until_the_next_reset(session):
    session.call_tool("end_turn", {})
    with pytest.raises(EpisodeEndedError, match="after the episode ended"):
        session.call_tool("battery_status", {})
    session.reset()
    assert session.call_tool("battery_status", {})


def test_reading_the_reward_ends_a_running_episode(session):
    session.call_tool("submit_offers", {"curves": [CURVE, CURVE]})
    assert session.reward() == 0.2
    with pytest.raises(EpisodeEndedError):
        session.call_tool("submit_offers", {"curves": [CURVE]})


def test_the_reward_before_any_episode_is_refused():
    with pytest.raises(EpisodeNotStartedError):
        LocalSession(ToyDesk()).reward()


def test_a_closed_session_refuses_everything_and_closing_twice_is_harmless(session):
    session.close()
    session.close()
    with pytest.raises(SessionClosedError):
        session.reset()


def test_async_tools_run_from_sync_and_async_callers(session):
    assert session.is_async("write_note") and not session.is_async("battery_status")
    assert session.call_tool("write_note", {"text": "a"}) == "1 notes"
    assert asyncio.run(session.acall_tool("write_note", {"text": "b"})) == "2 notes"
    assert asyncio.run(session.acall_tool("battery_status", {})).startswith("{")
    with pytest.raises(ToolArgumentError, match="text: "):
        asyncio.run(session.acall_tool("write_note", {"text": "x" * 201}))


def test_a_provider_opens_fresh_isolated_sessions():
    provider = LocalProvider(ToyDesk, limit=2)
    first, second = provider.open(), provider.open()
    first.reset()
    second.reset()
    first.call_tool("submit_offers", {"curves": [CURVE]})
    assert first.reward() == 0.5 and second.reward() == 0.0
    assert provider.tools() == ToyDesk.tools.published
    assert provider.dataset_rows("test")[1]["task"] == "test-1"
