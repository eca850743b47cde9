"""`agent_env/envs/tau2/environment.py`, on the mock domain: rows carry the task and the user's opening after the
official prompt; an episode starts from the task's initial state; the record keeps every call; steps and limits are
counted as tau2-bench's orchestrator counts them, per message; a transfer only answers, and the user ends the
episode; and the reward is scored as tau2-bench scores it, with every check listed."""

from __future__ import annotations

import json
from typing import Any

import datasets
import pytest

from agent_env import AgentEnv, ToolArgumentError, ToolError
from agent_env.envs.tau2.mock import Tau2Mock
from agent_env.envs.tau2.prompts import load_prompts
from agent_env.errors import DatasetRowsError, UnscoredEpisodeError
from agent_env.users import ASIDE, TRANSFER, USER_CHANNEL, ScriptedUser


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
    assert first[0] == {"role": "system", "content": load_prompts().agent(policy)}  # prompts_test: upstream's
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


def test_a_transfer_only_answers_later_calls_run_and_the_users_transfer_marker_ends_the_episode(rows):
    # As upstream: the tool answers, the agent goes on, and what it changes after the transfer is scored.
    with mock().open() as session:
        session.reset(**row(rows, "impossible_task_1"))
        assert (
            session.call_tool("transfer_to_human_agents", {"summary": "wants tasks deleted"})
            == "Transfer successful"
        )
        assert session.ended() is None
        session.call_tool("create_task", {"user_id": "user_1", "title": "After the transfer"})
        assert "task_2" in session.environment.db.tasks
        assert session.call_tool(USER_CHANNEL, {"message": "You are being transferred."}) == TRANSFER
        assert session.ended() == "the user was transferred to another agent"
        score = session.score()
    assert score.breakdown["termination"] == "user_stop" and score.breakdown["scored"]
    assert score.breakdown["parts"] == {
        "DB": {
            "reward": 0.0,
            "why": "the database differs from the one the reference actions leave",
            "changed": {"tasks": ["task_2"], "users": ["user_1"]},
            "expected_changed": {},
        },
        "ACTION": {"reward": 1.0, "why": "every reference action was called"},
    }


def test_a_transfer_that_fails_hands_no_one_over():
    with mock().open() as session:
        session.reset(task_id="impossible_task_1")
        with pytest.raises(ToolArgumentError):
            session.call_tool("transfer_to_human_agents", {})
        assert not session.environment.chat.transferred
        assert session.call_tool(USER_CHANNEL, {"message": "Anything else?"}) != TRANSFER


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


# Steps and limits, as tau2-bench's orchestrator counts and checks them (src/tau2/orchestrator/orchestrator.py).


def announce(session: Any, calls: int, text: str = "", refused: int = 0) -> None:
    """What agent-env eval tells the environment before a reply's calls."""
    session.call_tool(ASIDE, {"text": text, "calls": calls, "refused": refused})


def test_a_reply_of_many_calls_is_one_message_two_steps_with_its_answers_as_upstream_counts_it(rows):
    with mock(user=ScriptedUser(["hi"], then="Sure.")).open() as session:
        session.reset(**row(rows, "create_task_1"))
        env = session.environment
        assert env.steps == 1  # the user's opening
        announce(session, 3)
        for _ in range(3):
            session.call_tool("get_users", {})
        assert env.steps == 3  # the agent's message, then the environment's answer to all three calls
        session.call_tool("get_users", {})  # unannounced, as under TRL: a message of its own
        assert env.steps == 5
        session.call_tool(USER_CHANNEL, {"message": "Done."})
        assert env.steps == 7  # the agent's message, the user's answer


def test_a_limit_reached_inside_a_reply_ends_the_episode_only_after_its_last_call_which_still_runs(rows):
    with mock(max_errors=2).open() as session:
        session.reset(**row(rows, "create_task_1"))
        announce(session, 3)
        for _ in range(2):
            with pytest.raises(ToolError):
                session.call_tool("update_task_status", {"task_id": "task_9", "status": "completed"})
        assert (
            session.ended() is None
        )  # two errors, max_errors reached: checked once the reply's calls are in
        session.call_tool("create_task", {"user_id": "user_1", "title": "Important Meeting"})
        assert session.ended() == "2 calls failed, the most an episode allows (max_errors=2)"
        assert "task_2" in session.environment.db.tasks  # the last call ran and changed the database
        assert session.score().breakdown["termination"] == "too_many_errors"


def test_calls_refused_before_they_reached_the_environment_count_as_errors(rows):
    with mock(max_errors=2).open() as session:
        session.reset(**row(rows, "create_task_1"))
        announce(session, 0, refused=2)  # two calls of names the model was not offered, say
        assert session.ended() == "2 calls failed, the most an episode allows (max_errors=2)"


def test_errors_override_steps_and_both_override_the_users_ending_reached_at_the_same_step(rows):
    # _check_termination sets MAX_STEPS, then TOO_MANY_ERRORS, over what the step itself said.
    with mock(max_steps=5, max_errors=1, user=ScriptedUser(["hi"], then="Bye ###STOP###")).open() as session:
        session.reset(**row(rows, "create_task_1"))
        announce(session, 1)
        with pytest.raises(ToolError):
            session.call_tool("update_task_status", {"task_id": "task_9", "status": "completed"})
        assert session.score().breakdown["termination"] == "too_many_errors"
    with mock(max_steps=5, user=ScriptedUser(["hi"], then="Bye ###STOP###")).open() as session:
        session.reset(**row(rows, "create_task_1"))
        session.call_tool("get_users", {})  # steps 3
        session.call_tool(USER_CHANNEL, {"message": "Done."})  # 4, and the user's goodbye at 5
        assert session.score().breakdown["termination"] == "max_steps"


