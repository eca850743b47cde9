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
from agent_env.users import ScriptedUser
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
    """Task `task_id`'s row as an environment whose user is a model gives it: its user turn left for the user."""
    env = AgentEnv.local("tau2-mock", user={"base_url": "http://127.0.0.1:9/v1"})
    return next(dict(r) for r in env.dataset("base") if r["task_id"] == task_id)


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


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ('<tool_call>\n{"name": "create_task", "arguments": {"title": [}}\n</tool_call>', "unreadable_call"),
        ('<tool_call>\n{"name": "create_task", "arguments": {"title": "x"}}\n</tool_call>', "unparsed_call"),
    ],
)
def test_a_call_written_as_text_goes_to_the_user_as_upstream_sends_it_and_is_counted(tmp_path, text, fault):
    """vLLM's hermes parser hands on only the calls it can read; a server without a parser none: the reply is text,
    which τ²-bench's protocol sends to the user. The fault says whose it is: the model's or the server's."""
    agent = agent_that(lambda body: Answer(completion(text)))
    report, [episode], _, simulated = run(agent, user_that_stops, tmp_path)
    assert episode["faults"] == {fault: 1} and episode["calls"] == []
    assert simulated.requests[-1][0]["messages"][-1] == {"role": "user", "content": text}
    assert episode["ended_by"] == "ended"
    ignored = [note for note in report.notes if note.startswith("no reply carried a tool call the server")]
    assert bool(ignored) == (fault == "unparsed_call")  # the run says the server ignores tools


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


# τ²-bench's protocol, whole: each reply's calls one message, every call run, what upstream's agent reads after a
# failed call, transfers that only answer, and the limits applied when upstream's orchestrator applies them.


def play_scripted(
    tmp_path: Path, agent: Callable[..., Answer], task_id: str, **config: Any
) -> tuple[dict[str, Any], Any]:
    """One episode of `task_id` with the scripted user (no model plays it), the environment set with `config`."""
    with scripted(agent) as model:
        env = AgentEnv.local("tau2-mock", **config)
        evaluate(env, Endpoint(model.url, **FAST), rows=[next(r for r in env.dataset("base") if r["task_id"] ==
                 task_id)], out=tmp_path / "r.jsonl")  # fmt: skip
    episodes = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    return next(line for line in episodes if line["type"] == "episode"), model


def tool_messages(episode: dict[str, Any]) -> list[str]:
    return [message["content"] for message in episode["transcript"] if message["role"] == "tool"]


def test_what_the_model_reads_after_a_failed_call_is_what_upstreams_agent_reads(tmp_path):
    calls = [
        call("update_task_status", {"task_id": "task_9", "status": "completed"}, "c1"),  # the tool refuses it
        call("update_task_status", {"task_id": "task_1", "status": "done"}, "c2"),  # the schema refuses it
        call("delete_task", {"task_id": "task_1"}, "c3"),  # no such tool
        call("message_user", {"message": "hi"}, "c4"),  # not offered under the protocol
    ]
    agent = agent_that(
        lambda body: Answer(completion(tool_calls=calls)), lambda body: Answer(completion("Bye."))
    )
    episode, _ = play_scripted(tmp_path, agent, "update_task_1")
    read = tool_messages(episode)
    assert read[0] == "Error: Task task_9 not found"  # upstream's environment: "Error: " and the error
    assert read[1].startswith(
        "Error: Invalid arguments for tool 'update_task_status'; fix these and call it again:"
    )
    assert '- status: expected one of "pending", "completed"; got "done"' in read[1]  # our teaching words
    assert read[2:] == ["Error: Tool 'delete_task' not found.", "Error: Tool 'message_user' not found."]
    assert [c["verdict"] for c in episode["calls"]] == ["tool_error", "invalid_arguments", "unknown_tool",
                                                        "unknown_tool"]  # fmt: skip


def test_every_call_of_a_reply_counts_as_upstreams_errors_and_the_limit_applies_after_the_last(tmp_path):
    # max_errors=4: the reply's four failures reach it, yet its fifth call still runs and changes the database.
    calls = [
        *(
            call("update_task_status", {"task_id": "task_9", "status": "completed"}, f"c{i}")
            for i in range(2)
        ),
        call("delete_task", {}, "c2"),
        call("end_turn", {}, "c3"),
        CREATE,
    ]
    agent = agent_that(
        lambda body: Answer(completion(tool_calls=calls)), lambda body: Answer(completion("Bye."))
    )
    episode, model = play_scripted(tmp_path, agent, "create_task_1", max_errors=4)
    assert episode["ending"] == "4 calls failed, the most an episode allows (max_errors=4)"
    assert episode["breakdown"]["termination"] == "too_many_errors" and episode["reward"] == 0.0
    assert tool_messages(episode)[-1].startswith('{"task_id": "task_2", "title": "Important Meeting"')
    assert len(model.requests) == 1  # the model was not asked again


