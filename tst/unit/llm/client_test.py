"""`agent_env/llm/_client.py`: the endpoint is checked before any episode; the server's faults are retried
with a bounded backoff, counted against their episode, and end only that episode."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from agent_env.evaluation import EndpointError
from testbed.scripted import Answer, completion, scripted, toy_policy


def faulty(position: int, faults: list[Answer]) -> Any:
    """The toy policy, except that the episode at `position` first meets `faults`, one per request."""
    met: list[Answer] = list(faults)

    def script(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if body["seed"] == position and met:
            return met.pop(0)
        return toy_policy(body)

    return script


def episode(report: Any, position: int) -> Any:
    return next(e for e in report.episodes if e.position == position)


def test_a_refused_connection_is_reported_before_any_episode_starts_naming_the_fix(run, tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(EndpointError) as raised:
        run(f"http://127.0.0.1:{port}/v1")
    message = str(raised.value)
    assert message.startswith(f"cannot reach http://127.0.0.1:{port}/v1 (")
    assert message.endswith("start the server (vllm serve, python -m sglang.launch_server, transformers serve, "
                            "llama-server) or fix --base-url")  # fmt: skip
    assert not (tmp_path / "run.jsonl").exists()  # no episode started


def test_a_base_url_without_the_api_root_is_refused_saying_to_add_it(run):
    with scripted(toy_policy) as server, pytest.raises(EndpointError) as raised:
        run(server.url.removesuffix("/v1"))
    assert "/models was not found (HTTP 404): --base-url must be the API root, usually ending in /v1" in str(
        raised.value
    )


def test_a_server_serving_several_models_needs_one_named(run):
    with scripted(toy_policy, models=("a", "b")) as server:
        with pytest.raises(EndpointError, match=r"name the model with --model: the server lists 2 \(a, b\)"):
            run(server.url)
        report = run(server.url, endpoint={"model": "b"}, episodes=1)
        assert report.model == "b" and server.requests[0][0]["model"] == "b"


def test_a_model_the_server_does_not_list_is_asked_for_with_a_note(run):
    with scripted(toy_policy, models=("a",)) as server:
        report = run(server.url, endpoint={"model": "c"}, episodes=1)
    assert report.notes == ["the server does not list model 'c' (a)"]


def test_rate_limits_are_retried_after_what_the_server_asks_and_counted_against_their_episode(run):
    limited = Answer({"error": {"message": "slow down"}}, status=429, headers={"retry-after-ms": "5"})
    with scripted(faulty(1, [limited, limited])) as server:
        report = run(server.url)
    assert episode(report, 1).faults == {"rate_limited": 2}
    assert episode(report, 1).reward == pytest.approx(0.3)  # the episode went on
    assert all(episode(report, p).faults == {} for p in (0, 2, 3))
    assert report.summaries[0].faults == {"rate_limited": 1}  # episodes touched


def test_a_server_error_past_the_retries_ends_its_episode_unscored_and_the_run_goes_on(run):
    broken = Answer({"error": {"message": "CUDA out of memory"}}, status=503)
    with scripted(faulty(0, [broken] * 3)) as server:
        report = run(server.url, endpoint={"max_retries": 2})
    failed = episode(report, 0)
    assert (failed.ended_by, failed.reward) == ("error", None)
    assert failed.faults == {"server_error": 3, "retries_exhausted": 1}
    assert failed.error == "gave up after 3 attempts; the last: HTTP 503: CUDA out of memory"
    summary = report.summaries[0]
    assert (summary.episodes, summary.failed, summary.reward.n) == (4, 1, 3)


def test_a_timeout_is_retried_and_counted(run):
    slow = Answer(completion("late"), delay=2.0)
    with scripted(faulty(2, [slow])) as server:
        report = run(server.url, endpoint={"timeout": 0.3})
    assert episode(report, 2).faults == {"timeout": 1}
    assert episode(report, 2).reward == pytest.approx(0.3)


def test_a_dropped_connection_is_retried_and_counted(run):
    with scripted(faulty(3, [Answer(drop=True)])) as server:
        report = run(server.url)
    assert episode(report, 3).faults == {"connection": 1}
    assert episode(report, 3).ended_by == "end_turn"


def test_an_empty_choice_list_is_asked_again_and_counted(run):
    with scripted(faulty(0, [Answer(completion(choices=[]))])) as server:
        report = run(server.url)
    assert episode(report, 0).faults == {"empty_choices": 1}
    assert episode(report, 0).turns == 2


def test_a_request_the_server_refuses_is_not_retried_and_ends_its_episode(run):
    refused = Answer({"error": {"message": "context length exceeded"}}, status=400)
    with scripted(faulty(1, [refused])) as server:
        report = run(server.url)
    failed = episode(report, 1)
    assert failed.error == "the server refused the request (HTTP 400: context length exceeded)"
    assert failed.faults == {"request_refused": 1}  # what ended it, among the faults the summary counts
    assert report.summaries[0].faults == {"request_refused": 1}
    assert sum(1 for body, _ in server.requests if body["seed"] == 1) == 1


def test_an_answer_that_is_not_a_chat_completion_ends_its_episode(run):
    with scripted(faulty(1, [Answer("<html>proxy error</html>")])) as server:
        report = run(server.url)
    assert episode(report, 1).ended_by == "error"
    assert str(episode(report, 1).error).startswith("the server's answer is not a chat completion (")


@pytest.mark.parametrize(
    ("listing", "problem"),
    [
        (Answer("<html>hello</html>", content_type="text/html"), "it answered text, not JSON: <html>hello</html>"),
        (Answer('{"data": [', content_type="application/json"), "its answer is not JSON: Expecting value"),
        (Answer({"data": "x"}), '"data" is not a list of models with ids'),
        (Answer({"data": [{"object": "model"}]}), '"data" is not a list of models with ids'),
        (Answer({"object": "list"}), '"data" is not a list of models with ids'),
    ],
)  # fmt: skip
def test_a_models_answer_that_is_no_model_list_is_an_endpoint_error_saying_what_to_check(
    run, listing, problem
):
    with scripted(toy_policy, listing=listing) as server, pytest.raises(EndpointError) as raised:
        run(server.url)
    message = str(raised.value)
    assert message.startswith(f"{server.url}/models did not return a model list (")
    assert problem in message
    assert message.endswith(
        "is --base-url the OpenAI-compatible API root (usually ending in /v1, e.g. http://127.0.0.1:8000/v1)? If the "
        "server has no model list, name the model with --model: it is then asked for without the listing"
    )
    assert not server.requests


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (Answer('{"choices": [', content_type="application/json"), "it is not JSON: Expecting value"),
        (Answer({"choices": [{"index": 0, "finish_reason": "stop"}]}), "its choice has no message"),
        (Answer({"choices": "x"}), "it has no choices list"),
    ],
)
def test_an_answer_that_is_no_chat_completion_is_the_servers_fault_not_the_environments(run, answer, problem):
    with scripted(faulty(1, [answer])) as server:
        report = run(server.url)
    failed = episode(report, 1)
    assert failed.ended_by == "error"
    assert str(failed.error).startswith(f"the server's answer is not a chat completion ({problem}")
    assert failed.faults == {"not_a_completion": 1}
    assert report.summaries[0].faults == {"not_a_completion": 1}


KEY = "sk-SECRETKEY123456"


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> str:
    """The API key's variable set, as a user with a real key has it."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


