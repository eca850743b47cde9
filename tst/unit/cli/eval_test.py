"""`agent-env eval` (`agent_env/cli.py`, `agent_env/evaluation/_views.py`, `_plot.py`): the command as a user runs
it against the scripted server, and the API key it must never show."""

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
from tst.unit.evaluation.scripted import Answer, completion, scripted, toy_policy

SECRET = "sk-test-5ecret-key-that-must-never-show"
TOY = "tst.data.toy:ToyDesk"


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
    assert lines[1:3] == ["  full: published schemas", "  lossy: TRL's method schemas (get_json_schema)"]
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
        (["--episodes", "0"], "agent-env eval: episodes must be at least 1; got 0"),
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
