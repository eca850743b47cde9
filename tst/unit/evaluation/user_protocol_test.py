"""`agent_env/evaluation/_episode.py` under a simulated user's protocol (τ²-bench's), against two scripted servers on
real sockets, one the agent and one the user: a plain reply goes to the user, the user's answer comes back as a user
message, the user's ending ends the episode, and what breaks the protocol scores 0."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.evaluation import Endpoint, Report, evaluate
from agent_env.evaluation._episode import USER_MAX_TURNS
from testbed.scripted import Answer, call, completion, scripted

FAST = {"backoff": 0.001, "max_backoff": 0.01}
CREATE = call("create_task", {"user_id": "user_1", "title": "Important Meeting"})


def agent_that(*replies: Callable[[dict[str, Any]], Answer]) -> Callable[..., Answer]:
    """An agent whose n-th reply in an episode is the n-th of `replies` (the last one again after that)."""

    def script(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        turn = sum(message["role"] == "assistant" for message in body["messages"])
        return replies[min(turn, len(replies) - 1)](body)

    return script


def user_that_stops(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """A user that opens with its request, then says goodbye to whatever the agent says."""
    if not any(message["role"] == "assistant" for message in body["messages"]):
        return Answer(completion("Please create a task called Important Meeting for user_1."))
    return Answer(completion("Great, thank you. ###STOP###"))


def run(
    agent: Callable[..., Answer], user: Callable[..., Answer], tmp_path: Path, **options: Any
) -> tuple[Report, list[dict[str, Any]], Any, Any]:
    with scripted(agent) as model, scripted(user, models=("user-sim",)) as simulated:
        env = AgentEnv.local("tau2-mock", user={"base_url": simulated.url, **FAST})
        options.setdefault("episodes", 1)
        report = evaluate(
            env, Endpoint(model.url, **FAST), split="base", out=tmp_path / "run.jsonl", **options
        )
    lines = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    return report, [line for line in lines if line["type"] == "episode"], model, simulated


def test_a_plain_reply_goes_to_the_user_and_the_users_goodbye_ends_a_scored_episode(tmp_path):
    agent = agent_that(
        lambda body: Answer(completion(tool_calls=[CREATE])),
        lambda body: Answer(completion("Done: the task is created.")),
    )
    report, [episode], model, simulated = run(agent, user_that_stops, tmp_path)
    assert episode["ended_by"] == "ended" and episode["ending"] == "the user ended the conversation"
    assert episode["reward"] == 1.0 and episode["breakdown"]["parts"]["DB"]["reward"] == 1.0
    roles = [message["role"] for message in episode["transcript"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert episode["transcript"][-1]["content"] == "Great, thank you. ###STOP###"
    offered = {tool["function"]["name"] for tool in model.requests[0][0]["tools"]}
    assert "message_user" not in offered and "end_turn" not in offered and "create_task" in offered
    # The user read the agent's message as its interlocutor's, after its own opening.
    last = simulated.requests[-1][0]["messages"]
    assert [(m["role"], m["content"]) for m in last[-2:]] == [
        ("assistant", "Please create a task called Important Meeting for user_1."),
        ("user", "Done: the task is created."),
    ]
    assert report.summaries[0].ended_by == {"ended": 1}


SAID = "The agent acknowledged the previous context; the agent confirmed the task status was updated successfully."
"""What task update_task_with_initialization_data must say (its communicate_info), in one text."""


def row(task_id: str) -> dict[str, Any]:
    return next(dict(r) for r in AgentEnv.local("tau2-mock").dataset("base") if r["task_id"] == task_id)


def test_a_reply_with_text_and_calls_runs_the_calls_and_its_text_counts_as_said_though_the_user_never_reads_it(
    tmp_path,
):
    # τ²-bench's default protocol: the reply goes to the environment, not the user, and stays in the trajectory,
    # where COMMUNICATE reads its text. Here that text alone says what the task must say.
    update = call("update_task_status", {"task_id": "task_2", "status": "completed"})
    agent = agent_that(
        lambda body: Answer(completion(SAID, tool_calls=[update])),
        lambda body: Answer(completion("Is there anything else?")),
    )
    _, [episode], _, simulated = run(
        agent, user_that_stops, tmp_path, rows=[row("update_task_with_initialization_data")], episodes=None
    )
    assert episode["ended_by"] == "ended" and episode["reward"] == 1.0
    parts = episode["breakdown"]["parts"]
    assert parts["DB"]["reward"] == 1.0 and parts["COMMUNICATE"]["reward"] == 1.0
    assert [call["verdict"] for call in episode["calls"]] == ["accepted"]
    assert episode["faults"] == {"text_with_calls": 1}
    reply = episode["transcript"][episode["opening"]]
    assert reply["role"] == "assistant" and reply["content"] == SAID and reply["tool_calls"]
    heard = [message["content"] for body, _ in simulated.requests for message in body["messages"]]
    assert SAID not in heard and "Is there anything else?" in heard


def test_a_reply_with_neither_text_nor_calls_ends_the_episode_unscored_and_counted(tmp_path):
    agent = agent_that(
        lambda body: Answer(completion(tool_calls=[CREATE])), lambda body: Answer(completion("  "))
    )
    report, [episode], _, _ = run(agent, user_that_stops, tmp_path)
    assert (episode["ended_by"], episode["reward"], episode["breakdown"]) == ("error", None, None)
    assert episode["error"].startswith(
        "the model's reply had neither text nor a tool call, which τ²-bench's protocol cannot take"
    )
    assert episode["faults"] == {"empty_reply": 1} and episode["turns"] == 2
    assert report.summaries[0].failed == 1 and report.summaries[0].faults == {"empty_reply": 1}


def test_an_episode_that_reaches_max_turns_scores_zero_as_neither_side_ended_it(tmp_path):
    agent = agent_that(lambda body: Answer(completion(tool_calls=[call("get_users", {})])))
    _, [episode], _, _ = run(agent, user_that_stops, tmp_path, max_turns=3)
    assert episode["ended_by"] == "max_turns" and episode["reward"] == 0.0
    assert "neither the agent nor the user ended the conversation" in episode["breakdown"]["note"]


def test_a_user_endpoint_that_fails_ends_the_episode_unscored_and_counted(tmp_path):
    def user(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if not any(message["role"] == "assistant" for message in body["messages"]):
            return Answer(completion("Please create a task."))
        return Answer({"error": {"message": "overloaded"}}, status=503)

    agent = agent_that(lambda body: Answer(completion("What title?")))
    report, [episode], _, _ = run(agent, user, tmp_path)
    assert episode["ended_by"] == "error" and episode["reward"] is None
    assert "UserEndpointError" in episode["error"] and "gave up after 4 attempts" in episode["error"]
    # the episode's end, and the attempts the user's endpoint failed before it gave up, each counted
    counted = {"user_endpoint": 1, "user_retries_exhausted": 1, "user_server_error": 4}
    assert episode["faults"] == counted
    assert report.summaries[0].failed == 1 and report.summaries[0].faults == dict.fromkeys(sorted(counted), 1)


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def overloaded(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    return Answer({"error": {"message": "overloaded"}}, status=503)


@pytest.mark.parametrize(
    ("where", "settings", "said", "counted"),
    [
        ("503", {"model": "user-sim"}, "gave up after 4 attempts; the last: HTTP 503: overloaded",
         {"user_server_error": 4, "user_retries_exhausted": 1}),
        ("down", {"model": "user-sim"}, "gave up after 4 attempts; the last: connection failed",
         {"user_connection": 4, "user_retries_exhausted": 1}),
        ("down", {}, "for the user's endpoint the options are --user-base-url, --user-model",
         {"user_model_list": 1}),
    ],
)  # fmt: skip
def test_a_user_that_cannot_open_ends_the_episode_unscored_counted_as_the_users_at_reset(
    tmp_path, where, settings, said, counted
):
    with scripted(lambda body, headers: Answer(completion("Hello?"))) as model, scripted(overloaded) as user:
        url = user.url if where == "503" else f"http://127.0.0.1:{unused_port()}/v1"
        env = AgentEnv.local("tau2-mock", user={"base_url": url, **settings, **FAST})
        report = evaluate(
            env, Endpoint(model.url, **FAST), split="base", episodes=1, out=tmp_path / "r.jsonl"
        )
    [episode] = report.episodes
    assert episode.ended_by == "error" and episode.reward is None and episode.turns == 0
    assert episode.error is not None
    assert episode.error.startswith(
        f"UserEndpointError at reset (the episode could not start): the simulated user's endpoint ({url}) failed: "
    )
    assert said in episode.error and "could not score" not in episode.error
    assert episode.faults == {"user_endpoint": 1, **counted}  # never an environment_error
    assert model.requests == []  # the agent was never asked


def test_the_users_retried_faults_are_in_the_breakdown_and_the_episodes_faults(tmp_path):
    failures = iter([429, 503])  # the opening's first attempt, then the first reply's

    def user(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        status = next(failures, None)
        if status is not None:
            return Answer({"error": {"message": "busy"}}, status=status)
        return user_that_stops(body, headers)

    agent = agent_that(
        lambda body: Answer(completion(tool_calls=[CREATE])),
        lambda body: Answer(completion("Done: the task is created.")),
    )
    report, [episode], _, _ = run(agent, user, tmp_path)
    assert episode["reward"] == 1.0
    reported = {"user_rate_limited": 1, "user_server_error": 1}
    assert episode["breakdown"]["faults"] == reported  # the opening's fault too, which reset met
    assert episode["faults"] == reported
    assert report.summaries[0].faults == reported


def test_under_the_users_protocol_an_episode_gets_more_than_ten_replies_by_default(tmp_path):
    agent = agent_that(*[lambda body: Answer(completion(tool_calls=[call("get_users", {})]))] * 14,
                       lambda body: Answer(completion("Done.")))  # fmt: skip
    _, [episode], _, _ = run(agent, user_that_stops, tmp_path)
    assert (episode["ended_by"], episode["turns"]) == ("ended", 15)
    assert episode["breakdown"]["ended"] == "the user ended the conversation"
    header = json.loads((tmp_path / "run.jsonl").read_text().splitlines()[0])
    assert header["max_turns"] == USER_MAX_TURNS == 200


def test_the_environments_own_step_limit_ends_an_episode_before_the_default_max_turns(tmp_path):
    agent = agent_that(lambda body: Answer(completion(tool_calls=[call("get_users", {})])))
    _, [episode], _, _ = run(agent, user_that_stops, tmp_path)
    assert episode["ended_by"] == "ended" and episode["turns"] < USER_MAX_TURNS
    assert "max_steps=200" in episode["ending"]
    assert episode["reward"] == 0.0 and episode["breakdown"]["ended"] == "the episode reached max_steps"


def test_trials_play_each_task_again_and_the_summary_gives_pass_k(tmp_path):
    def agent(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if body["seed"] % 2 and not any(
            m["role"] == "tool" for m in body["messages"]
        ):  # odd seeds do nothing
            return Answer(completion("Bye."))
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Answer(completion(tool_calls=[CREATE]))
        return Answer(completion("Done."))

    report, episodes, _, _ = run(agent, user_that_stops, tmp_path, episodes=2, trials=2)
    assert [episode["episode"] for episode in episodes] == sorted(
        [
            "create_task_1",
            "create_task_1_with_env_assertions",
            "create_task_1#1",
            "create_task_1_with_env_assertions#1",
        ],
        key=[e["episode"] for e in episodes].index,
    )
    rewards = {episode["episode"]: episode["reward"] for episode in episodes}
    assert rewards == {"create_task_1": 1.0, "create_task_1_with_env_assertions": 0.0, "create_task_1#1": 1.0,
                       "create_task_1_with_env_assertions#1": 0.0}  # fmt: skip
    pass_k = report.summaries[0].pass_k
    assert pass_k[1].value == 0.5 and pass_k[1].n == 2
    assert pass_k[2].value == 0.5 and pass_k[2].n == 2


@pytest.mark.parametrize("trials", [0, -1])
def test_trials_below_one_are_refused(tmp_path, trials):
    with pytest.raises(ValueError, match="trials must be at least 1"):
        evaluate(
            AgentEnv.local("tau2-mock"),
            Endpoint("http://127.0.0.1:9/v1"),
            trials=trials,
            out=tmp_path / "x.jsonl",
        )


def test_a_run_with_the_scripted_user_says_its_rewards_are_not_the_leaderboards(tmp_path):
    agent = agent_that(
        lambda body: Answer(completion(tool_calls=[CREATE])), lambda body: Answer(completion("Done."))
    )
    with scripted(agent) as model:
        report = evaluate(
            AgentEnv.local("tau2-mock"),
            Endpoint(model.url, **FAST),
            split="base",
            episodes=2,
            out=tmp_path / "r.jsonl",
        )
    assert any(
        "the user is scripted (no model plays it)" in note and "(2 of 2 episodes)" in note
        for note in report.notes
    )


def test_a_user_that_cannot_open_on_a_served_environment_is_counted_as_the_users_too(tmp_path):
    # Over HTTP the session's error arrives with its cause (the user's endpoint error and its failed attempts), so
    # an evaluation of a served τ² environment counts it as one in process does, never as the environment's.
    from agent_env.envs.tau2.mock import Tau2Mock
    from agent_env.server.app import build_app
    from tst.unit.server.running import running

    down = f"http://127.0.0.1:{unused_port()}/v1"
    served = build_app(Tau2Mock, user={"base_url": down, "model": "user-sim", **FAST})
    with running(served) as url, scripted(lambda body, headers: Answer(completion("Hello?"))) as model:
        report = evaluate(
            AgentEnv.connect(url),
            Endpoint(model.url, **FAST),
            split="base",
            episodes=1,
            out=tmp_path / "r.jsonl",
        )
    [episode] = report.episodes
    assert episode.ended_by == "error" and episode.reward is None
    assert episode.error is not None and episode.error.startswith("UserEndpointError at reset")
    assert episode.faults == {"user_endpoint": 1, "user_connection": 4, "user_retries_exhausted": 1}
    assert model.requests == []