def test_the_model_ids_a_server_lists_are_scrubbed_wherever_they_are_shown(run, keyed):
    listed = (f"a-{KEY}", f"b-{KEY}")
    with scripted(toy_policy, models=listed) as server:
        with pytest.raises(EndpointError) as raised:
            run(server.url)  # no --model: the listing names them in the error
        report = run(server.url, endpoint={"model": "c"}, episodes=1)  # a model it does not list: a note
    assert str(raised.value) == ("name the model with --model: the server lists 2 (a-[API key], b-[API key])")
    assert report.notes == ["the server does not list model 'c' (a-[API key], b-[API key])"]


def test_a_key_in_what_the_server_says_is_scrubbed_before_it_is_cut_short(run, keyed):
    said = Answer({"error": {"message": "x" * 285 + f" key {KEY}"}}, status=500)  # the key across the cut
    with scripted(toy_policy, listing=said) as server, pytest.raises(EndpointError) as raised:
        run(server.url)
    message = str(raised.value)
    assert "x key [API key]." in message and "sk-SECRET" not in message


def test_a_server_without_a_model_list_and_no_model_named_is_told_to_name_it(run):
    without = Answer({"error": {"message": "no route GET /v1/models"}}, status=404)
    with scripted(toy_policy, listing=without) as server, pytest.raises(EndpointError) as raised:
        run(server.url)
    assert str(raised.value).endswith(
        "unless the server has no model list. If the server has no model list, name the model with --model: it is "
        "then asked for without the listing"
    )


