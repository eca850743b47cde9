"""`agent-env eval` against vLLM's own OpenAI-compatible server, parsing calls with its `hermes` tool-call parser: on
the GridSim desk, and on τ²-airline with vLLM playing both the agent and the simulated user.

The random model's replies are held by vLLM's structured outputs to the calls (and, on τ², the messages) given here,
sent as a user sends any other field (`--extra-body`); at temperature 0 each episode is the same on every run.
Everything else is as a user runs it: the command, the server's parser, the sessions, validation and scoring.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv
from testbed.forced_calls import DESK_CALLS, call, forced, literal, structured_outputs
from tst.vllm.rollouts import Call, replay

AGENT_ENV = str(Path(sys.executable).with_name("agent-env"))
TAU2_CALLS_ONLY = forced(
    [
        call("get_reservation_details", literal({"reservation_id": "EHGLP3"})),
        call("get_reservation_details", literal({"reservation": "EHGLP3"})),
        call("cancel_reservation", literal({"reservation_id": "EHGLP3"})),
    ]
)
TAU2_TEXT_ONLY = "Could you confirm that you want to cancel EHGLP3\\?"
TAU2_USER = "Yes, please cancel it\\."
UNREADABLE = forced([call("desk_brief", r'\{"hours": \[\}')])
"""A call whose JSON is broken (an array closed by a brace)."""


def run(*arguments: str) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """`agent-env eval ...`; its JSON report, and its file's first line (the run's settings) and episodes."""
    out = Path(arguments[arguments.index("--out") + 1])
    environment = {**os.environ, "COLUMNS": "200"}
    result = subprocess.run(
        [AGENT_ENV, "eval", *arguments, "--json"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    header, *lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert header["type"] == "run" and lines[-1]["type"] == "summary"  # a finished run ends with its summary
    return json.loads(result.stdout), header, [line for line in lines if line["type"] == "episode"]


def calls_of(episode: dict[str, Any]) -> list[Call]:
    """The calls an episode ran, with the text the model read back (its tool messages, in order)."""
    results = [message["content"] for message in episode["transcript"] if message["role"] == "tool"]
    ran = [entry for entry in episode["calls"] if entry["verdict"] != "not_json"]
    return [
        Call(entry["name"], json.loads(entry["arguments"]), result)
        for entry, result in zip(ran, results, strict=True)
    ]


def test_eval_plays_the_desk_with_the_calls_vllms_hermes_parser_returns(server_url, model, tmp_path):
    desk = AgentEnv.local("gridsim-desk")
    report, header, episodes = run(
        "gridsim-desk", "--base-url", f"{server_url}/v1", "--episodes", "2", "--max-turns", "3",
        "--max-tokens", "160", "--temperature", "0", "--extra-body", json.dumps(structured_outputs(DESK_CALLS)),
        "--out", str(tmp_path / "desk.jsonl"),
    )  # fmt: skip
    assert header["model"] == str(model)  # the one model vLLM lists: its folder
    rows = {row["task_id"]: row for row in desk.provider.dataset_rows("test")}
    for episode in episodes:
        assert episode["calls"] and all(
            entry["id"].startswith("chatcmpl-tool-") for entry in episode["calls"]
        )
        assert "unparsed_call" not in episode["faults"]
        calls = calls_of(episode)
        again = replay(desk, rows[episode["episode"]], calls)
        assert [
            entry.result for entry in calls
        ] == again.results  # what the model read is what a session says
        assert episode["reward"] == pytest.approx(again.reward)
    verdicts = report["summaries"][0]["verdicts"]
    assert sum(verdicts.values()) == sum(len(episode["calls"]) for episode in episodes)


def test_eval_plays_tau2_with_vllm_as_the_agent_and_as_the_user(server_url, model, tmp_path):
    """Two runs on τ²-airline's first task, vLLM's replies held to calls alone, then to a message alone: the user
    (vLLM too) opens each episode, then reads the agent's messages and answers each."""
    airline = AgentEnv.local("tau2-airline")
    row = airline.dataset("train")[0]
    user = {"base_url": f"{server_url}/v1", "max_tokens": 24, "extra_body": structured_outputs(TAU2_USER)}
    episodes = {}
    for name, pattern in (("calls", TAU2_CALLS_ONLY), ("text", TAU2_TEXT_ONLY)):
        _, header, (episodes[name],) = run(
            "tau2-airline", "--split", "train", "--episodes", "1", "--max-turns", "3", "--max-tokens", "64",
            "--temperature", "0", "--base-url", f"{server_url}/v1", "-c", f"user={json.dumps(user)}",
            "--extra-body", json.dumps(structured_outputs(pattern)), "--out", str(tmp_path / f"{name}.jsonl"),
        )  # fmt: skip
        assert header["model"] == str(model) and episodes[name]["episode"] == row["task_id"]

    calls = episodes["calls"]
    assert calls["ended_by"] == "max_turns" and len(calls["calls"]) == 3
    assert [m["content"] for m in calls["transcript"] if m["role"] == "user"] == ["Yes, please cancel it."]
    ran = calls_of(calls)
    assert [entry.result for entry in ran] == replay(airline, row, ran).results

    text = episodes["text"]
    assert text["calls"] == [] and text["ended_by"] == "max_turns"
    said = [(m["role"], m["content"]) for m in text["transcript"] if m["role"] in ("user", "assistant")]
    assert (
        said
        == [("user", "Yes, please cancel it.")]
        + [
            ("assistant", "Could you confirm that you want to cancel EHGLP3?"),
            ("user", "Yes, please cancel it."),
        ]
        * 3
    )


def test_a_call_whose_json_vllm_cannot_read_is_counted_as_the_models_not_as_a_server_that_ignores_tools(
    server_url, tmp_path
):
    """vLLM's hermes parser hands on only the calls it can read: a reply holding one whose JSON is broken comes back
    as text, with no call, and the episode ends on it (as a TRL rollout does, whose parser cannot read it either).
    eval counts it as the model's `unreadable_call`; it used to say the server ignored tools."""
    report, _, (episode,) = run(
        "gridsim-desk", "--base-url", f"{server_url}/v1", "--episodes", "1", "--max-turns", "2",
        "--max-tokens", "64", "--temperature", "0", "--extra-body", json.dumps(structured_outputs(UNREADABLE)),
        "--out", str(tmp_path / "unreadable.jsonl"),
    )  # fmt: skip
    assert (episode["calls"], episode["ended_by"], episode["faults"]) == (
        [],
        "no_tool_calls",
        {"unreadable_call": 1},
    )
    assert episode["transcript"][-1]["content"].startswith('<tool_call>\n{"name": "desk_brief"')
    assert report["notes"] == []
