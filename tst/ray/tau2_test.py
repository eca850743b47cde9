"""τ²-bench on a Ray pool: the environment travels by name with its user's settings, episodes end when the user
says so on the actor that holds them, and the breakdown and the refusals come back as in process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent_env import AgentEnv, EpisodeEndedError, ToolArgumentError
from agent_env.users import ASIDE, USER_CHANNEL, ScriptedUser

USER = ScriptedUser(["Please mark task_1 completed."], then="Thanks. ###STOP###")


@pytest.fixture(scope="module")
def env(ray_cluster: str) -> Iterator[AgentEnv]:
    env = AgentEnv.ray("tau2-mock", actors=1, pool="tau2", user=USER)
    yield env
    env.provider.shutdown()


def test_an_episode_on_an_actor_ends_when_the_user_says_so_and_is_scored_with_its_breakdown(env):
    with env.open() as session:
        assert session.reset(task_id="update_task_1") == "Please mark task_1 completed."
        session.call_tool("update_task_status", {"task_id": "task_1", "status": "completed"})
        assert session.call_tool(USER_CHANNEL, {"message": "Done."}) == "Thanks. ###STOP###"
        assert session.ended() == "the user ended the conversation"
        with pytest.raises(EpisodeEndedError):
            session.call_tool("get_users", {})
        score = session.score()
    assert score.reward == 1.0 and score.breakdown["parts"]["DB"]["reward"] == 1.0


def test_a_malformed_call_on_an_actor_is_refused_naming_its_path(env):
    with env.open() as session:
        session.reset(task_id="update_task_1")
        with pytest.raises(ToolArgumentError, match='- status: expected one of "pending", "completed"'):
            session.call_tool("update_task_status", {"task_id": "task_1", "status": "finished"})


def test_the_rows_come_from_the_environment_in_this_process(env):
    assert env.provider.dataset_rows("base") == AgentEnv.local("tau2-mock", user=USER).provider.dataset_rows(
        "base"
    )


def test_an_aside_reaches_the_actors_episode_and_counts_as_said(env):
    # eval's hidden ASIDE (the text of a reply that also called tools) crosses to the actor like any call.
    said = "The agent acknowledged the previous context; the agent confirmed the task status was updated successfully"
    assert ASIDE not in {tool["name"] for tool in env.tools()}
    with env.open() as session:
        session.reset(task_id="update_task_with_initialization_data")
        session.call_tool(ASIDE, {"text": said, "calls": 1})
        session.call_tool("update_task_status", {"task_id": "task_2", "status": "completed"})
        session.call_tool(USER_CHANNEL, {"message": "Anything else?"})
        score = session.score()
    assert score.reward == 1.0 and score.breakdown["parts"]["COMMUNICATE"]["reward"] == 1.0


def test_telecom_in_solo_mode_travels_by_name_and_its_agent_works_the_phone_on_the_actor(ray_cluster):
    solo = AgentEnv.ray("tau2-telecom-solo", actors=1, pool="telecom-solo")
    try:
        assert "toggle_roaming" in {tool["name"] for tool in solo.tools()}
        with solo.open() as session:
            # no user speaks: the ticket is in the row's system prompt
            assert (
                session.reset(task_id="[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]")
                is None
            )
            assert session.call_tool("toggle_roaming", {}).startswith("Data Roaming is now ON.")
            session.call_tool("end_turn", {})
            score = session.score()
        assert score.reward == 1.0 and score.breakdown["user"]["kind"] == "none"
    finally:
        solo.provider.shutdown()


def test_a_transfer_only_answers_and_every_call_of_a_reply_runs_on_an_actor(env):
    from tst.unit.envs.tau2.providers_test import errors_past_the_limit_in_one_reply, transfer_then_write

    with env.open() as session:
        transfer_then_write(session)
        transferred = session.score()
    with env.open() as session:
        errors_past_the_limit_in_one_reply(session)
        limited = session.score()
    assert transferred.reward == 0.0 and transferred.breakdown["termination"] == "user_stop"
    assert limited.breakdown["ended"] == "the episode reached max_errors"


def test_the_checks_reward_travels_to_the_actors_as_a_setting(ray_cluster):
    checks = AgentEnv.ray("tau2-mock", actors=1, pool="tau2-checks", user=USER, reward="checks")
    try:
        with checks.open() as session:
            session.reset(task_id="update_task_with_user_tools")
            session.call_tool("update_task_status", {"task_id": "task_1", "status": "completed"})
            score = session.score()
    finally:
        checks.provider.shutdown()
    assert score.reward == pytest.approx(2 / 3) and score.breakdown["official_reward"] == 0.0
