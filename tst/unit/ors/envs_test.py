"""The built-in environments as ORS environments: τ²-bench's (a system prompt, a simulated user whose goodbye ends
the episode, errors that count toward `max_errors`) and the GridSim desk, played through `agent-env serve --ors`'s
surface by `AgentEnv.ors` over a real socket, each with the reward of in process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent_env import AgentEnv, EpisodeEndedError, LocalSession, ToolArgumentError
from agent_env.ors import ORSSurface
from agent_env.server.app import build_app
from agent_env.users import USER_CHANNEL, ScriptedUser
from tst.unit.server.running import running

USER = ScriptedUser(["Please mark task_1 completed."], then="Thanks. ###STOP###")


@pytest.fixture(scope="module")
def mock() -> Iterator[str]:
    from agent_env.envs.tau2.mock import Tau2Mock

    with running(build_app(Tau2Mock, user=USER, surfaces=[ORSSurface()])) as url:
        yield url


def test_tau2s_tools_splits_and_tasks_are_its_own(mock):
    env = AgentEnv.ors(mock, "tau2mock")
    local = AgentEnv.local("tau2-mock", user=USER)
    assert env.tools() == local.tools()  # message_user among them; its hidden aside is not listed
    assert [row["task_spec"] for row in env.provider.dataset_rows("base")] == local.provider.dataset_rows(
        "base"
    )


def test_a_tau2_episode_ends_with_the_users_goodbye_and_scores_as_in_process(mock):
    env = AgentEnv.ors(mock, "tau2mock")
    row = next(
        row for row in env.provider.dataset_rows("base") if row["task_spec"]["task_id"] == "update_task_1"
    )
    with env.open() as session, AgentEnv.local("tau2-mock", user=USER).open() as local:
        prompt = session.reset(**row)
        local.reset(**row["task_spec"])
        # the task's conversation (τ²'s system prompt, then the user's opening), flattened as the SDK flattens one
        assert prompt.startswith("[system]\n") and prompt.endswith("[user]\nPlease mark task_1 completed.")
        for opened in (session, local):
            opened.call_tool("update_task_status", {"task_id": "task_1", "status": "completed"})
            assert opened.call_tool(USER_CHANNEL, {"message": "Done."}) == "Thanks. ###STOP###"
            assert opened.ended() is not None  # the user's goodbye finished it: the result said so
        with pytest.raises(EpisodeEndedError):
            session.call_tool("get_users", {})
        assert session.reward() == local.reward() == 1.0


def test_tau2s_calls_are_refused_here_as_in_process(mock):
    env = AgentEnv.ors(mock, "tau2mock")
    with env.open() as session:
        session.reset(split="base", index=0)
        with pytest.raises(
            ToolArgumentError, match='- status: expected one of "pending", "completed"; got "x"'
        ):
            session.call_tool("update_task_status", {"task_id": "task_1", "status": "x"})


def test_the_desk_plays_and_scores_as_in_process():
    from agent_env.envs.gridsim.desk import GridSimDesk

    with running(build_app(GridSimDesk, surfaces=[ORSSurface()])) as url:
        env = AgentEnv.ors(url, "gridsimdesk")
        assert env.tools() == GridSimDesk.tools.published
        row = env.provider.dataset_rows("test")[0]
        offers = {"curves": [{"hours": "HE17-HE20", "points": [[-50, 20], [50, 90]]}], "as_offers": []}
        with env.open() as session, LocalSession(GridSimDesk()) as local:
            session.reset(**row)
            local.reset(**row["task_spec"])
            assert session.call_tool("submit_dam_offers", offers) == local.call_tool(
                "submit_dam_offers", offers
            )
            assert session.reward() == pytest.approx(local.reward())
