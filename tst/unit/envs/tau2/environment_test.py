"""`agent_env/envs/tau2/environment.py`, on the mock domain: rows carry the task and the user's opening after the
policy; an episode starts from the task's initial state; the record keeps every call; the user, a transfer, or a
limit ends the episode; and the reward is scored as tau2-bench scores it."""

from __future__ import annotations

import json
from typing import Any

import datasets
import pytest

from agent_env import AgentEnv, EpisodeEndedError, ToolArgumentError, ToolError
from agent_env.envs.tau2.environment import SYSTEM_PROMPT
from agent_env.envs.tau2.mock import Tau2Mock
from agent_env.errors import UnscoredEpisodeError
from agent_env.users import USER_CHANNEL, ScriptedUser


def mock(**config: Any) -> AgentEnv:
    return AgentEnv.local("tau2-mock", **config)


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return mock().provider.dataset_rows("base")


def row(rows: list[dict[str, Any]], task_id: str) -> dict[str, Any]:
    return next(item for item in rows if item["task_id"] == task_id)


def test_each_row_has_its_task_id_and_a_prompt_of_the_policy_then_the_users_opening(rows):
    assert [item["task_id"] for item in rows][:2] == ["create_task_1", "create_task_1_with_env_assertions"]
    first = rows[0]["prompt"]
    policy = Tau2Mock().data.policy
    assert first[0] == {"role": "system", "content": SYSTEM_PROMPT.format(policy=policy)}
    assert "# Mock Domain Policy" in first[0]["content"]
    assert first[-1]["role"] == "user" and "Important Meeting" in first[-1]["content"]
    datasets.Dataset.from_list(
        rows
    )  # every row, tool calls of earlier conversations included, fits a Dataset


