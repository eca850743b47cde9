"""τ²-bench episodes wherever episodes run: served over HTTP (the control API, and OpenEnv's /ws) and on Ray (in
tst/ray/tau2_test.py), a real socket each. The user's ending ends the episode on the far side too, the breakdown
crosses the wire, and a malformed call is refused naming its path, as in process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agent_env import AgentEnv, EpisodeEndedError, ToolArgumentError, ToolError
from agent_env._splits import split_to_play
from agent_env.server.errors import DatasetNotFoundError
from agent_env.session import Provider
from agent_env.users import ASIDE, TRANSFER, USER_CHANNEL, ScriptedUser

USER = ScriptedUser(["Please mark task_1 completed."], then="Thanks. ###STOP###")


@pytest.fixture(scope="module", params=["served", "openenv"])
def provider(request: pytest.FixtureRequest) -> Iterator[Provider]:
    pytest.importorskip("uvicorn", reason="the server extra is not installed")
    from agent_env.envs.tau2.mock import Tau2Mock
    from agent_env.openenv import OpenEnvProvider, OpenEnvSurface
    from agent_env.server.app import build_app
    from agent_env.server.client import RemoteProvider
    from tst.unit.server.running import running

    with running(build_app(Tau2Mock, user=USER, surfaces=[OpenEnvSurface()])) as url:
        yield RemoteProvider(url) if request.param == "served" else OpenEnvProvider(f"{url}/openenv")


def play(session: Any) -> None:
    session.reset(
        task_id="update_task_1", prompt=[{"role": "user", "content": "Please mark task_1 completed."}]
    )
    session.call_tool("update_task_status", {"task_id": "task_1", "status": "completed"})
    assert session.ended() is None
    assert session.call_tool(USER_CHANNEL, {"message": "Done."}) == "Thanks. ###STOP###"


def test_a_served_episode_ends_when_the_user_says_so_and_is_scored_with_its_breakdown(provider):
    with provider.open() as session:
        play(session)
        assert session.ended() is not None
        with pytest.raises(EpisodeEndedError):
            session.call_tool("get_users", {})
        score = session.score()
    assert score.reward == 1.0
    if type(provider).__name__ == "RemoteProvider":  # OpenEnv's wire carries a reward, not its parts
        assert score.breakdown is not None and score.breakdown["ended"] == "the user ended the conversation"


def test_a_malformed_call_is_refused_naming_its_path_wherever_it_runs(provider):
    local = AgentEnv.local("tau2-mock", user=USER).open()
    with provider.open() as session:
        for opened in (session, local):
            opened.reset(task_id="update_task_1")
        refused = []
        for opened in (session, local):
            with pytest.raises(ToolArgumentError) as raised:
                opened.call_tool("update_task_status", {"task_id": "task_1", "status": "finished"})
            refused.append(str(raised.value))
    local.close()
    assert refused[0] == refused[1]
    assert '- status: expected one of "pending", "completed"; got "finished"' in refused[0]


def test_served_rows_are_the_environments_rows(provider):
    if type(provider).__name__ != "RemoteProvider":
        pytest.skip("OpenEnv's wire carries no datasets")
    assert provider.dataset_rows("base") == AgentEnv.local("tau2-mock", user=USER).provider.dataset_rows(
        "base"
    )


def test_failed_calls_that_reach_max_errors_end_the_episode_and_the_session_says_so(provider):
    # What eval reads after every call, failed ones too: the far side's ending crosses with the failure.
    with provider.open() as session:
        session.reset(task_id="update_task_1")
        for _ in range(10):  # max_errors: 10
            assert session.ended() is None
            with pytest.raises(ToolError, match="Task task_9 not found"):
                session.call_tool("update_task_status", {"task_id": "task_9", "status": "completed"})
        assert session.ended() is not None
        assert session.score().reward == 0.0


def test_an_aside_reaches_the_far_sides_record_and_counts_as_said(provider):
    # eval's ASIDE is hidden from every listing, the OpenEnv client's too, yet crosses both wires to the episode.
    said = "The agent acknowledged the previous context; the agent confirmed the task status was updated successfully"
    assert ASIDE not in {tool["name"] for tool in provider.tools()}
    rewards = []
    for aside in (said, None):
        with provider.open() as session:
            session.reset(task_id="update_task_with_initialization_data")
            if aside is not None:
                session.call_tool(ASIDE, {"text": aside, "calls": 1})
            session.call_tool("update_task_status", {"task_id": "task_2", "status": "completed"})
            session.call_tool(USER_CHANNEL, {"message": "Anything else?"})
            rewards.append(session.score().reward)
    assert rewards == [1.0, 0.0]  # without the aside, nothing the task must say was said


def test_a_served_environment_names_its_splits_when_a_split_is_missing(provider):
    if type(provider).__name__ != "RemoteProvider":
        pytest.skip("OpenEnv's wire carries no datasets")
    with pytest.raises(
        DatasetNotFoundError, match="τ²-bench mock has no split 'train'; its splits are base"
    ) as raised:
        provider.dataset_rows("train")
    assert raised.value.splits == ("base",)  # across the wire, so a default split falls back as in process
    assert split_to_play(provider.dataset_rows, None, ("train",), provider.name) == "base"


ROAMING = "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]"


@pytest.fixture(scope="module", params=["served", "openenv"])
def telecom(request: pytest.FixtureRequest) -> Iterator[Provider]:
    pytest.importorskip("uvicorn", reason="the server extra is not installed")
    from agent_env.envs.tau2.telecom import Tau2Telecom
    from agent_env.openenv import OpenEnvProvider, OpenEnvSurface
    from agent_env.server.app import build_app
    from agent_env.server.client import RemoteProvider
    from tst.unit.server.running import running

    with running(build_app(Tau2Telecom, surfaces=[OpenEnvSurface()])) as url:
        yield RemoteProvider(url) if request.param == "served" else OpenEnvProvider(f"{url}/openenv")


def test_a_served_telecom_users_calls_happen_on_the_far_side_inside_the_users_reply(telecom):
    with telecom.open() as session:
        assert session.reset(task_id=ROAMING).startswith("My mobile data is not working properly.")
        session.call_tool("get_customer_by_phone", {"phone_number": "555-123-2002"})
        reply = session.call_tool(USER_CHANNEL, {"message": "Please turn on data roaming on your phone."})
        assert reply.startswith("Done. This is what it shows now:\n\nData Roaming is now ON.")
        while session.ended() is None:
            session.call_tool(USER_CHANNEL, {"message": "Does your data work now?"})
        assert session.score().reward == 1.0
    assert "toggle_roaming" not in {tool["name"] for tool in telecom.tools()}  # the user's, not the agent's


def transfer_then_write(session: Any) -> None:
    """τ²-bench's transfer, as eval plays it: one reply holds the transfer and a write after it, both run; the
    user, told, writes its transfer marker, which ends the episode as the user stopping."""
    session.reset(task_id="impossible_task_1")
    session.call_tool(ASIDE, {"text": "", "calls": 2})
    assert (
        session.call_tool("transfer_to_human_agents", {"summary": "wants tasks deleted"})
        == "Transfer successful"
    )
    assert session.ended() is None
    session.call_tool("create_task", {"user_id": "user_1", "title": "After the transfer"})
    assert session.call_tool(USER_CHANNEL, {"message": "You are being transferred."}) == TRANSFER
    assert session.ended() is not None  # OpenEnv's wire says only that it is done


def errors_past_the_limit_in_one_reply(session: Any) -> None:
    """Eleven calls in one reply, the first ten failing (max_errors: 10): every one runs, and the episode ends
    after the last, which changed the database."""
    session.reset(task_id="create_task_1")
    session.call_tool(ASIDE, {"calls": 11})
    for _ in range(10):
        with pytest.raises(ToolError):
            session.call_tool("update_task_status", {"task_id": "task_9", "status": "completed"})
        assert session.ended() is None
    session.call_tool("create_task", {"user_id": "user_1", "title": "Important Meeting"})
    assert session.ended() is not None


def test_a_transfer_only_answers_and_what_follows_it_is_scored_wherever_the_episode_runs(provider):
    with provider.open() as session:
        transfer_then_write(session)
        score = session.score()
    assert score.reward == 0.0  # the write after the transfer changed the database the reference leaves
    if score.breakdown is not None:
        assert (
            score.breakdown["termination"] == "user_stop"
            and score.breakdown["parts"]["ACTION"]["reward"] == 1.0
        )


def test_every_call_of_a_reply_runs_and_a_limit_ends_the_episode_after_the_last_wherever_it_runs(provider):
    with provider.open() as session:
        errors_past_the_limit_in_one_reply(session)
        score = session.score()
    assert score.reward == 0.0
    if score.breakdown is not None:
        assert score.breakdown["ended"] == "the episode reached max_errors"


@pytest.fixture(scope="module")
def checks(request: pytest.FixtureRequest) -> Iterator[str]:
    pytest.importorskip("uvicorn", reason="the server extra is not installed")
    from agent_env.envs.tau2.mock import Tau2Mock
    from agent_env.openenv import OpenEnvSurface
    from agent_env.server.app import build_app
    from tst.unit.server.running import running

    with running(build_app(Tau2Mock, user=USER, reward="checks", surfaces=[OpenEnvSurface()])) as url:
        yield url


@pytest.mark.parametrize("surface", ["served", "openenv"])
def test_the_checks_reward_travels_as_a_setting_and_is_what_the_episode_is_rewarded(checks, surface):
    from agent_env.openenv import OpenEnvProvider
    from agent_env.server.client import RemoteProvider

    provider = RemoteProvider(checks) if surface == "served" else OpenEnvProvider(f"{checks}/openenv")
    with provider.open() as session:  # DB x ACTION x ENV_ASSERTION; the user never dismisses its notification
        session.reset(task_id="update_task_with_user_tools")
        session.call_tool("update_task_status", {"task_id": "task_1", "status": "completed"})
        score = session.score()
    assert score.reward == pytest.approx(2 / 3)
    if surface == "served":
        assert score.breakdown is not None and score.breakdown["official_reward"] == 0.0