def escaped(text: str) -> str:
    return "".join(f"\\u{ord(character):04x}" for character in text)


@pytest.mark.parametrize(
    ("raw", "scrubbed"),
    [
        (r'{"hours": "\u0073k-SECRETKEY123456', r'{"hours": "[API key]'),  # cut off at max_tokens: no JSON
        (r'{"hours": "\u0073k-SECRETKEY123456\q"}', r'{"hours": "[API key]\q"}'),  # an escape JSON has not
        ('{"hours": "' + escaped(KEY) + '"}', '{"hours": "[API key]"}'),  # every character escaped
        (
            r'{"hours": "s\u006B-SECRETKEY12345\u0036", "n": 1',
            r'{"hours": "[API key]", "n": 1',
        ),  # here and there
        (r'"{\"hours\": \"\\u0073k-SECRETKEY123456\"}"', r'"{\"hours\": \"[API key]\"}"'),  # escaped twice
        (
            r"note: \u0073\u006b\u002dSECRETKEY123456 and the rest",
            "note: [API key] and the rest",
        ),  # no JSON at all
    ],
    ids=["cut off", "bad escape", "all escaped", "mixed", "escaped twice", "text"],
)
def test_a_key_however_it_is_escaped_is_scrubbed_from_text_that_is_json_or_not_and_the_rest_kept(
    keyed, raw, scrubbed
):
    from agent_env.llm import ChatClient, Endpoint

    assert ChatClient(Endpoint()).scrub(raw) == scrubbed


def test_text_without_the_key_is_left_exactly_as_written(keyed):
    from agent_env.llm import ChatClient, Endpoint

    raw = '{"a": "\\u00e9\\q\\\\u0073k-other", "b": "sk-SECRETKEY12345"}'  # one character short of the key
    assert ChatClient(Endpoint()).scrub(raw) == raw


@pytest.mark.parametrize(
    ("key", "text", "scrubbed"),
    [
        ("x", "Excellent: fix it, x.", "Excellent: fix it, [API key]."),  # a placeholder cuts no word apart
        ("none", "none of it; key=none", "[API key] of it; key=[API key]"),
        ("none", '{"k": "\\u006eone", "w": "nonesuch"}', '{"k": "[API key]", "w": "nonesuch"}'),
        ("sk-0123456789abcdef", "Xsk-0123456789abcdefY", "X[API key]Y"),  # a key of 16 or more: anywhere
    ],
)
def test_a_short_key_is_cut_only_as_a_word_of_its_own_and_a_long_one_wherever_it_is(
    monkeypatch, key, text, scrubbed
):
    from agent_env.llm import ChatClient, Endpoint

    monkeypatch.setenv("OPENAI_API_KEY", key)
    assert ChatClient(Endpoint()).scrub(text) == scrubbed
