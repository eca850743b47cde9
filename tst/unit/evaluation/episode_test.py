"""`agent_env/evaluation/_episode.py`: how an episode runs and ends, and what the model's odd replies lead to."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_env import AgentEnv, Environment, tool
from agent_env.evaluation import Sampling
from agent_env.llm._client import TURN_SEED_STEP
from testbed.scripted import Answer, call, completion, scripted, tool_results, toy_policy
from testbed.toy import MALFORMED, VALID, ToyDesk


def replies(*answers: Answer) -> Any:
    """A model that gives `answers` in turn in every episode (the last one again past the end)."""

    def script(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        turn = sum(message["role"] == "assistant" for message in body["messages"])
        return answers[min(turn, len(answers) - 1)]

    return script


def only(report: Any) -> Any:
    (episode,) = report.episodes
    return episode


def test_an_episode_ends_on_end_turn_and_is_scored_by_the_environment(run):
    with scripted(toy_policy) as server:
        report = run(server.url, episodes=1)
    episode = only(report)
    assert (episode.ended_by, episode.turns, episode.reward) == ("end_turn", 2, pytest.approx(0.3))
    first = server.requests[0][0]["messages"]
    assert first == [
        {"role": "user", "content": "Trade.\n\nTask test-0: submit offers, then end your turn."}
    ]  # as under TRL
    last = server.requests[1][0]["messages"]
    assert [message["role"] for message in last] == ["user", "assistant", "tool"]
    assert last[2] == {
        "role": "tool",
        "tool_call_id": "call-submit_offers",
        "content": "accepted 3 curves and 1 AS offers",
    }


def test_an_episode_ends_on_a_reply_without_calls_and_reading_its_reward_ends_it(run):
    answers = replies(
        Answer(completion(tool_calls=[call("submit_offers", VALID)])), Answer(completion("All set."))
    )
    with scripted(answers) as server:
        episode = only(run(server.url, episodes=1))
    assert (episode.ended_by, episode.turns, episode.reward) == ("no_tool_calls", 2, pytest.approx(0.3))
    assert episode.faults == {}


def test_an_episode_ends_after_max_turns(run):
    with scripted(replies(Answer(completion(tool_calls=[call("battery_status", {})])))) as server:
        episode = only(run(server.url, episodes=1, max_turns=3))
    assert (episode.ended_by, episode.turns, len(episode.calls), episode.reward) == ("max_turns", 3, 3, 0.0)


def test_parallel_calls_run_in_order_each_answered_by_its_own_message(run, tmp_path):
    both = [call("submit_offers", VALID, "a"), call("end_turn", {}, "b")]
    with scripted(replies(Answer(completion("Submitting.", tool_calls=both)))) as server:
        episode = only(run(server.url, episodes=1))
    assert [(c["name"], c["verdict"]) for c in episode.calls] == [
        ("submit_offers", "accepted"),
        ("end_turn", "accepted"),
    ]
    assert episode.faults == {"parallel_calls": 1, "text_with_calls": 1}
    assert (episode.ended_by, episode.reward) == ("end_turn", pytest.approx(0.3))
    line = json.loads((tmp_path / "run.jsonl").read_text().splitlines()[1])
    assert line["transcript"][1]["content"] == "Submitting."  # the text is kept with the calls
    assert line["transcript"][2:] == [
        {"role": "tool", "tool_call_id": "a", "content": "accepted 3 curves and 1 AS offers"},
        {"role": "tool", "tool_call_id": "b", "content": "Turn ended."},
    ]


def test_the_model_reads_each_refusal_as_trl_would_write_it_and_may_recover(run):
    answers = replies(
        Answer(completion(tool_calls=[call("submit_offer", VALID, "1")])),
        Answer(completion(tool_calls=[call("submit_offers", '{"curves": [', "2")])),
        Answer(completion(tool_calls=[call("submit_offers", MALFORMED, "3")])),
        Answer(completion(tool_calls=[call("submit_offers", VALID, "4")])),
        Answer(completion("Done.")),
    )
    with scripted(answers) as server:
        episode = only(run(server.url, episodes=1))
    assert [c["verdict"] for c in episode.calls] == [
        "unknown_tool",
        "not_json",
        "invalid_arguments",
        "accepted",
    ]
    assert episode.faults == {"unknown_tool": 1, "not_json": 1}
    read = tool_results(server.requests[-1][0])
    assert read[0] == "{'error': 'Tool submit_offer not found.'}"
    assert read[1].startswith("{'error': Invalid arguments for tool 'submit_offers'; fix these and call it again:\n"
                              "- (arguments): not JSON (")  # fmt: skip
    assert "curves[0].points[1]: [100] has less than 2 items" in read[2]
    assert read[3] == "accepted 3 curves and 1 AS offers"


def test_a_call_written_as_text_is_counted_as_unparsed_and_the_run_says_the_server_ignores_tools(run):
    text = '<tool_call>\n{"name": "submit_offers", "arguments": {"curves": []}}\n</tool_call>'
    with scripted(replies(Answer(completion(text)))) as server:
        report = run(server.url, episodes=2)
    assert all(e.faults == {"unparsed_call": 1} and e.ended_by == "no_tool_calls" for e in report.episodes)
    assert len(report.notes) == 1
    assert report.notes[0].startswith(
        "no reply carried a tool call the server parsed, and 2 episodes' replies wrote calls as text: the server "
        "ignores tools or cannot parse this model's calls (vLLM: --enable-auto-tool-choice --tool-call-parser NAME"
    )


def test_a_call_whose_json_does_not_read_is_the_models_malformed_call_not_a_server_that_ignores_tools(run):
    """vLLM's hermes parser hands on only the calls it can read: one whose JSON is broken comes back as text."""
    text = '<tool_call>\n{"name": "submit_offers", "arguments": {"curves": [}}\n</tool_call>'
    with scripted(replies(Answer(completion(text)))) as server:
        report = run(server.url, episodes=2)
    assert all(e.faults == {"unreadable_call": 1} and e.ended_by == "no_tool_calls" for e in report.episodes)
    assert report.notes == []  # the server parses calls; this model wrote one it cannot read


