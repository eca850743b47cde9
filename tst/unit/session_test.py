"""The in-process session: the episode's order of calls, validation before any state changes, results as text."""

import asyncio
import copy
import logging
import math
from decimal import Decimal
from fractions import Fraction

import numpy
import pytest

from agent_env import (
    EpisodeEndedError,
    EpisodeNotStartedError,
    LocalProvider,
    LocalSession,
    SessionClosedError,
    ToolArgumentError,
    ToolError,
    ToolFailedError,
    UnknownToolError,
    tool,
)
from agent_env.errors import RewardError, UnscoredEpisodeError
from agent_env.schema._describe import short
from testbed.toy import ToyDesk
from tst.data.authoring import NOT_AN_OBJECT

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


def test_a_reset_that_fails_leaves_no_episode_running_not_the_last_one(session):
    session.call_tool("battery_status", {})
    with pytest.raises(UnscoredEpisodeError) as raised:
        session.reset(down=5)  # not a list of services: ToyDesk's reset raises
    assert str(raised.value) == (
        'ToyDesk could not start the episode of row {"down": 5} (in process): its reset raised TypeError: '
        "'int' object is not iterable"
    )
    assert isinstance(raised.value.cause, TypeError) and raised.value.__cause__ is raised.value.cause
    with pytest.raises(EpisodeNotStartedError, match="before the episode started"):
        session.call_tool("battery_status", {})


class Observing(ToyDesk):
    """A desk whose reset returns the row's `observed`, whatever it is."""

    def reset(self, **row):
        super().reset()
        return row["observed"]


PARTS = [{"type": "text", "text": "Trade."}, {"type": "image", "url": "https://example.com/chart.png"}]


@pytest.mark.parametrize("observed", [None, "Trade.", PARTS], ids=["None", "text", "content parts"])
def test_a_reset_may_return_what_trl_appends_to_the_prompt(observed):
    assert LocalSession(Observing()).reset(observed=observed) == observed


@pytest.mark.parametrize(
    ("observed", "said"),
    [
        (42, "42 (an int)"),
        (b"Trade.", "b'Trade.' (a bytes)"),
        (["Trade."], "['Trade.'] (a list)"),
        ({"text": "Trade."}, "{'text': 'Trade.'} (a dict)"),
    ],
    ids=["number", "bytes", "list of text", "object"],
)
def test_a_reset_that_returns_what_trl_cannot_append_to_the_prompt_fails_its_episode_naming_it(
    observed, said
):
    session = LocalSession(Observing())
    with pytest.raises(UnscoredEpisodeError) as raised:
        session.reset(task_id="t1", observed=observed)
    assert str(raised.value) == (
        f'Observing could not start the episode of task_id="t1" (in process): its reset returned {said}, not an '
        "observation TRL can append to the prompt: return a string, None, or a list of content parts like "
        '{"type": "text", "text": "..."}'
    )
    with pytest.raises(EpisodeNotStartedError, match="before the episode started"):
        session.call_tool("battery_status", {})


def test_calls_after_end_turn_are_refused_until_the_next_reset(session):
    session.call_tool("end_turn", {})
    with pytest.raises(EpisodeEndedError) as raised:
        session.call_tool("battery_status", {})
    assert str(raised.value) == (
        "tool 'battery_status' was not run: the episode has ended (end_turn was called) and takes no more calls"
    )
    assert raised.value.__notes__ == ["call reset(...) to start another episode"]  # a traceback shows it
    session.reset()
    assert session.call_tool("battery_status", {})


def test_reading_the_reward_ends_a_running_episode(session):
    session.call_tool("submit_offers", {"curves": [CURVE, CURVE]})
    assert session.reward() == 0.2
    with pytest.raises(EpisodeEndedError) as raised:
        session.call_tool("submit_offers", {"curves": [CURVE]})
    assert str(raised.value) == (  # the caller never called end_turn: the message says what it did
        "tool 'submit_offers' was not run: the episode has ended (its reward was read, which ends a running "
        "episode) and takes no more calls"
    )
    session.reset()
    session.call_tool("end_turn", {})
    with pytest.raises(EpisodeEndedError, match=r"\(end_turn was called\)"):
        session.call_tool("battery_status", {})


def test_a_session_that_is_started_some_other_way_names_that_way_to_its_user_not_to_the_model():
    session = LocalSession(ToyDesk(), start_hint="open a new MCP session")
    with pytest.raises(EpisodeNotStartedError) as before:
        session.reward()
    session.reset()
    session.call_tool("end_turn", {})
    with pytest.raises(EpisodeEndedError) as after:
        session.call_tool("battery_status", {})
    assert str(before.value) == "no episode to score: open a new MCP session first"
    assert str(after.value) == (
        "tool 'battery_status' was not run: the episode has ended (end_turn was called) and takes no more calls"
    )
    assert after.value.__notes__ == ["open a new MCP session to start another episode"]