def test_the_agents_message_that_reaches_max_steps_ends_the_episode_before_the_user_is_asked(rows):
    with mock(max_steps=4, user=ScriptedUser(["hi"], then="Still here.")).open() as session:
        session.reset(**row(rows, "create_task_1"))
        session.call_tool("get_users", {})  # steps 3
        assert (
            session.call_tool(USER_CHANNEL, {"message": "One moment."}) == ""
        )  # step 4: the user never answers
        env = session.environment
        assert session.ended() == "the episode took 4 steps, the most it allows (max_steps=4)"
        assert [message.role for message in env.chat.messages][-2:] == ["user", "agent"]
        assert env.transcript[-1] == ("assistant", "One moment.")


def test_the_users_own_calls_count_a_step_for_each_of_its_messages_and_their_answers(rows):
    class Checker(ScriptedUser):
        def reply(self, chat, tools=(), run_tool=None):  # two messages of calls, then its words
            assert run_tool is not None
            run_tool("check_notifications", {})
            run_tool("dismiss_notification", {"notification_id": "nope"})
            return super().reply(chat, tools, run_tool)

    with mock(user=Checker(["hi"], then="Done.")).open() as session:
        session.reset(**row(rows, "update_task_with_user_tools"))
        env = session.environment
        session.call_tool(USER_CHANNEL, {"message": "Check your notifications."})
        assert (env.steps, env.errors) == (1 + 1 + 2 * 2 + 1, 1)


# The reward: every check, and the training reward built from them.


def test_the_breakdown_lists_every_check_met_or_not_and_which_count_for_the_reward(rows):
    # update_task_with_user_tools scores DB x ACTION x ENV_ASSERTION; the user here never dismisses its notification.
    with mock().open() as session:
        session.reset(**row(rows, "update_task_with_user_tools"))
        session.call_tool("update_task_status", {"task_id": "task_1", "status": "completed"})
        breakdown = session.score().breakdown
    assert breakdown["checks"] == [
        {"part": "DB", "check": "the database equals the one the reference actions leave", "met": True,
         "basis": True},
        {"part": "ENV_ASSERTION", "check": "assert_notification_status({'notification_id': 'notif_1', "
         "'expected_status': 'read'}) is True", "met": False, "basis": True},
        {"part": "ACTION", "check": 'update_task_status(task_id="task_1", status="completed")', "met": True,
         "basis": True},
    ]  # fmt: skip
    assert breakdown["checks_reward"] == pytest.approx(2 / 3)
    assert breakdown["reward"] == breakdown["official_reward"] == 0.0


def test_checks_outside_the_reward_basis_are_listed_but_do_not_count(rows):
    with (
        mock().open() as session
    ):  # create_task_1_with_env_assertions: DB x ENV_ASSERTION, and an action to match
        session.reset(**row(rows, "create_task_1_with_env_assertions"))
        session.call_tool("create_task", {"user_id": "user_1", "title": "Another Meeting"})
        breakdown = session.score().breakdown
    assert [(c["part"], c["met"], c["basis"]) for c in breakdown["checks"]] == [
        ("DB", False, True),
        ("ENV_ASSERTION", True, True),
        ("ACTION", False, False),
    ]
    assert breakdown["checks_reward"] == 0.5


def test_reward_checks_returns_the_fraction_of_checks_met_and_the_breakdown_keeps_the_official_reward(rows):
    with mock(reward="checks").open() as session:
        session.reset(**row(rows, "update_task_with_user_tools"))
        session.call_tool("update_task_status", {"task_id": "task_1", "status": "completed"})
        score = session.score()
    assert score.reward == pytest.approx(2 / 3) == score.breakdown["reward"]
    assert score.breakdown["official_reward"] == 0.0
    assert "not the benchmark's metric" in score.breakdown["reward_note"]


def test_an_episode_that_hit_a_limit_earns_no_partial_credit_either(rows):
    with mock(reward="checks", max_errors=1).open() as session:
        session.reset(**row(rows, "create_task_1"))
        with pytest.raises(ToolError):
            session.call_tool("update_task_status", {"task_id": "task_9", "status": "completed"})
        score = session.score()
    assert (score.reward, score.breakdown["checks"]) == (0.0, [])


def test_an_unknown_reward_setting_is_refused_naming_the_two():
    with pytest.raises(ValueError, match=r"'official'.*'checks'"):
        Tau2Mock(reward="partial")


def test_a_row_with_the_scripted_users_opening_is_refused_when_a_model_plays_the_user(rows):
    env = mock(user={"base_url": "http://127.0.0.1:9/v1", "model": "user"})
    with env.open() as session, pytest.raises(DatasetRowsError, match="opens with the scripted user's words"):
        session.reset(**row(rows, "create_task_1"))
    modelled = env.provider.dataset_rows("base")[0]
    assert modelled["prompt"][-1] == {
        "role": "user",
        "content": "",
    }  # its own rows leave the opening to the user
