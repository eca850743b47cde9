"""`agent-env eval` end to end against a real `transformers serve` process and the real GridSim desk.

The served model is a tiny Qwen3 fine-tuned on the CPU to answer the desk's first test prompts with a
`submit_dam_offers` call and an `end_turn` call in one reply (`tst/eval/caller.py`); the server parses them with
TRL's Qwen3 response template, the harness runs them through a desk session, and the desk scores the day.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv
from tst.eval.caller import SUBMISSION

SECRET = "sk-eval-e2e-0123456789abcdef"
AGENT_ENV = str(Path(sys.executable).with_name("agent-env"))


def command(url: str, out: Path, *arguments: str) -> list[str]:
    return [AGENT_ENV, "eval", "gridsim-desk", "--base-url", url, "--out", str(out), "--temperature", "0",
            "--max-tokens", "96", "--max-turns", "3", *arguments]  # fmt: skip


def environment() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": SECRET, "COLUMNS": "200", "OMP_NUM_THREADS": "1"}


def lines(path: Path) -> list[dict[str, Any]]:
    """The run's file, its settings then its episodes (the summary line that ends a finished run left out)."""
    found = [json.loads(line) for line in path.read_text().splitlines()]
    return [line for line in found if line["type"] != "summary"]


def desk_reward(desk: AgentEnv, row: dict[str, Any]) -> float:
    """The desk's own reward for the caller's submission on `row`, played in process."""
    with desk.open() as session:
        session.reset(**row)
        session.call_tool("submit_dam_offers", SUBMISSION)
        session.call_tool("end_turn", {})
        return session.reward()


def test_the_server_parses_the_models_calls_and_the_desk_runs_and_scores_them_in_both_arms(
    served_caller, caller, desk, rows, tmp_path
):
    out = tmp_path / "compare.jsonl"
    result = subprocess.run(
        command(served_caller, out, "--episodes", "2", "--compare", "lossy", "--json"),
        capture_output=True, text=True, env=environment(), timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    header, *episodes = lines(out)
    assert header["model"] == str(caller)  # the one model the server lists
    assert sorted((e["arm"], e["episode"]) for e in episodes) == [
        (arm, row["task_id"]) for arm in ("full", "lossy") for row in rows[:2]
    ]
    for episode in episodes:
        calls = episode["calls"]
        assert [(call["name"], call["verdict"]) for call in calls] == [
            ("submit_dam_offers", "accepted"),
            ("end_turn", "accepted"),
        ]
        assert all(
            "_tool_call_" in call["id"] for call in calls
        )  # ids transformers serve gives what it parsed
        assert json.loads(calls[0]["arguments"]) == SUBMISSION
        assert episode["transcript"][2]["content"] == "Booked 2 curves and 0 AS offers."  # the desk's answer
        assert (episode["ended_by"], episode["turns"], episode["faults"]) == (
            "end_turn",
            1,
            {"parallel_calls": 1},
        )
        row = next(row for row in rows if row["task_id"] == episode["episode"])
        assert episode["reward"] == pytest.approx(desk_reward(desk, row))
        assert episode["reward"] > 0

    report = json.loads(result.stdout)
    by_arm = {summary["arm"]: summary for summary in report["summaries"]}
    for arm, summary in by_arm.items():
        rewards = [e["reward"] for e in episodes if e["arm"] == arm]
        assert summary["reward"]["value"] == pytest.approx(sum(rewards) / len(rewards))
        assert summary["verdicts"] == {"accepted": 4}
    assert report["comparison"]["pairs"] == 2
    assert report["comparison"]["reward"]["value"] == pytest.approx(0)
    # The server counted the prompts it rendered: the full schemas cost more tokens than TRL's method schemas.
    assert by_arm["full"]["prompt_tokens_per_episode"] > by_arm["lossy"]["prompt_tokens_per_episode"] + 500
    assert report["comparison"]["prompt_tokens_per_episode"]["value"] > 500
    assert SECRET not in result.stdout + result.stderr + out.read_text()


def test_a_run_killed_mid_way_resumes_without_playing_its_finished_episodes_again(
    served_caller, rows, tmp_path
):
    out = tmp_path / "killed.jsonl"
    arguments = command(served_caller, out, "--episodes", "3", "--concurrency", "1")
    process = subprocess.Popen(
        arguments, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment()
    )
    deadline = time.monotonic() + 300
    while not (out.exists() and out.read_text().count("\n") >= 2):  # the settings and one episode
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        assert time.monotonic() < deadline, "no episode finished in 300 s"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = out.read_text()
    finished = [line["episode"] for line in lines(out)[1:]]
    assert 1 <= len(finished) < 3, "the kill came after the whole run: nothing is left to resume"

    result = subprocess.run(
        [*arguments, "--resume", "--json"], capture_output=True, text=True, env=environment(), timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert out.read_text().startswith(before)  # the finished episodes' lines are kept as they were
    played = [line["episode"] for line in lines(out)[1:]]
    assert sorted(played) == sorted(row["task_id"] for row in rows)  # each episode once: none played again
    report = json.loads(result.stdout)
    assert (report["skipped"], report["played"]) == (len(finished), 3 - len(finished))
    assert report["summaries"][0]["episodes"] == 3