def test_steps_are_counted_per_reply_so_a_reply_of_many_calls_is_two_steps(tmp_path):
    # max_steps=6: the opening (1), a reply of five calls and their answers (3), a message and the user's goodbye
    # (5): scored. Counted per call, the five calls alone would pass the limit.
    calls = [call("get_users", {}, f"c{i}") for i in range(5)]
    agent = agent_that(
        lambda body: Answer(completion(tool_calls=calls)), lambda body: Answer(completion("Bye."))
    )
    episode, _ = play_scripted(tmp_path, agent, "update_task_1", max_steps=6, user=ScriptedUser(["Hi."]))
    assert episode["ending"] == "the user ended the conversation"
    assert episode["breakdown"]["termination"] == "user_stop" and len(episode["calls"]) == 5


def test_a_message_that_reaches_max_steps_ends_the_episode_before_the_user_answers(tmp_path):
    agent = agent_that(lambda body: Answer(completion(tool_calls=[call("get_users", {})])),
                       lambda body: Answer(completion("One moment.")))  # fmt: skip
    episode, _ = play_scripted(tmp_path, agent, "update_task_1", max_steps=4, user=ScriptedUser(["Hi."]))
    assert episode["ending"] == "the episode took 4 steps, the most it allows (max_steps=4)"
    assert episode["transcript"][-1] == {"role": "assistant", "content": "One moment."}  # no answer recorded


def test_after_a_transfer_the_agent_goes_on_and_the_scripted_users_transfer_marker_ends_the_episode(tmp_path):
    transfer = call("transfer_to_human_agents", {"summary": "wants tasks deleted"})
    agent = agent_that(
        lambda body: Answer(completion(tool_calls=[transfer])),
        lambda body: Answer(completion(tool_calls=[CREATE])),  # after the transfer: it runs, and it is scored
        lambda body: Answer(completion("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.")),
    )
    episode, _ = play_scripted(tmp_path, agent, "impossible_task_1")
    assert tool_messages(episode)[0] == "Transfer successful"
    assert episode["transcript"][-1] == {"role": "user", "content": "###TRANSFER###"}
    assert episode["ending"] == "the user was transferred to another agent"
    breakdown = episode["breakdown"]
    assert breakdown["termination"] == "user_stop"
    assert breakdown["parts"]["ACTION"]["reward"] == 1.0 and breakdown["parts"]["DB"]["reward"] == 0.0


def test_the_simulated_users_key_never_reaches_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("USER_KEY", "sk-user-secret-42")

    def leaky(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if not any(message["role"] == "assistant" for message in body["messages"]):
            return Answer(completion("Create Important Meeting for user_1. My key: sk-user-secret-42"))
        return Answer(completion("sk-user-secret-42 ###STOP###"))

    agent = agent_that(
        lambda body: Answer(completion(tool_calls=[CREATE])), lambda body: Answer(completion("Done."))
    )
    with scripted(agent) as model, scripted(leaky, models=("user-sim",)) as simulated:
        env = AgentEnv.local("tau2-mock", user={"base_url": simulated.url, "api_key_env": "USER_KEY", **FAST})
        evaluate(env, Endpoint(model.url, **FAST), split="base", episodes=1, out=tmp_path / "r.jsonl")
    written = (tmp_path / "r.jsonl").read_text()
    assert "sk-user-secret-42" not in written and "Important Meeting for user_1" in written
    assert all("sk-user-secret-42" not in json.dumps(body) for body, _ in model.requests)  # nor the agent


def test_eval_reports_the_official_reward_of_an_environment_that_trains_on_its_checks(tmp_path):
    agent = agent_that(
        lambda body: Answer(completion(tool_calls=[call("update_task_status", {"task_id": "task_1",
                                                                               "status": "completed"})])),
        lambda body: Answer(completion("Done.")),
    )  # fmt: skip
    with scripted(agent) as model:
        env = AgentEnv.local("tau2-mock", reward="checks")
        report = evaluate(env, Endpoint(model.url, **FAST), rows=[next(r for r in env.dataset("base") if
                          r["task_id"] == "update_task_with_user_tools")], out=tmp_path / "r.jsonl")  # fmt: skip
    [episode] = report.episodes
    assert episode.reward == 0.0  # τ²-bench's: the user never dismissed its notification
    assert episode.breakdown is not None and episode.breakdown["reward"] == pytest.approx(2 / 3)
    assert any("reward='checks'" in note for note in report.notes)
    assert any(note.startswith("prompts: τ²-bench's own") for note in report.notes)
