"""The session contract, run against every provider (in process, served, Ray): the same calls give the same results
and the same errors, class for class and message for message, and a refused call changes nothing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent_env import (
    EpisodeEndedError,
    EpisodeNotStartedError,
    LocalSession,
    SessionClosedError,
    ToolArgumentError,
    ToolError,
    ToolFailedError,
    UnknownToolError,
)
from agent_env.errors import AgentEnvError, RewardError, UnscoredEpisodeError
from agent_env.schema import fingerprint
from agent_env.server.errors import DatasetNotFoundError, ServerError
from agent_env.session import Provider, Score, Session
from agent_env.training.trl import environment_class
from testbed.toy import ToyDesk
from tst.data.authoring import NOT_AN_OBJECT

WITHOUT_DATASETS = {"openenv"}
"""Providers whose wire carries no datasets (OpenEnv's /ws): their `dataset_rows` says so instead."""

WITHOUT_ERROR_CODES = {"openenv"}
"""Providers whose wire names no error class (OpenEnv's calls fail as `execution_error`, whatever the tool raised):
their tool errors arrive as `ToolError`, with the same message."""

CURVE = {"hours": "HE07-HE10", "points": [[-50, 20], [50, 40]]}
BAD = {"curves": [CURVE, {"hours": [25], "points": [[0, 1], [1, "x"]]}], "as_offers": [{"product": "reg"}]}


@pytest.fixture
def session(provider: Provider) -> Iterator[Session]:
    session = provider.open()
    session.reset(task="t1")
    yield session
    session.close()


def test_reset_returns_the_observation(provider):
    with provider.open() as session:
        assert session.reset(task="t9", prompt=[]) == "Task t9: submit offers, then end your turn."


def test_a_valid_call_runs_and_returns_text(session):
    assert session.call_tool("submit_offers", {"curves": [CURVE]}) == "accepted 1 curves and 0 AS offers"
    assert session.call_tool("battery_status", {}) == '{"soc_mwh":100.0,"max_mw":100.0}'


def test_an_invalid_call_names_the_path_and_changes_nothing(session):
    session.call_tool("submit_offers", {"curves": [CURVE]})
    with pytest.raises(ToolArgumentError) as raised:
        session.call_tool("submit_offers", BAD)
    message = str(raised.value)
    assert message == in_process_error(lambda s: s.call_tool("submit_offers", BAD))
    assert "- curves[1].hours[0]: 25 is greater than the maximum of 24" in message
    assert '- curves[1].points[1][1]: expected number; got string "x"' in message
    assert "- as_offers[0]: missing required property 'hours'" in message
    assert session.reward() == 0.1  # one curve in the book, as before the refused call


@pytest.mark.parametrize("arguments", [arguments for arguments, _ in NOT_AN_OBJECT])
def test_arguments_that_are_no_object_are_refused_as_in_process(session, arguments):
    with pytest.raises(ToolArgumentError) as raised:
        session.call_tool("submit_offers", arguments)
    assert str(raised.value) == in_process_error(lambda s: s.call_tool("submit_offers", arguments))
    assert "(arguments): expected an object of named arguments" in str(raised.value)


def test_a_rule_the_tool_checks_is_refused_and_changes_nothing(session):
    with pytest.raises(ToolError, match=r"^curves\[0\].points: prices must be non-decreasing$"):
        session.call_tool("submit_offers", {"curves": [{"hours": "all", "points": [[0, 9], [1, 2]]}]})
    assert session.reward() == 0.0


def test_an_unknown_tool_is_named_with_the_tools_there_are(session):
    with pytest.raises(UnknownToolError) as raised:
        session.call_tool("../../etc/passwd", {})
    assert str(raised.value).startswith('unknown tool "../../etc/passwd"; the tools are: submit_offers, ')
    assert str(raised.value) == in_process_error(lambda s: s.call_tool("../../etc/passwd", {}))


def test_calls_before_reset_are_refused(provider):
    with provider.open() as session, pytest.raises(EpisodeNotStartedError) as raised:
        session.call_tool("battery_status", {})
    assert str(raised.value) == (
        "tool 'battery_status' was called before the episode started: call reset(...) first"
    )


def test_calls_after_end_turn_are_refused_until_the_next_reset(session):
    session.call_tool("end_turn", {})
    with pytest.raises(EpisodeEndedError) as raised:
        session.call_tool("battery_status", {})
    # the model reads this (TRL counts the call as failed): it names no call the model cannot make
    assert str(raised.value) == (
        "tool 'battery_status' was not run: the episode has ended (end_turn was called) and takes no more calls"
    )
    assert raised.value.__notes__ == ["call reset(...) to start another episode"]  # for the session's user
    session.reset()
    assert session.call_tool("battery_status", {})


def test_a_tool_that_raises_reads_the_same_wherever_the_episode_runs(provider, request):
    with provider.open() as session:
        session.reset(down=["battery", "notes"])
        with pytest.raises(ToolError) as plain:
            session.call_tool("battery_status", {})
        with pytest.raises(ToolError) as awaited:
            session.call_tool("write_note", {"text": "a"})
        assert session.call_tool("submit_offers", {"curves": [CURVE]}) == "accepted 1 curves and 0 AS offers"
    assert (
        str(plain.value) == "tool 'battery_status' failed: ConnectionError: the battery's telemetry is down"
    )
    assert str(awaited.value) == "tool 'write_note' failed: OSError: the note store is down"
    if request.node.callspec.params["provider"] not in WITHOUT_ERROR_CODES:
        assert type(plain.value) is ToolFailedError and type(awaited.value) is ToolFailedError


def test_reading_the_reward_ends_a_running_episode(session):
    session.call_tool("submit_offers", {"curves": [CURVE, CURVE]})
    assert session.reward() == 0.2
    assert session.reward() == 0.2
    with pytest.raises(EpisodeEndedError):
        session.call_tool("submit_offers", {"curves": [CURVE]})


def test_a_call_that_ends_the_episode_from_within_says_why_and_later_calls_are_refused(provider, request):
    with provider.open() as session:
        session.reset(task="t1", closes_after=2)
        session.call_tool("battery_status", {})
        assert session.ended() is None
        with pytest.raises(ToolError):  # a refused call is heard too: the environment counts it
            session.call_tool("submit_offers", {"curves": [{"hours": "all", "points": [[0, 9], [1, 1]]}]})
        ended = session.ended()
        if request.node.callspec.params["provider"] == "openenv":  # its wire says only `done: true`
            assert ended is not None and "done" in ended
        else:
            assert ended == "the desk closed after 2 calls"
        with pytest.raises(EpisodeEndedError):
            session.call_tool("battery_status", {})
        session.reset(task="t2")
        assert session.ended() is None


def test_end_turn_ends_the_episode_and_ended_says_so(session):
    assert session.ended() is None
    session.call_tool("end_turn", {})
    assert session.ended() is not None


def test_the_score_carries_the_breakdown_where_the_wire_does(provider, request):
    with provider.open() as session:
        session.reset(task="t1")
        session.call_tool("submit_offers", {"curves": [CURVE]})
        score = session.score()
        assert score.reward == 0.1
        if request.node.callspec.params["provider"] == "openenv":  # OpenEnv's wire carries a reward, no parts
            assert score.breakdown is None
        else:
            assert score.breakdown == {"curves": 1, "limit": 10}
        assert session.ended() is not None


def test_the_reward_before_any_episode_is_refused(provider):
    with provider.open() as session, pytest.raises(EpisodeNotStartedError, match="call reset"):
        session.reward()


def test_a_closed_session_refuses_everything_and_closing_twice_is_harmless(session):
    session.close()
    session.close()
    for use in (lambda: session.reset(), lambda: session.call_tool("battery_status", {}), session.reward):
        with pytest.raises(SessionClosedError, match=r"^this session is closed; open a new one$"):
            use()


def test_each_reset_starts_a_fresh_episode_in_the_same_session(session):
    session.call_tool("submit_offers", {"curves": [CURVE]})
    assert session.reward() == 0.1
    assert session.reset(task="t2") == "Task t2: submit offers, then end your turn."
    assert session.reward() == 0.0


def test_async_tools_run_from_sync_and_async_callers(session):
    assert session.call_tool("write_note", {"text": "a"}) == "1 notes"
    assert asyncio.run(session.acall_tool("write_note", {"text": "b"})) == "2 notes"
    assert asyncio.run(session.acall_tool("battery_status", {})).startswith("{")
    with pytest.raises(ToolArgumentError, match="text: "):
        asyncio.run(session.acall_tool("write_note", {"text": "x" * 201}))


def test_a_provider_names_lists_and_opens_fresh_isolated_sessions(provider):
    assert provider.name == "ToyDesk"
    assert provider.tools() == ToyDesk.tools.published
    with provider.open() as first, provider.open() as second:
        first.reset()
        second.reset()
        first.call_tool("submit_offers", {"curves": [CURVE]})
        assert first.reward() == 0.1 and second.reward() == 0.0


def test_a_provider_gives_the_environments_dataset_rows_or_says_its_wire_has_none(provider, request):
    if request.node.callspec.params["provider"] in WITHOUT_DATASETS:
        with pytest.raises(DatasetNotFoundError, match="publishes no datasets"):
            provider.dataset_rows("test")
        return
    assert provider.dataset_rows("test")[1]["task"] == "test-1"


Step = Callable[[Session], Any]

SCRIPTS: dict[str, list[Step]] = {
    "a good episode": [
        lambda s: s.reset(task="t3"),
        lambda s: s.call_tool(
            "submit_offers",
            {"curves": [CURVE], "as_offers": [{"product": "regup", "hours": "HE07", "mw": 5, "price": 3}]},
        ),
        lambda s: s.call_tool("write_note", {"text": "ünïcode"}),
        lambda s: s.call_tool("end_turn", {}),
        lambda s: s.reward(),
    ],
    "a schema the arguments break": [
        lambda s: s.reset(),
        lambda s: s.call_tool("submit_offers", {"curves": 3}),
    ],
    "a call after end_turn": [
        lambda s: s.reset(),
        lambda s: s.call_tool("end_turn", {}),
        lambda s: s.call_tool("battery_status", {}),
    ],
    "use after close": [
        lambda s: s.reset(),
        lambda s: s.close(),
        lambda s: s.call_tool("battery_status", {}),
    ],
}


@pytest.mark.parametrize("script", SCRIPTS.values(), ids=SCRIPTS.keys())
def test_a_session_answers_as_an_in_process_one_step_for_step(provider, script):
    assert play(provider.open(), script) == play(LocalSession(ToyDesk()), script)


@pytest.mark.parametrize("returned", [None, "0.5", True], ids=["None", "text", "bool"])
def test_a_reward_that_is_not_a_number_is_refused_naming_the_method_in_the_same_words_everywhere(
    provider, request, returned
):
    outcomes = []
    for session in (provider.open(), LocalSession(ToyDesk())):
        with session:
            session.reset(scored_as=returned)
            # OpenEnv's end_turn answers with the reward, so there it is end_turn that fails
            with pytest.raises(AgentEnvError) as raised:
                session.call_tool("end_turn", {})
                session.reward()
        outcomes.append((type(raised.value), str(raised.value)))
    (remote_class, remote_text), (local_class, local_text) = outcomes
    said = local_text.partition(" (in process): ")[
        2
    ]  # the episode is named where it ran, what failed the same
    assert local_class is RewardError and said.startswith("ToyDesk.reward returned ")
    assert remote_text.startswith("ToyDesk could not score the episode of row ") and remote_text.endswith(
        said
    )
    without_codes = request.node.callspec.params["provider"] in WITHOUT_ERROR_CODES
    assert remote_class is (ServerError if without_codes else RewardError)


UNSCORED = {
    "reset": ("its reset raised RuntimeError: the task store is down", 0.0),
    "observation": ("its reset returned 42 (an int), not an observation TRL can append to the prompt", 0.0),
    "reward": ("its reward() raised ZeroDivisionError: division by zero", 0.0),
    "breakdown": (
        "its reward_breakdown() raised TypeError: list indices must be integers or slices, not str",
        0.0,
    ),
    "judge": ("the judge's endpoint answered HTTP 503", None),
}
"""What a row's `raise_in` makes ToyDesk fail with, and what a trainer then gets for the episode."""
WITHOUT_BREAKDOWNS = {"openenv"}
"""Providers whose wire carries a reward but not its breakdown (OpenEnv's /ws): the server never asks for one, so a
`reward_breakdown` that raises fails nothing there."""


@pytest.mark.parametrize("raise_in", list(UNSCORED))
def test_an_episode_the_environment_cannot_score_is_an_unscored_episode_error_naming_it(
    provider, request, raise_in
):
    said, _ = UNSCORED[raise_in]
    if request.node.callspec.params["provider"] in WITHOUT_BREAKDOWNS and raise_in == "breakdown":
        with provider.open() as session:
            session.reset(task="t4", raise_in=raise_in)
            session.call_tool("submit_offers", {"curves": [CURVE]})
            assert session.score() == Score(0.1, None)
        return
    with provider.open() as session, pytest.raises(UnscoredEpisodeError) as raised:
        session.reset(task="t4", raise_in=raise_in)
        session.call_tool("submit_offers", {"curves": [CURVE]})
        session.score()  # the reward and its breakdown, as the TRL adapter and eval read them
    could_not = "start" if raise_in in ("reset", "observation") else "score"  # a failed reset started nothing
    assert f"ToyDesk could not {could_not} the episode of row " in str(raised.value)
    assert '"task": "t4"' in str(raised.value) and said in str(raised.value)


@pytest.mark.parametrize("raise_in", list(UNSCORED))
def test_the_trl_adapter_scores_such_an_episode_by_one_rule_with_one_warning_and_never_raises(
    provider, request, raise_in, caplog
):
    said, reward = UNSCORED[raise_in]
    if request.node.callspec.params["provider"] in WITHOUT_ERROR_CODES and raise_in == "judge":
        reward = 0.0  # OpenEnv's /ws carries no error class, so whose failure it was does not cross it
    if request.node.callspec.params["provider"] in WITHOUT_BREAKDOWNS and raise_in == "breakdown":
        return  # scored as any episode: the breakdown is never read there (the test above)
    published = provider.tools()
    environment = environment_class(provider.name, published, fingerprint(published))(provider.open())
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        observation = environment.reset(task="t4", raise_in=raise_in)
        if raise_in not in ("reset", "observation"):
            environment.submit_offers(curves=[CURVE])
        got = environment.get_reward()
        environment._session.close()
    assert got == reward and (observation is None) == (raise_in in ("reset", "observation"))
    (warning,) = [record for record in caplog.records if record.name == "agent_env.training"]
    assert warning.levelno == logging.WARNING and warning.exc_info is not None
    text = warning.getMessage()
    could_not = "start" if raise_in in ("reset", "observation") else "score"
    assert text.startswith(f"agent_env: ToyDesk could not {could_not} the episode of row ") and said in text
    assert f"TRL gets {'None (unscorable' if reward is None else '0.0 for it'}" in text


def play(session: Session, script: list[Step]) -> list[Any]:
    outcomes: list[Any] = []
    for step in script:
        try:
            outcomes.append(("ok", step(session)))
        except AgentEnvError as error:
            outcomes.append((type(error), str(error)))
            break
    session.close()
    return outcomes


def in_process_error(step: Step) -> str:
    session = LocalSession(ToyDesk())
    session.reset()
    with pytest.raises(AgentEnvError) as raised:
        step(session)
    return str(raised.value)