def test_a_call_cut_off_mid_json_is_unreadable_too(run):
    text = '<tool_call>\n{"name": "submit_offers", "arguments": {"curves": [{"hours": "HE'
    with scripted(replies(Answer(completion(text, finish_reason="length")))) as server:
        episode = only(run(server.url, episodes=1))
    assert episode.faults == {"unreadable_call": 1, "truncated": 1}


def test_plain_text_is_not_taken_for_a_call(run):
    with scripted(replies(Answer(completion("I would submit_offers, but the prices look off.")))) as server:
        report = run(server.url, episodes=1)
    assert only(report).faults == {} and report.notes == []


def test_a_reply_cut_short_is_counted(run):
    with scripted(replies(Answer(completion("The forecast shows", finish_reason="length")))) as server:
        assert only(run(server.url, episodes=1)).faults == {"truncated": 1}


class FailingReset(Environment):
    def reset(self, **row: Any) -> Any:
        if row.get("task") == "bad":
            raise RuntimeError("no such day")
        if row.get("task") == "odd":
            return 42  # no observation TRL can append to the prompt
        return "go"

    def reward(self) -> float:
        return 1.0

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        return [{"task": "bad"}, {"task": "good"}, {"task": "odd"}]

    @tool
    def look(self) -> str:
        """Look around."""
        return "nothing"


def test_an_environment_that_fails_ends_only_its_own_episode(run):
    with scripted(replies(Answer(completion("ok")))) as server:
        report = run(server.url, env=AgentEnv.local(FailingReset))
    bad, good, odd = sorted(report.episodes, key=lambda e: e.position)
    said = "FailingReset could not start it: its reset raised RuntimeError: no such day"
    assert (bad.ended_by, bad.error, bad.reward) == ("error", said, None)
    assert bad.faults == {"environment_error": 1}
    returned = (
        "FailingReset could not start it: its reset returned 42 (an int), not an observation TRL can append to "
        'the prompt: return a string, None, or a list of content parts like {"type": "text", "text": "..."}'
    )
    assert (odd.ended_by, odd.error, odd.reward, odd.faults) == (
        "error",
        returned,
        None,
        {"environment_error": 1},
    )
    assert report.summaries[0].faults == {"environment_error": 2}
    assert report.summaries[0].errors == {said: 1, returned: 1}
    assert (good.ended_by, good.reward) == ("no_tool_calls", 1.0)


def test_every_request_sends_the_published_tools_and_the_sampling_settings(run):
    sampling = Sampling(temperature=0.7, top_p=0.9, max_tokens=64, seed=100, extra_body={"top_k": 20})
    with scripted(toy_policy) as server:
        run(server.url, episodes=2, sampling=sampling, concurrency=1)
    bodies = [body for body, _ in server.requests]
    published = {t.name: t.published() for t in ToyDesk.tools.values()}
    for body in bodies:
        assert {tool["function"]["name"]: tool["function"]["parameters"] for tool in body["tools"]} == {
            name: found["inputSchema"] for name, found in published.items()
        }
        assert (body["temperature"], body["top_p"], body["max_tokens"], body["top_k"]) == (0.7, 0.9, 64, 20)
    assert sorted({body["seed"] % TURN_SEED_STEP for body in bodies}) == [
        100,
        101,
    ]  # an episode's first reply
    # and each later reply with a seed of its own: one seed for all of them would draw each with the same numbers
    assert len({body["seed"] for body in bodies}) == len(bodies) == 4


def test_unset_sampling_settings_are_left_to_the_server(run):
    with scripted(toy_policy) as server:
        run(server.url, episodes=1)
    body = server.requests[0][0]
    assert set(body) == {"model", "messages", "tools", "seed"}