def test_a_task_with_an_earlier_conversation_starts_from_it_with_its_writes_replayed(rows):
    history = row(rows, "update_task_with_message_history")
    roles = [message["role"] for message in history["prompt"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    called = history["prompt"][2]["tool_calls"][0]["function"]
    assert called["name"] == "create_task" and json.loads(called["arguments"])["title"] == "Project Review"
    with mock().open() as session:
        assert session.reset(**history) is None  # the opening is the row's
        assert "task_2" in session.environment.db.tasks  # the earlier create_task ran again
        assert session.environment.calls[0].name == "create_task"


@pytest.mark.parametrize(
    "task_id", ["update_task_with_initialization_data", "update_task_with_initialization_actions"]
)
def test_initialization_data_and_actions_set_the_state_the_task_starts_from(rows, task_id):
    with mock().open() as session:
        session.reset(**row(rows, task_id))
        db = session.environment.db
        assert db.tasks["task_2"].title == "Project Review" and db.users["user_1"].tasks == [
            "task_1",
            "task_2",
        ]


def test_without_a_prompt_the_user_opens_and_reset_returns_its_opening():
    with mock(user=ScriptedUser(["Please mark task_1 done."])).open() as session:
        assert session.reset(task_id="update_task_1") == "Please mark task_1 done."


def test_reset_names_what_it_needs():
    with mock().open() as session:  # a reset that raises is an episode that cannot be scored, saying why
        with pytest.raises(UnscoredEpisodeError, match="ValueError: reset needs a task: pass task_id"):
            session.reset()
        with pytest.raises(
            UnscoredEpisodeError, match="has no task 'nope'; its task ids are like create_task_1"
        ):
            session.reset(task_id="nope")


def test_episodes_are_isolated_from_each_other_and_from_the_shared_base(rows):
    env = mock()
    first, second = env.open(), env.open()
    first.reset(**row(rows, "create_task_1"))
    second.reset(**row(rows, "create_task_1"))
    first.call_tool("create_task", {"user_id": "user_1", "title": "Mine"})
    assert "task_2" in first.environment.db.tasks and "task_2" not in second.environment.db.tasks
    assert "task_2" not in first.environment.data.base.tasks


def test_a_malformed_call_is_refused_naming_its_path_and_counted_as_an_error(rows):
    with mock().open() as session:
        session.reset(**row(rows, "update_task_1"))
        with pytest.raises(
            ToolArgumentError, match='- status: expected one of "pending", "completed"; got "done"'
        ):
            session.call_tool("update_task_status", {"task_id": "task_1", "status": "done"})
        assert session.environment.errors == 1 and session.environment.db.changed() == {}
        assert session.environment.calls[-1].error


def test_the_user_ending_the_conversation_ends_the_episode_and_it_is_scored(rows):
    with mock(user=ScriptedUser(["hi"], then="Thanks! ###STOP###")).open() as session:
        session.reset(**row(rows, "update_task_1"))
        session.call_tool("update_task_status", {"task_id": "task_1", "status": "completed"})
        assert (
            session.call_tool(USER_CHANNEL, {"message": "Done: task_1 is completed."}) == "Thanks! ###STOP###"
        )
        assert session.ended() == "the user ended the conversation"
        score = session.score()
    assert score.reward == 1.0 and score.breakdown["ended"] == "the user ended the conversation"


def test_a_transfer_ends_the_episode_and_is_scored(rows):
    with mock().open() as session:
        session.reset(**row(rows, "impossible_task_1"))
        assert (
            session.call_tool("transfer_to_human_agents", {"summary": "wants tasks deleted"})
            == "Transfer successful"
        )
        assert session.ended() == "the agent transferred the user to a human agent"
        with pytest.raises(EpisodeEndedError):
            session.call_tool("get_users", {})
        assert session.score().breakdown["parts"]["ACTION"]["reward"] == 1.0


def test_too_many_errors_end_the_episode_which_then_scores_zero(rows):
    with mock(max_errors=3).open() as session:
        session.reset(**row(rows, "create_task_1"))
        session.call_tool("create_task", {"user_id": "user_1", "title": "Important Meeting"})
        for _ in range(3):
            with pytest.raises(ToolError):
                session.call_tool("update_task_status", {"task_id": "task_9", "status": "completed"})
        assert session.ended() == "3 calls failed, the most an episode allows (max_errors=3)"
        score = session.score()
    assert score.reward == 0.0 and not score.breakdown["scored"]
    assert "scores an episode that did not end by the agent or the user stopping 0" in score.breakdown["note"]


def test_max_steps_ends_the_episode_which_then_scores_zero(rows):
    with mock(max_steps=6).open() as session:
        session.reset(**row(rows, "create_task_1"))
        session.call_tool("get_users", {})
        session.call_tool("create_task", {"user_id": "user_1", "title": "Important Meeting"})
        session.call_tool("get_users", {})
        assert session.ended() == "the episode took 7 steps, the most it allows (max_steps=6)"
        assert session.reward() == 0.0


def test_limits_below_one_are_refused():
    with pytest.raises(ValueError, match="max_steps and max_errors must be at least 1"):
        Tau2Mock(max_errors=0)


def test_the_user_side_tools_act_on_the_users_own_database(rows):
    with mock().open() as session:
        session.reset(**row(rows, "update_task_with_user_tools"))
        environment = session.environment
        assert [tool["name"] for tool in environment.user_tools()] == [
            "check_notifications",
            "dismiss_notification",
        ]
        assert "notif_1" in environment.run_user_tool("check_notifications", {})
        assert (
            environment.run_user_tool("dismiss_notification", {"notification_id": "notif_1"})
            == "Notification notif_1 dismissed"
        )
        assert environment.run_user_tool("dismiss_notification", {"notification_id": "x"}).startswith(
            "Error: "
        )
        session.call_tool("update_task_status", {"task_id": "task_1", "status": "completed"})
        parts = session.score().breakdown["parts"]
    # As upstream: the user's database is compared too, and the reference actions never dismiss the notification,
    # so the user doing what its scenario asks fails DB while it passes the assertion (this task cannot score 1).
    assert {name: part["reward"] for name, part in parts.items()} == {
        "DB": 0.0,
        "ACTION": 1.0,
        "ENV_ASSERTION": 1.0,
    }


def test_a_live_call_reads_as_its_replay_does_in_upstreams_words(rows):
    arguments = {"user_id": "user_1", "title": "Important Meeting"}
    with mock().open() as session:
        session.reset(**row(rows, "create_task_1"))
        live = session.call_tool("create_task", arguments)
    replayed = Tau2Mock()
    replayed.initial_state(replayed.data.task("create_task_1"))
    assert live == replayed.replay("create_task", arguments, "assistant").result
    assert (
        live
        == '{"task_id": "task_2", "title": "Important Meeting", "description": null, "status": "pending"}'
    )
