"""`agent_env/training/unscored.py`: the one rule by which a trainer scores an episode that could not be scored."""

from __future__ import annotations

import logging
import pickle

import pytest

from agent_env import Environment
from agent_env.errors import InfrastructureFailedError, RewardError, UnscoredEpisodeError, UserEndpointError
from agent_env.server.client import from_wire
from agent_env.session import LocalSession
from agent_env.training import unscored_reward


class NotANumber(Environment):
    def reset(self, **row):
        return None

    def reward(self):
        return "1.0"


def raised_from(cause: Exception, error: UnscoredEpisodeError) -> UnscoredEpisodeError:
    try:
        try:
            raise cause
        except Exception as original:
            raise error from original
    except UnscoredEpisodeError as caught:
        return caught


@pytest.mark.parametrize(
    ("error", "reward", "given"),
    [
        (UnscoredEpisodeError("its reward() raised KeyError: 'x'"), 0.0, "0.0"),
        (RewardError("Desk.reward returned None"), 0.0, "0.0"),
        (InfrastructureFailedError("the judge answered HTTP 503"), None, "None (unscorable"),
    ],
    ids=["the environment's code", "no number", "a service outside the episode"],
)
def test_the_rule_scores_by_whose_failure_it_is_with_one_warning_and_its_traceback(
    error, reward, given, caplog
):
    error = raised_from(KeyError("x"), error.named("Desk", 'task_id="t1" (in process)'))
    error.cause = error.__cause__
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        assert unscored_reward(error) == reward
    (warning,) = caplog.records
    said = warning.getMessage()
    assert said.startswith(
        f'agent_env: Desk could not score the episode of task_id="t1" (in process): {error.why}.'
    )
    assert f"TRL gets {given}" in said and "the log of the process that ran it" not in said
    assert warning.exc_info is not None and warning.exc_info[1] is error
    assert "KeyError: 'x'" in logging.Formatter().formatException(
        warning.exc_info
    )  # the original's traceback


def test_an_error_that_crossed_a_wire_or_a_pickle_says_where_its_traceback_is(caplog):
    served = from_wire(
        {"code": "unscored_episode", "message": "Desk could not score the episode of row {} (in served episode "
         "1f): its reward() raised KeyError: 'x'"}, 500
    )  # fmt: skip
    hosted = pickle.loads(pickle.dumps(UnscoredEpisodeError("its reward() raised", environment="Desk")))
    for error in (served, hosted):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="agent_env"):
            assert unscored_reward(error) == 0.0
        assert (
            caplog.records[0]
            .getMessage()
            .endswith("(the traceback is in the log of the process that ran it)")
        )


def test_a_reward_that_is_no_number_in_this_process_says_nothing_of_another_processs_log(caplog):
    session = LocalSession(NotANumber())
    session.reset()
    with pytest.raises(RewardError) as refused:
        session.reward()
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        assert unscored_reward(refused.value) == 0.0
    said = caplog.records[0].getMessage()
    assert "NotANumber.reward returned the string '1.0'" in said
    assert "the log of the process that ran it" not in said


def test_the_error_keeps_its_class_and_names_through_a_pickle():
    error = InfrastructureFailedError(
        "the judge is down", environment="Desk", episode='task_id="t1" (in process)'
    )
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is InfrastructureFailedError and again.infrastructure
    assert (
        str(again)
        == str(error)
        == 'Desk could not score the episode of task_id="t1" (in process): the judge is down'
    )


def test_an_agent_env_cause_travels_through_a_pickle_with_its_faults_and_any_other_stays_behind():
    # Ray pickles a hosted session's errors: the user endpoint's failure (and its failed attempts) must arrive, so
    # that an evaluation counts it as the user's; a cause of the environment's own may not pickle, and is left out.
    user = UserEndpointError("the simulated user's endpoint failed", faults={"user_timeout": 4})
    error = InfrastructureFailedError("reset raised UserEndpointError", environment="Desk", cause=user)
    again = pickle.loads(pickle.dumps(error))
    assert isinstance(again.cause, UserEndpointError) and again.cause.faults == {"user_timeout": 4}
    assert str(again.cause) == str(user)
    own = UnscoredEpisodeError("reward() raised", environment="Desk", cause=ValueError("x"))
    assert pickle.loads(pickle.dumps(own)).cause is None