@pytest.mark.parametrize(
    ("name", "arguments", "text"),
    [
        (
            "battery_status",
            {},
            "tool 'battery_status' failed: ConnectionError: the battery's telemetry is down",
        ),
        ("write_note", {"text": "a"}, "tool 'write_note' failed: OSError: the note store is down"),
    ],
)
def test_a_tool_that_raises_fails_with_one_text_and_logs_its_traceback_and_where(
    caplog, name, arguments, text
):
    session = LocalSession(ToyDesk(), where="in episode e1 on the test's host")
    session.reset(down=["battery", "notes"])
    caplog.set_level(logging.ERROR, logger="agent_env.session")
    with pytest.raises(ToolFailedError) as raised:
        session.call_tool(name, arguments)
    with pytest.raises(ToolFailedError) as awaited:
        asyncio.run(session.acall_tool(name, arguments))
    assert str(raised.value) == str(awaited.value) == text
    assert isinstance(
        raised.value.__cause__, ConnectionError | OSError
    )  # a script's traceback shows the cause
    logged, _ = caplog.records
    assert (
        logged.getMessage() == f"agent_env: tool '{name}' of ToyDesk failed in episode e1 on the test's host"
    )
    assert logged.exc_info is not None and logged.exc_info[1] is raised.value.__cause__
    assert session.call_tool("submit_offers", {"curves": [CURVE]})  # the episode goes on


def test_a_tool_that_raises_an_exception_without_a_message_is_named_by_its_class():
    class Broken(ToyDesk):
        @tool
        def inspect_book(self) -> str:
            """Look at the offer book."""
            raise RuntimeError()

    session = LocalSession(Broken())
    session.reset()
    with pytest.raises(ToolFailedError) as raised:
        session.call_tool("inspect_book", {})
    assert str(raised.value) == "tool 'inspect_book' failed: RuntimeError"


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        (None, "None; a reward must be a finite real number, an int or a float like 0.5: did it forget to return"),
        ("0.5", "the string '0.5'; a reward must be a finite real number, an int or a float like 0.5: return the "
         "number itself, not its text"),
        (True, "the bool True; a reward must be a finite real number, an int or a float like 0.5: return 1.0 or 0.0"),
        (math.nan, "nan (a float); a reward must be a finite real number"),
        (-math.inf, "-inf (a float); a reward must be a finite real number"),
        ([0.5], "[0.5] (a list); a reward must be a finite real number"),
        (Decimal("0.5"), "Decimal('0.5') (a Decimal); a reward must be a finite real number"),
    ],
)  # fmt: skip
def test_a_reward_that_is_not_a_finite_real_number_is_refused_naming_the_method(returned, said):
    session = LocalSession(ToyDesk())
    session.reset(scored_as=returned)
    with pytest.raises(RewardError) as raised:
        session.reward()
    assert isinstance(raised.value, UnscoredEpisodeError)  # one error for every episode that cannot be scored
    assert str(raised.value).startswith(
        f"ToyDesk could not score the episode of row {short({'scored_as': returned})} (in process): "
        f"ToyDesk.reward returned {said}"
    )


@pytest.mark.parametrize("returned", [1, 0.25, numpy.float32(0.25), numpy.int64(1), Fraction(1, 4)])
def test_any_finite_real_number_is_a_reward_and_reaches_the_trainer_as_a_float(returned):
    session = LocalSession(ToyDesk())
    session.reset(scored_as=returned)
    reward = session.reward()
    assert type(reward) is float and reward == float(returned)


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


@pytest.mark.parametrize(
    ("arguments", "got"),
    NOT_AN_OBJECT,
    ids=["list of pairs", "JSON text", "None", "number"],
)
def test_arguments_that_are_not_a_mapping_are_refused_saying_what_to_send(session, arguments, got):
    before = copy.deepcopy(vars(session.environment))
    for call in (session.call_tool, lambda *a: asyncio.run(session.acall_tool(*a))):
        with pytest.raises(ToolArgumentError) as refused:
            call("submit_offers", arguments)
        assert str(refused.value).splitlines() == [
            "Invalid arguments for tool 'submit_offers'; fix these and call it again:",
            f"- (arguments): expected an object of named arguments (this tool takes as_offers, curves); {got}",
        ]
    with pytest.raises(ToolArgumentError, match=r"\(this tool takes no arguments: send \{\}\); got null"):
        session.call_tool("battery_status", None)
    assert vars(session.environment) == before


class SettlesBadly(ToyDesk):
    def end_turn(self) -> str:
        """End your turn: the book is settled."""
        raise ArithmeticError("the settlement does not balance")


def test_an_end_turn_that_raises_when_the_reward_ends_the_episode_leaves_it_unscored_not_a_tool_failure(
    caplog,
):
    session = LocalSession(SettlesBadly())
    session.reset(task="t2")
    with caplog.at_level(logging.ERROR, logger="agent_env"), pytest.raises(UnscoredEpisodeError) as failed:
        session.reward()  # the model never called end_turn: reading the reward runs it
    assert str(failed.value) == (
        'SettlesBadly could not score the episode of row {"task": "t2"} (in process): its end_turn, run to end the '
        "episode before its reward is read, raised ArithmeticError: the settlement does not balance"
    )
    assert isinstance(failed.value.__cause__, ArithmeticError)
    assert (
        not caplog.records
    )  # not logged as a failed tool call: the trainer's adapter warns once, with the traceback
    with pytest.raises(EpisodeEndedError):  # the episode is over all the same
        session.call_tool("battery_status", {})
