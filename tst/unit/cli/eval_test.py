"""`agent-env eval` (`agent_env/cli/eval.py`, `agent_env/evaluation/_views.py`, `_plot.py`): the command as a user
runs it against the scripted server, and the API key it must never show."""

from __future__ import annotations

import inspect
import json
import logging
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_env.cli import app, eval_command
from agent_env.evaluation import DEFAULT_API_KEY_ENV, DEFAULT_BASE_URL, ChatClient, Endpoint
from testbed.scripted import Answer, call, completion, scripted, tool_results, toy_policy
from testbed.toy import ToyDesk
from tst.support import trl_refusal_of

SECRET = "sk-test-5ecret-key-that-must-never-show"
TOY = "testbed.toy:ToyDesk"


def invoke(*arguments: str, key: str | None = SECRET) -> Any:
    environment = {"COLUMNS": "240", "OPENAI_API_KEY": key}
    return CliRunner().invoke(app, ["eval", *arguments], env=environment)


def leaky(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """A server that echoes the key back: in a refusal for episode 0, in the model's text for episode 1."""
    if body["seed"] == 0:
        return Answer({"error": {"message": f"bad request from {headers['authorization']}"}}, status=400)
    if body["seed"] == 1 and len(body["messages"]) == 1:
        return Answer(completion(f"I was called with {headers['authorization']}; submitting.", tool_calls=[]))
    return toy_policy(body)


def test_the_api_key_is_sent_but_appears_in_no_output_file_log_or_repr(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    out, plot = tmp_path / "run.jsonl", tmp_path / "rewards.png"
    with scripted(leaky) as server:
        table = invoke(TOY, "--base-url", server.url, "--out", str(out), "--plot", str(plot))
        as_json = invoke(TOY, "--base-url", server.url, "--out", str(tmp_path / "b.jsonl"), "--json")
    assert table.exit_code == 0 and as_json.exit_code == 0, table.output + as_json.output
    assert {headers["authorization"] for _, headers in server.requests} == {f"Bearer {SECRET}"}
    written = out.read_text()
    assert "[API key]" in written  # the echoes were there, and were cut out
    everything = [table.stdout, table.stderr, as_json.stdout, as_json.stderr, written, caplog.text]
    everything += [(tmp_path / "b.jsonl").read_text(), repr(ChatClient(Endpoint(server.url)))]
    assert all(SECRET not in text for text in everything)
    assert SECRET.encode() not in plot.read_bytes()


def test_the_table_shows_each_arm_the_paired_differences_and_the_faults(tmp_path):
    with scripted(toy_policy) as server:
        result = invoke(
            TOY, "--base-url", server.url, "--out", str(tmp_path / "r.jsonl"), "--compare", "lossy"
        )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert (
        lines[0] == f"ToyDesk on scripted, split test: 4 episodes in each of 2 arms ({tmp_path / 'r.jsonl'})"
    )
    assert lines[1:3] == [
        "  full: published schemas",
        "  lossy: TRL's own rendering of the environment's tool methods (get_json_schema)",
    ]
    refusal = trl_refusal_of(
        ToyDesk, "submit_offers"
    )  # None before transformers 5.23, which renders its models
    if refusal is not None:
        assert lines[3].startswith(
            "  TRL cannot render 1 tool as written, so a plain TRL environment with it could not"
        )
        assert lines[4].startswith(
            f"    submit_offers: {refusal.partition(': ')[0]}: "
        )  # transformers' words
    else:
        assert not any("cannot render" in line for line in lines)
    reward = next(line for line in lines if line.startswith("mean reward [95% CI]"))
    assert reward.split("│")[1:] == [
        " 0.300 [0.300, 0.300] ",
        " 0.300 [0.300, 0.300] ",
        " +0.000 [+0.000, +0.000]",
    ]
    assert any(line.startswith("valid-call rate") and "100.0% (8/8)" in line for line in lines)
    assert "Paired over 4 episodes (same row, same seed in both arms)." in lines
    assert "Faults: none." in lines


def test_an_unreachable_endpoint_is_one_line_and_exit_2(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = invoke(TOY, "--base-url", f"http://127.0.0.1:{port}/v1", "--out", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"agent-env eval: cannot reach http://127.0.0.1:{port}/v1 (")
    assert len(result.stderr.splitlines()) == 1


def test_a_run_that_scores_no_episode_exits_1(tmp_path):
    refusing = Answer({"error": {"message": "model not found"}}, status=404)
    with scripted(lambda body, headers: refusing) as server:
        result = invoke(TOY, "--base-url", server.url, "--out", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 1
    assert "agent-env eval: no episode ran to a reward; see the faults" in result.stderr
    assert any(
        line.startswith("failed (not scored)") and line.rstrip().endswith("4")
        for line in result.stdout.splitlines()
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--extra-body", "[1]"], "agent-env eval: --extra-body must be a JSON object; got [1]"),
        (["--compare", "schemas"], "agent-env eval: unknown comparison 'schemas'; --compare takes lossy"),
    ],
)
def test_bad_options_are_one_line_on_stderr(tmp_path, arguments, message):
    with scripted(toy_policy) as server:
        result = invoke(TOY, "--base-url", server.url, "--out", str(tmp_path / "r.jsonl"), *arguments)
    assert result.exit_code == 2
    assert result.stderr.strip() == message


def test_the_commands_defaults_are_the_libraries():
    defaults = {
        name: parameter.default for name, parameter in inspect.signature(eval_command).parameters.items()
    }
    assert (defaults["base_url"], defaults["api_key_env"]) == (DEFAULT_BASE_URL, DEFAULT_API_KEY_ENV)
    assert defaults["out"] == Path(json.loads('"eval.jsonl"'))


VLLM_400 = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'


def test_failed_episodes_are_counted_among_the_faults_and_the_first_error_is_shown(tmp_path):
    refusing = Answer({"error": {"message": VLLM_400}}, status=400)
    with scripted(lambda body, headers: refusing) as server:
        table = invoke(TOY, "--base-url", server.url, "--out", str(tmp_path / "a.jsonl"), "--episodes", "2")
        as_json = invoke(
            TOY, "--base-url", server.url, "--out", str(tmp_path / "b.jsonl"), "--episodes", "2", "--json"
        )
    assert table.exit_code == 1 and as_json.exit_code == 1
    lines = table.stdout.splitlines()
    assert "Faults: none." not in lines
    assert any(line.startswith("request_refused") and line.rstrip().endswith("2 of 2") for line in lines)
    assert lines[-1] == f"  2 episodes: the server refused the request (HTTP 400: {VLLM_400})"
    assert lines[-2].startswith("Why episodes failed (the first distinct errors; each episode's is in ")
    summary = json.loads(as_json.stdout)["summaries"][0]
    assert summary["faults"] == {"request_refused": 2}
    assert summary["errors"] == {f"the server refused the request (HTTP 400: {VLLM_400})": 2}


def test_a_placeholder_key_is_cut_from_the_servers_text_only_and_the_run_resumes(tmp_path):
    out = tmp_path / "r.jsonl"

    def echoing(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if len(body["messages"]) == 1:  # the model repeats the key (a word, here) in its text
            return Answer(completion("A test of the key test.", tool_calls=toy_policy(body).body["choices"][0]
                                     ["message"]["tool_calls"]))  # fmt: skip
        return toy_policy(body)

    with scripted(echoing) as server:
        first = invoke(TOY, "--base-url", server.url, "--out", str(out), "--episodes", "2", key="test")
        resumed = invoke(TOY, "--base-url", server.url, "--out", str(out), "--episodes", "3", "--resume", key="test")  # fmt: skip
    assert first.exit_code == 0 and resumed.exit_code == 0, first.output + resumed.output
    header, *episodes, _ = (json.loads(line) for line in out.read_text().splitlines())
    assert header["split"] == "test"
    assert sorted(line["episode"] for line in episodes[:2]) == ["test/0", "test/1"]  # as each finished
    assert episodes[2]["episode"] == "test/2"  # the one the resumed run played, after them
    episodes.sort(key=lambda line: line["episode"])
    assert episodes[0]["task"] == {"task": "test-0"}
    assert episodes[0]["transcript"][0]["content"].startswith("Trade.\n\nTask test-0:")  # the environment's
    assert episodes[0]["transcript"][1]["content"] == "A [API key] of the key [API key]."  # the server's
    played = next(line for line in resumed.stdout.splitlines() if line.startswith("This invocation"))
    assert played.startswith("This invocation played 1 episode (")
    assert played.endswith("; 2 were already finished in the file.")


def test_the_recovery_rate_says_it_counts_every_failed_call_as_the_readme_does(tmp_path):
    from testbed.scripted import call, tool_results
    from testbed.toy import MALFORMED, VALID

    def recovering(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        arguments = [MALFORMED, VALID][min(len(tool_results(body)), 1)]
        if len(tool_results(body)) < 2:
            return Answer(completion(tool_calls=[call("submit_offers", arguments)]))
        return Answer(completion("Done."))

    with scripted(recovering) as server:
        result = invoke(TOY, "--base-url", server.url, "--out", str(tmp_path / "r.jsonl"), "--episodes", "1")
    rows = {line.split("│")[0].strip(): line.split("│")[1].strip() for line in result.stdout.splitlines() if "│" in line}  # fmt: skip
    assert rows["refused by the environment"] == "0"
    assert rows["recovery rate (failed calls)"] == "100.0% (1/1)"
    from tst.unit.evaluation.readme_test import SECTION

    assert "the recovery rate (of the failed calls to a tool that exists" in " ".join(SECTION.split())


@pytest.mark.parametrize(
    ("arguments", "option"),
    [
        (["--max-retries", "-1"], "--max-retries"),
        (["--timeout", "-1"], "--timeout"),
        (["--timeout", "0"], "--timeout"),
        (["--episodes", "0"], "--episodes"),
        (["--concurrency", "0"], "--concurrency"),
        (["--max-turns", "0"], "--max-turns"),
        (["--max-tokens", "0"], "--max-tokens"),
        (["--temperature", "-0.5"], "--temperature"),
        (["--top-p", "1.5"], "--top-p"),
        (["--call-timeout", "0"], "--call-timeout"),
        (["--episode-budget", "-3"], "--episode-budget"),
        (["--capacity-wait", "-1"], "--capacity-wait"),
    ],
)
def test_meaningless_numbers_are_refused_when_the_options_are_read_naming_the_option(arguments, option):
    result = invoke(TOY, "--base-url", "http://127.0.0.1:9/v1", *arguments)  # nothing listens: never reached
    assert result.exit_code == 2
    assert f"Invalid value for '{option}'" in result.stderr
    assert "cannot reach" not in result.stderr


def test_the_call_timeout_and_the_episode_budget_bound_an_environment_in_this_process(tmp_path):
    def hangs(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        return Answer(completion(tool_calls=[call("hang", {})] if not tool_results(body) else None))

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "Task 0: count.", "release": str(tmp_path / "release")}) + "\n")
    with scripted(hangs) as server:
        result = invoke(
            "testbed.stuck:StuckDesk", "--base-url", server.url, "--rows", str(rows), "--out",
            str(tmp_path / "r.jsonl"), "--call-timeout", "0.3", "--episode-budget", "5", "--json",
        )  # fmt: skip
    (tmp_path / "release").touch()
    assert result.exit_code == 1, result.output  # no episode was scored
    *_, episode, summary = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert summary["type"] == "summary"
    assert (episode["ended_by"], episode["faults"]) == ("error", {"call_timeout": 1})
    assert "did not finish within its call timeout of 0.3 s" in episode["transcript"][-1]["content"]


def test_a_served_environments_deadlines_are_its_servers_and_refused_here():
    result = invoke("http://127.0.0.1:9", "--call-timeout", "5", "--episode-budget", "60")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "agent-env eval: http://127.0.0.1:9's server bounds its episodes' calls: give --call-timeout and "
        "--episode-budget to `agent-env serve` there"
    )
    local = invoke(TOY, "--capacity-wait", "5")
    assert local.exit_code == 2 and "--capacity-wait is for a served environment (a URL)" in local.stderr


def test_extra_body_that_is_not_json_names_the_option(tmp_path):
    result = invoke(TOY, "--base-url", "http://127.0.0.1:9/v1", "--extra-body", "{bad")
    assert result.exit_code == 2
    assert result.stderr.startswith("agent-env eval: --extra-body is not JSON (Expecting property name")
    assert result.stderr.strip().endswith("""give a JSON object, e.g. '{"top_k": 20}'""")


@pytest.mark.parametrize(
    ("plot", "message"),
    [
        ("missing/rewards.png", "agent-env eval: --plot cannot be written: {parent} is not a folder"),
        (
            "rewards.xyz",
            "agent-env eval: --plot rewards.xyz: matplotlib cannot write .xyz files; name one of",
        ),
    ],
)
def test_a_plot_that_cannot_be_written_is_refused_before_any_episode(tmp_path, plot, message):
    path = tmp_path / plot
    with scripted(toy_policy) as server:
        result = invoke(
            TOY, "--base-url", server.url, "--out", str(tmp_path / "r.jsonl"), "--plot", str(path)
        )
    assert result.exit_code == 2
    assert result.stderr.startswith(message.format(parent=path.parent).replace("rewards.xyz", str(path)))
    assert not server.requests and not (tmp_path / "r.jsonl").exists()


def test_a_plot_is_written_in_the_format_its_suffix_names(tmp_path):
    with scripted(toy_policy) as server:
        result = invoke(TOY, "--base-url", server.url, "--out", str(tmp_path / "r.jsonl"), "--episodes", "1",
                        "--plot", str(tmp_path / "rewards.pdf"))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rewards.pdf").read_bytes().startswith(b"%PDF")
    assert result.stdout.splitlines()[0].endswith(f"split test: 1 episode ({tmp_path / 'r.jsonl'})")


def test_tau2_runs_the_official_protocol_with_the_users_own_endpoint_and_pass_k(tmp_path):
    from tst.unit.evaluation.user_protocol_test import CREATE, user_that_stops

    def agent(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        done = any(message["role"] == "tool" for message in body["messages"])
        return Answer(completion("The task is created.") if done else completion(tool_calls=[CREATE]))

    out = tmp_path / "tau2.jsonl"
    with scripted(agent) as model, scripted(user_that_stops, models=("user-sim",)) as user:
        result = invoke(
            "tau2-mock", "--split", "base", "--episodes", "1", "--trials", "3", "--base-url", model.url,
            "--user-base-url", user.url, "--user-model", "user-sim", "--user-api-key-env", "USER_KEY",
            "--out", str(out),
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "pass^3 (tasks)" in result.stdout and "ended 3" in result.stdout
    assert {body["model"] for body, _ in user.requests} == {"user-sim"}
    episodes = [json.loads(line) for line in out.read_text().splitlines()][1:-1]
    assert [episode["reward"] for episode in episodes] == [1.0, 1.0, 1.0]
    assert episodes[0]["breakdown"]["ended"] == "the user ended the conversation"


def test_user_options_for_an_environment_without_a_user_are_refused(tmp_path):
    result = invoke(TOY, "--user-base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "x.jsonl"))
    assert result.exit_code == 2
    assert "has no simulated user (it publishes no message_user tool)" in result.output


def escaped(text: str) -> str:
    """`text` with every character written as a JSON `\\uXXXX` escape."""
    return "".join(f"\\u{ord(character):04x}" for character in text)


def test_a_model_id_the_server_lists_and_an_escaped_key_in_raw_arguments_are_scrubbed(tmp_path):
    listed = (
        f"{SECRET}-served"  # a server that names its model after the key (absurd, but what it wrote shows)
    )

    def escaping(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if tool_results(body):
            return Answer(completion("Done."))
        raw = '{"text": "' + escaped(SECRET) + '"}'  # the key in the raw arguments, every character escaped
        return Answer(completion(tool_calls=[call("write_note", raw)]))

    out = tmp_path / "run.jsonl"
    with scripted(escaping, models=(listed,)) as server:
        result = invoke(TOY, "--base-url", server.url, "--out", str(out), "--episodes", "1")
    assert result.exit_code == 0, result.output
    assert {body["model"] for body, _ in server.requests} == {listed}  # asked for as the server names it
    written = out.read_text()
    header, line, _ = (json.loads(text) for text in written.splitlines())
    assert header["model"] == "[API key]-served"
    assert json.loads(line["calls"][0]["arguments"]) == {"text": "[API key]"}
    for text in (written, result.stdout, result.stderr):
        assert SECRET not in text and escaped(SECRET) not in text and escaped(SECRET[:4]) not in text


@pytest.mark.parametrize(
    "raw",
    [
        '{"text": "\\u0073' + SECRET[1:],  # cut off at max_tokens: no JSON
        '{"text": "\\u0073' + SECRET[1:] + '\\q"}',  # an escape JSON has not: no JSON
    ],
    ids=["cut off", "bad escape"],
)
def test_an_escaped_key_in_raw_arguments_that_are_no_json_is_scrubbed_from_the_file_and_the_output(
    tmp_path, raw
):
    def escaping(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if tool_results(body):
            return Answer(completion("Done."))
        return Answer(completion(tool_calls=[call("write_note", raw)]))

    out = tmp_path / "run.jsonl"
    with scripted(escaping) as server:
        result = invoke(TOY, "--base-url", server.url, "--out", str(out), "--episodes", "1")
    assert result.exit_code == 0, result.output
    written = out.read_text()
    _, line, _ = (json.loads(text) for text in written.splitlines())
    assert line["calls"][0]["arguments"] == raw.replace("\\u0073" + SECRET[1:], "[API key]")
    assert line["calls"][0]["verdict"] == "not_json"
    for text in (written, result.stdout, result.stderr):
        assert SECRET[1:] not in text


def test_a_key_in_the_keys_of_arguments_a_server_parsed_is_scrubbed(tmp_path):
    parsed = {
        "id": "call-1",
        "type": "function",
        "function": {"name": "write_note", "arguments": {SECRET: "x"}},
    }

    def parsing(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        return Answer(
            completion("Done." if tool_results(body) else None, None if tool_results(body) else [parsed])
        )

    out = tmp_path / "run.jsonl"
    with scripted(parsing) as server:
        result = invoke(TOY, "--base-url", server.url, "--out", str(out), "--episodes", "1")
    assert result.exit_code == 0, result.output
    written = out.read_text()
    assert json.loads(written.splitlines()[1])["calls"][0]["arguments"] == {"[API key]": "x"}
    assert SECRET not in written and SECRET not in result.stdout


def test_a_server_without_a_model_list_is_evaluated_when_the_model_is_named_and_the_run_says_so(tmp_path):
    without = Answer({"error": {"message": "no route GET /v1/models"}}, status=404)
    with scripted(toy_policy, listing=without) as server:
        unnamed = invoke(TOY, "--base-url", server.url, "--out", str(tmp_path / "a.jsonl"))
        named = invoke(TOY, "--base-url", server.url, "--out", str(tmp_path / "b.jsonl"), "--model", "toy-7b")
    assert unnamed.exit_code == 2 and "/models was not found (HTTP 404)" in unnamed.stderr
    assert named.exit_code == 0, named.output
    assert "ToyDesk on toy-7b, split test: 4 episodes" in named.stdout
    said = " ".join(named.stdout.split())
    assert "/models was not found (HTTP 404)" in said
    assert "the listing was skipped and --model 'toy-7b' asked for as named" in said
    assert {body["model"] for body, _ in server.requests} == {"toy-7b"}


def test_rows_from_a_file_start_the_episodes_instead_of_a_splits(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"prompt": "Trade now.", "task": "a"}\n\n{"prompt": "Trade later.", "task_id": "t-b"}\n')
    out = tmp_path / "run.jsonl"
    with scripted(toy_policy) as server:
        result = invoke(TOY, "--base-url", server.url, "--out", str(out), "--rows", str(rows))
    assert result.exit_code == 0, result.output
    header, *episodes, _ = (json.loads(text) for text in out.read_text().splitlines())
    assert header["split"] is None and header["rows"]["count"] == 2
    # written as each ends (episodes run at once): in either order
    assert sorted((line["episode"], line["task"]) for line in episodes) == [
        ("rows/0", {"task": "a"}),
        ("t-b", {"task_id": "t-b"}),
    ]
    openings = {
        request[0]["messages"][0]["content"].split("\n")[0]: request[0] for request in server.requests
    }
    first = openings["Trade now."]["messages"][0]
    assert first["role"] == "user" and first["content"].startswith("Trade now.\n\nTask a: submit offers")


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (
            '{"prompt": "a"}\nnot json\n',
            "rows.jsonl, line 2: not JSON (Expecting value: line 1 column 1 (char 0))",
        ),
        ('["a"]', 'rows.jsonl, row 1 is "a", not a JSON object (a row, such as {"prompt": "..."})'),
        ("\n\n", "rows.jsonl holds no rows"),
    ],
)
def test_rows_that_are_no_rows_are_refused_naming_the_line(tmp_path, lines, said):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(lines)
    result = invoke(TOY, "--out", str(tmp_path / "run.jsonl"), "--rows", str(rows))
    assert result.exit_code == 2
    assert said in " ".join(result.stderr.split())


def test_a_split_and_rows_together_are_refused(tmp_path):
    result = invoke(TOY, "--split", "train", "--rows", str(tmp_path / "rows.jsonl"))
    assert result.exit_code == 2
    assert "name either --split or --rows" in result.stderr
