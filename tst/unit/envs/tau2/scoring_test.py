"""`agent_env/envs/tau2/scoring.py` and `judge.py`: each part of the reward basis, with why; natural-language
assertions judged by a model only when one is given, and said to be left out otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.envs.tau2.judge import verdicts
from agent_env.errors import InfrastructureFailedError, JudgeEndpointError
from agent_env.users import ASIDE, USER_CHANNEL
from testbed.scripted import Answer, completion, scripted
from tst.support import tau2_folder

FAST = {"backoff": 0.001, "max_backoff": 0.01, "timeout": 5.0}


@pytest.fixture(scope="module")
def patched_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mock domain with some tasks' criteria changed (a copy: the pinned files stay as they are): update_task_1
    scored DB x NL_ASSERTION, create_task_1_nl_eval NL_ASSERTION alone, create_task_1 with no criteria at all."""
    root = tau2_folder(tmp_path_factory.mktemp("tau2"), "mock")
    tasks = json.loads((root / "mock" / "tasks.json").read_text())
    for task in tasks:
        if task["id"] == "update_task_1":
            task["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
            task["evaluation_criteria"]["nl_assertions"] = [
                "The agent marked the task completed",
                "The agent was polite",
            ]
        if task["id"] == "create_task_1_nl_eval":  # nothing but assertions to judge
            task["evaluation_criteria"]["reward_basis"] = ["NL_ASSERTION"]
        if task["id"] == "create_task_1":
            task["evaluation_criteria"] = None
    (root / "mock" / "tasks.json").write_text(json.dumps(tasks))
    return root


def play(env: AgentEnv, task_id: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    with env.open() as session:
        session.reset(task_id=task_id, prompt=[{"role": "user", "content": "Please help."}])
        for name, arguments in calls:
            session.call_tool(name, arguments)
        breakdown = session.score().breakdown
    assert breakdown is not None
    return breakdown


DONE = [("update_task_status", {"task_id": "task_1", "status": "completed"})]


def test_without_a_judge_the_reward_is_db_only_and_says_it_is_not_the_official_metric(patched_data):
    breakdown = play(AgentEnv.local("tau2-mock", data_dir=patched_data), "update_task_1", DONE)
    assert breakdown["reward"] == 1.0 and list(breakdown["parts"]) == ["DB"]
    assert breakdown["official"] is False
    assert (
        "not the official metric" in breakdown["note"] and "NL_ASSERTION needs a judge" in breakdown["note"]
    )
    assert "on the command line --judge-base-url and --judge-model" in breakdown["note"]
    assert breakdown["faults"] == {}  # a scripted user has no endpoint to fail


def test_without_a_judge_a_reward_of_nothing_but_assertions_is_no_reward_and_says_the_judge_is_missing(
    patched_data,
):
    create = [("create_task", {"user_id": "user_1", "title": "Important Meeting"})]
    env = AgentEnv.local("tau2-mock", data_dir=patched_data)
    with pytest.raises(
        InfrastructureFailedError
    ) as raised:  # a trainer leaves it out, eval counts it unscored
        play(env, "create_task_1_nl_eval", create)
    assert isinstance(raised.value.cause, JudgeEndpointError)
    assert (
        "the task's reward is NL_ASSERTION, and NL_ASSERTION needs a judge, but none was given: with no part left "
        "to measure, the episode has no reward; give a judge with judge={'base_url': ..., 'model': ...}"
    ) in str(raised.value)
    met = {"results": [{"expectedOutcome": "x", "reasoning": "r", "metExpectation": True}] * 2}
    with scripted(lambda body, headers: Answer(completion(json.dumps(met)))) as server:
        judged = AgentEnv.local("tau2-mock", data_dir=patched_data, judge={"base_url": server.url, **FAST})
        breakdown = play(judged, "create_task_1_nl_eval", create)
    assert breakdown["reward"] == 1.0 and list(breakdown["parts"]) == ["NL_ASSERTION"]


def test_a_judge_finds_each_assertion_met_or_not_and_the_reward_follows(patched_data):
    answer = {"results": [
        {"expectedOutcome": "The agent marked the task completed", "reasoning": "It did.", "metExpectation": True},
        {"expectedOutcome": "The agent was polite", "reasoning": "Curt.", "metExpectation": False},
    ]}  # fmt: skip
    with scripted(lambda body, headers: Answer(completion(json.dumps(answer)))) as server:
        env = AgentEnv.local("tau2-mock", data_dir=patched_data, judge={"base_url": server.url, **FAST})
        breakdown = play(env, "update_task_1", [*DONE, (USER_CHANNEL, {"message": "Done."})])
    nl = breakdown["parts"]["NL_ASSERTION"]
    assert nl["reward"] == 0.0 and nl["why"] == "not met: ['The agent was polite']"
    assert breakdown["reward"] == 0.0 and breakdown["official"] is True and "note" not in breakdown
    transcript = server.requests[0][0]["messages"][1]["content"]
    assert "[calls update_task_status(" in transcript and "assistant: Done." in transcript
    assert server.requests[0][0]["temperature"] == 0.0


def test_a_judge_that_fails_leaves_the_episode_unscored(patched_data):
    with scripted(lambda body, headers: Answer(completion("I think so?"))) as server:
        env = AgentEnv.local("tau2-mock", data_dir=patched_data, judge={"base_url": server.url, **FAST})
        with pytest.raises(
            InfrastructureFailedError, match="cannot be read as one verdict per assertion"
        ) as raised:
            play(env, "update_task_1", DONE)
    assert isinstance(
        raised.value.cause, JudgeEndpointError
    )  # a service failed: a trainer leaves it unscored


@pytest.mark.parametrize("met", ['"false"', '"true"', "0", "null"])
def test_a_verdict_that_is_not_a_json_boolean_is_a_failed_judge_not_a_met_assertion(patched_data, met):
    answer = (
        '{"results": [{"expectedOutcome": "a", "reasoning": "r", "metExpectation": true}, '
        f'{{"expectedOutcome": "b", "reasoning": "r", "metExpectation": {met}}}]}}'
    )
    with pytest.raises(JudgeEndpointError, match=f"metExpectation must be true or false, not {met}"):
        verdicts(answer, ["a", "b"])
    with scripted(lambda body, headers: Answer(completion(answer))) as server:
        env = AgentEnv.local("tau2-mock", data_dir=patched_data, judge={"base_url": server.url, **FAST})
        with pytest.raises(InfrastructureFailedError, match="metExpectation must be true or false") as raised:
            play(env, "update_task_1", DONE)
    assert isinstance(raised.value.cause, JudgeEndpointError)  # unscored, never a reward
    assert raised.value.cause.faults == {"judge_unreadable_verdicts": 1}


def test_the_judges_retried_faults_are_in_the_breakdown(patched_data):
    met = {"results": [{"expectedOutcome": "x", "reasoning": "r", "metExpectation": True}] * 2}
    answers = iter(
        [Answer({"error": {"message": "slow down"}}, status=429), Answer(completion(json.dumps(met)))]
    )
    with scripted(lambda body, headers: next(answers)) as server:
        env = AgentEnv.local("tau2-mock", data_dir=patched_data, judge={"base_url": server.url, **FAST})
        breakdown = play(env, "update_task_1", DONE)
    assert breakdown["reward"] == 1.0 and breakdown["faults"] == {"judge_rate_limited": 1}


def test_a_judge_without_a_base_url_is_refused_naming_the_option():
    with pytest.raises(ValueError, match=r"the judge's settings name no base_url .* --judge-base-url"):
        AgentEnv.local("tau2-mock", judge={"model": "gpt-4.1"}).open()


def test_verdicts_are_read_from_plain_or_fenced_json_one_per_assertion():
    text = '```json\n{"results": [{"expectedOutcome": "a", "reasoning": "r", "metExpectation": true}]}\n```'
    assert [(v.assertion, v.met) for v in verdicts(text, ["a"])] == [("a", True)]
    with pytest.raises(JudgeEndpointError):
        verdicts('{"results": []}', ["a"])


def test_communicate_counts_only_what_was_said_to_the_user_lower_cased_without_commas():
    env = AgentEnv.local("tau2-mock")
    said = play(
        env,
        "update_task_with_initialization_data",
        [
            *DONE,
            (
                USER_CHANNEL,
                {
                    "message": "THE AGENT ACKNOWLEDGED THE PREVIOUS CONTEXT, and the agent confirmed the task status was updated successfully."
                },
            ),
        ],
    )
    assert said["parts"]["COMMUNICATE"] == {"reward": 1.0, "why": said["parts"]["COMMUNICATE"]["why"]}
    silent = play(env, "update_task_with_initialization_data", DONE)
    assert (
        silent["parts"]["COMMUNICATE"]["reward"] == 0.0
        and "never said to the user" in silent["parts"]["COMMUNICATE"]["why"]
    )


def test_communicate_counts_an_aside_which_the_judge_reads_in_order_and_which_is_no_call_or_step():
    # The text of a reply that also called tools (eval's `ASIDE`): upstream keeps it in the trajectory, where
    # COMMUNICATE and the judge read it, as part of the agent's message to the environment, not a step of its own.
    aside = "The agent acknowledged the previous context; the agent confirmed the task status was updated successfully"
    with AgentEnv.local("tau2-mock").open() as session:
        session.reset(
            task_id="update_task_with_initialization_data", prompt=[{"role": "user", "content": "Hi."}]
        )
        env = session.environment
        steps = env.steps
        session.call_tool(ASIDE, {"text": aside, "calls": 1})
        session.call_tool("update_task_status", {"task_id": "task_2", "status": "completed"})
        breakdown = session.score().breakdown
    assert breakdown["reward"] == 1.0 and breakdown["parts"]["COMMUNICATE"]["reward"] == 1.0
    assert env.transcript[-3:] == [
        ("assistant", aside),
        ("assistant", '[calls update_task_status({"task_id":"task_2","status":"completed"})]'),
        ("tool", env.calls[-1].result),
    ]
    assert [call.name for call in env.calls][-1:] == ["update_task_status"] and ASIDE not in [
        c.name for c in env.calls
    ]
    assert (env.steps - steps, env.errors) == (2, 0)  # one message and its answer, as the call alone would be


def test_a_task_with_no_evaluation_criteria_scores_1_whatever_the_episode_did_as_upstream(patched_data):
    wrong = [("update_task_status", {"task_id": "task_1", "status": "completed"})]  # not what it asks
    breakdown = play(AgentEnv.local("tau2-mock", data_dir=patched_data), "create_task_1", wrong)
    assert breakdown["reward"] == 1.0 and breakdown["official"] is True
    assert (breakdown["basis"], breakdown["parts"]) == ([], {})
    assert breakdown["note"] == "the task has no evaluation criteria"


def test_db_compares_with_what_the_reference_actions_leave_and_says_what_changed():
    env = AgentEnv.local("tau2-mock")
    right = play(env, "update_task_1", DONE)
    wrong = play(env, "update_task_1", [("create_task", {"user_id": "user_1", "title": "Other"})])
    assert right["parts"]["DB"]["reward"] == 1.0
    assert wrong["parts"]["DB"] == {
        "reward": 0.0,
        "why": "the database differs from the one the reference actions leave",
        "changed": {"tasks": ["task_2"], "users": ["user_1"]},
        "expected_changed": {"tasks": ["task_1"]},
    }


def test_an_assertion_that_raises_does_not_hold_and_says_why():
    breakdown = play(AgentEnv.local("tau2-mock"), "create_task_1_with_env_assertions", [])
    assert breakdown["parts"]["ENV_ASSERTION"]["reward"] == 0.0
    assert "raised Task task_2 not found" in breakdown["parts"]["ENV_ASSERTION"]["why"]


def test_the_breakdown_names_the_user_and_says_a_scripted_one_is_not_the_benchmarks():
    breakdown = play(AgentEnv.local("tau2-mock"), "update_task_1", DONE)
    assert breakdown["user"] == {"kind": "scripted", "script": "the scenario's"}
    assert "not comparable with the leaderboard's" in breakdown["user_note"]
