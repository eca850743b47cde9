"""`agent-env eval` on τ²-bench (`agent_env/cli/eval.py`): the --user-* and --judge-* options as a user gives them,
with or over `-c`, against scripted agent, user and judge servers; the default --max-turns; and what a run with
the scripted user writes and says."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_env import AgentEnv
from agent_env.cli import app
from agent_env.errors import SplitNotFoundError
from agent_env.evaluation._episode import DEFAULT_MAX_TURNS, USER_MAX_TURNS
from testbed.scripted import Answer, call, completion, scripted
from testbed.toy import ToyDesk
from tst.support import tau2_folder
from tst.unit.evaluation.user_protocol_test import CREATE, agent_that, user_that_stops


def invoke(*arguments: str, **variables: str) -> Any:
    return CliRunner().invoke(app, ["eval", *arguments], env={"COLUMNS": "240", **variables})


def creates_then_says_done(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    done = any(message["role"] == "tool" for message in body["messages"])
    return Answer(completion("The task is created.") if done else completion(tool_calls=[CREATE]))


@pytest.fixture
def judged_data(tmp_path: Path) -> Path:
    """The mock domain with update_task_1 scored DB x NL_ASSERTION (a copy: the pinned files stay as they are)."""
    tau2_folder(tmp_path / "data", "mock")
    tasks_file = tmp_path / "data" / "mock" / "tasks.json"
    tasks = json.loads(tasks_file.read_text())
    for task in tasks:
        if task["id"] == "update_task_1":
            task["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
            task["evaluation_criteria"]["nl_assertions"] = ["The agent marked the task completed"]
    tasks_file.write_text(json.dumps(tasks))
    return tmp_path / "data"


def test_the_judge_options_name_the_judges_endpoint_model_and_key(tmp_path, judged_data):
    verdict = {"results": [{"expectedOutcome": "x", "reasoning": "It did.", "metExpectation": True}]}
    rows = tmp_path / "rows.jsonl"
    row = next(r for r in AgentEnv.local("tau2-mock").dataset("base") if r["task_id"] == "update_task_1")
    rows.write_text(json.dumps(dict(row)) + "\n")
    agent = agent_that(
        lambda body: Answer(completion(tool_calls=[call("update_task_status", {"task_id": "task_1",
                                                                               "status": "completed"})])),
        lambda body: Answer(completion("Done: task_1 is completed.")),
    )  # fmt: skip
    out = tmp_path / "run.jsonl"
    with (
        scripted(agent) as model,
        scripted(lambda body, headers: Answer(completion(json.dumps(verdict)))) as judge,
    ):
        result = invoke(
            "tau2-mock", "--rows", str(rows), "--base-url", model.url, "--out", str(out),
            "-c", f"data_dir={judged_data}", "--judge-base-url", judge.url, "--judge-model", "judge-7b",
            "--judge-api-key-env", "JUDGE_KEY", JUDGE_KEY="sk-judge",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    [episode] = [json.loads(line) for line in out.read_text().splitlines()][1:-1]
    assert episode["breakdown"]["parts"]["NL_ASSERTION"]["reward"] == 1.0
    assert episode["reward"] == 1.0 and episode["breakdown"]["official"] is True
    assert [(body["model"], headers["authorization"]) for body, headers in judge.requests] == [
        ("judge-7b", "Bearer sk-judge")
    ]


def test_user_options_go_over_the_keys_of_a_configured_user(tmp_path):
    out = tmp_path / "run.jsonl"
    with scripted(creates_then_says_done) as model, scripted(user_that_stops, models=("a", "b")) as user:
        settings = json.dumps({"base_url": user.url, "model": "a", "temperature": 0.7})
        result = invoke(
            "tau2-mock", "--split", "base", "--episodes", "1", "--base-url", model.url, "--out", str(out),
            "-c", f"user={settings}", "--user-model", "b",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    # the model the option names, the URL and temperature the configuration does
    assert {(body["model"], body["temperature"]) for body, _ in user.requests} == {("b", 0.7)}
    [episode] = [json.loads(line) for line in out.read_text().splitlines()][1:-1]
    assert episode["breakdown"]["user"]["model"] == "b" and episode["reward"] == 1.0


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--user-model", "gpt-4.1"],
         "agent-env eval: --user-model says how to ask the user's model but not where it is served: add "
         "--user-base-url (or base_url in -c user='{...}'); the agent's --base-url is never used for it"),
        (["--judge-model", "gpt-4.1", "--judge-api-key-env", "K"],
         "agent-env eval: --judge-model, --judge-api-key-env say how to ask the judge's model but not where it is "
         "served: add --judge-base-url (or base_url in -c judge='{...}'); the agent's --base-url is never used "
         "for it"),
        (["-c", "user=scripted", "--user-base-url", "http://127.0.0.1:9/v1"],
         "agent-env eval: --user-base-url names an endpoint's settings, but -c user=\"scripted\" names no endpoint "
         "to set them on: leave out one or the other, or give the settings as -c user='{\"base_url\": ...}'"),
        (["-c", 'user={"model": "gpt-4.1"}'],
         "agent-env eval: the user's settings name no base_url (given: model): say where its model is served, "
         "apart from the agent's, e.g. {'base_url': 'http://127.0.0.1:8001/v1', 'model': 'gpt-4.1'} (on the "
         "command line --user-base-url, or base_url in -c user='{...}')"),
    ],
)  # fmt: skip
def test_user_or_judge_settings_that_say_nowhere_to_ask_are_refused_before_any_episode(
    tmp_path, arguments, said
):
    with scripted(creates_then_says_done) as model:
        result = invoke("tau2-mock", "--base-url", model.url, "--out", str(tmp_path / "r.jsonl"), *arguments)
    assert result.exit_code == 2
    assert result.stderr.strip() == said
    assert model.requests == [] and not (tmp_path / "r.jsonl").exists()


def test_max_turns_defaults_to_the_user_protocols_and_the_help_says_so(tmp_path):
    help_text = " ".join(CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "240"}).stdout.split())
    assert f"Default: {USER_MAX_TURNS} for an environment with a simulated user" in help_text
    assert f"else {DEFAULT_MAX_TURNS}" in help_text
    with scripted(creates_then_says_done) as model:
        result = invoke("tau2-mock", "--split", "base", "--episodes", "1", "--base-url", model.url,
                        "--out", str(tmp_path / "u.jsonl"))  # fmt: skip
        toy = invoke("testbed.toy:ToyDesk", "--episodes", "1", "--base-url", model.url,
                     "--out", str(tmp_path / "t.jsonl"))  # fmt: skip
    assert result.exit_code == 0 and toy.exit_code in (0, 1), result.output + toy.output
    assert json.loads((tmp_path / "u.jsonl").read_text().splitlines()[0])["max_turns"] == USER_MAX_TURNS
    assert json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])["max_turns"] == DEFAULT_MAX_TURNS


def test_a_scripted_user_run_writes_its_settings_and_episodes_and_its_summary_says_whose_user(tmp_path):
    out = tmp_path / "run.jsonl"
    with scripted(creates_then_says_done) as model:
        result = invoke("tau2-mock", "--split", "base", "--episodes", "2", "--base-url", model.url,
                        "--out", str(out), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    header, *lines, _ = (json.loads(line) for line in out.read_text().splitlines())
    episodes = sorted(lines, key=lambda line: line["episode"])  # written as each finishes, 8 at once
    assert header["type"] == "run" and header["environment"] == "Tau2Mock"
    assert (header["split"], header["trials"], header["max_turns"]) == ("base", 1, USER_MAX_TURNS)
    assert header["base_url"] == model.url and header["model"] == "scripted"
    assert [arm["name"] for arm in header["arms"]] == ["full"]
    assert [episode["episode"] for episode in episodes] == [
        "create_task_1",
        "create_task_1_with_env_assertions",
    ]
    for episode in episodes:
        assert episode["type"] == "episode" and episode["ended_by"] == "ended"
        assert episode["breakdown"]["user"] == {"kind": "scripted", "script": "the scenario's"}
        assert episode["faults"] == {} and episode["breakdown"]["faults"] == {}
    report = json.loads(result.stdout)
    [summary] = report["summaries"]
    assert summary["episodes"] == 2 and summary["ended_by"] == {"ended": 2}
    assert [episode["reward"] for episode in episodes] == [1.0, 1.0]
    assert summary["pass_k"]["1"]["value"] == 1.0
    [note] = [note for note in report["notes"] if "the user is scripted" in note]
    assert note.endswith("give a user model (user=..., --user-base-url) for that (2 of 2 episodes)")


def test_failed_calls_that_reach_max_errors_end_the_episode_as_the_environment_ends_and_scores_it(tmp_path):
    # Every call fails (no such task); the third trips max_errors=3, which ends the episode from within: the run
    # stops there (three replies, not --max-turns), and the record keeps the environment's ending and its breakdown.
    missing = call("update_task_status", {"task_id": "task_999", "status": "completed"})
    out = tmp_path / "run.jsonl"
    with scripted(lambda body, headers: Answer(completion(tool_calls=[missing]))) as model:
        result = invoke(
            "tau2-mock", "--split", "base", "--episodes", "1", "--base-url", model.url, "--out", str(out),
            "--max-turns", "10", "-c", "max_errors=3",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    [episode] = [json.loads(line) for line in out.read_text().splitlines()][1:-1]
    assert (episode["ended_by"], episode["turns"], len(model.requests)) == ("ended", 3, 3)
    assert episode["ending"] == "3 calls failed, the most an episode allows (max_errors=3)"
    assert [call["verdict"] for call in episode["calls"]] == ["tool_error"] * 3
    assert episode["reward"] == 0.0
    assert episode["breakdown"]["ended"] == "the episode reached max_errors"
    assert episode["breakdown"]["scored"] is False


def test_a_reward_of_nothing_but_assertions_without_a_judge_is_no_score_but_an_error_naming_the_judge(
    tmp_path,
):
    tau2_folder(tmp_path / "data", "mock")
    tasks_file = tmp_path / "data" / "mock" / "tasks.json"
    tasks = json.loads(tasks_file.read_text())
    for task in tasks:
        if task["id"] == "create_task_1_nl_eval":
            task["evaluation_criteria"]["reward_basis"] = ["NL_ASSERTION"]
    tasks_file.write_text(json.dumps(tasks))
    rows = tmp_path / "rows.jsonl"
    row = next(
        r for r in AgentEnv.local("tau2-mock").dataset("base") if r["task_id"] == "create_task_1_nl_eval"
    )
    rows.write_text(json.dumps(dict(row)) + "\n")
    out = tmp_path / "run.jsonl"
    with scripted(creates_then_says_done) as model:
        result = invoke("tau2-mock", "--rows", str(rows), "--base-url", model.url, "--out", str(out),
                        "-c", f"data_dir={tmp_path / 'data'}")  # fmt: skip
    assert result.exit_code == 1, result.output  # no episode ran to a reward
    [episode] = [json.loads(line) for line in out.read_text().splitlines()][1:-1]
    assert episode["ended_by"] == "error" and episode["reward"] is None
    assert episode["error"].startswith("JudgeEndpointError at the reward (it could not be scored): ")
    assert "NL_ASSERTION needs a judge, but none was given" in episode["error"]
    assert episode["faults"] == {"judge_endpoint": 1}


def test_the_help_says_max_retries_and_timeout_are_the_agents_and_where_the_users_and_judges_are_set():
    help_text = " ".join(CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "2000"}).stdout.split())
    assert "Retries of a request to the agent's endpoint that met a 429" in help_text
    assert (
        "The simulated user's and the judge's retries are their own: -c user='{\"max_retries\": N}'"
        in help_text
    )
    assert "--timeout and --max-retries are the agent's endpoint's only" in help_text


class OnlyHeldOut(ToyDesk):
    """An environment whose one split is `held_out`, and which names none for evaluation."""

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        if split != "held_out":
            raise SplitNotFoundError(f"OnlyHeldOut has no split {split!r}", splits=["held_out"])
        return super().dataset_rows(split)


def test_without_a_split_an_environment_without_a_test_split_plays_its_first_and_says_so(tmp_path, caplog):
    out = tmp_path / "run.jsonl"
    with scripted(creates_then_says_done) as model:
        with caplog.at_level(logging.WARNING, logger="agent_env"):  # a warning: stderr under the command
            result = invoke(
                f"{__name__}:OnlyHeldOut", "--episodes", "1", "--base-url", model.url, "--out", str(out)
            )
            mock = invoke(
                "tau2-mock", "--episodes", "1", "--base-url", model.url, "--out", str(tmp_path / "m")
            )
        refused = invoke(
            "tau2-mock", "--split", "test", "--base-url", model.url, "--out", str(tmp_path / "t")
        )
    assert result.exit_code == 0 and mock.exit_code == 0, result.output + mock.output
    assert json.loads(out.read_text().splitlines()[0])["split"] == "held_out"
    assert json.loads((tmp_path / "m").read_text().splitlines()[0])["split"] == "base"  # the one it names
    assert caplog.messages == [
        "agent_env: no split was named and OnlyHeldOut has no 'test' split: its first split, 'held_out', is used "
        "instead"
    ]
    assert refused.exit_code == 2  # a split named is played as named, or refused
    assert refused.stderr.strip() == "agent-env eval: τ²-bench mock has no split 'test'; its splits are base"


def test_a_telecom_run_plays_the_users_own_calls_inside_its_replies_and_scores_them(tmp_path):
    out = tmp_path / "run.jsonl"
    agent = agent_that(
        lambda body: Answer(completion("Please turn on data roaming on your phone.")),
        lambda body: Answer(completion("Is your mobile data working now?")),
    )
    with scripted(agent) as model:
        result = invoke("tau2-telecom", "--split", "small", "--episodes", "1", "--base-url", model.url,
                        "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    header, episode = (json.loads(line) for line in out.read_text().splitlines()[:2])
    assert header["environment"] == "Tau2Telecom" and header["split"] == "small"
    assert episode["episode"] == "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]"
    assert episode["reward"] == 1.0 and episode["breakdown"]["basis"] == ["ENV_ASSERTION"]
    [db] = [check for check in episode["breakdown"]["checks"] if check["part"] == "DB"]
    assert db["basis"] is False  # computed, as upstream does, and not counted
    assert (
        "simulation_guidelines_tools.md" not in episode["breakdown"]["prompts_note"]
    )  # a scripted user: told none
    second = model.requests[1][0]["messages"]  # what the agent read: the user's words, never its calls
    assert second[-1]["role"] == "user" and second[-1]["content"].startswith(
        "Done. This is what it shows now:"
    )
    assert not any(message.get("tool_calls") for message in second)
    [made] = episode["breakdown"]["calls"]  # the record keeps what the agent never saw, for a replay to score
    assert [made[key] for key in ("requestor", "name", "arguments", "error")] == [
        "user",
        "toggle_roaming",
        {},
        False,
    ]
    assert made["result"].startswith("Data Roaming is now ON.")


def test_rows_built_with_the_scripted_users_opening_are_refused_when_a_model_plays_the_user(tmp_path):
    # The scripted opening would stand for the user's own, and the model would answer a conversation it never
    # opened: every episode is refused before the user is asked, saying how to build the rows.
    rows = tmp_path / "rows.jsonl"
    scripted_rows = AgentEnv.local("tau2-mock").dataset("base")
    rows.write_text("".join(json.dumps(dict(row)) + "\n" for row in list(scripted_rows)[:2]))
    out = tmp_path / "run.jsonl"
    with scripted(creates_then_says_done) as model, scripted(user_that_stops) as user:
        result = invoke("tau2-mock", "--rows", str(rows), "--base-url", model.url, "--out", str(out),
                        "--user-base-url", user.url)  # fmt: skip
    assert result.exit_code == 1, result.output
    episodes = [json.loads(line) for line in out.read_text().splitlines()][1:-1]
    assert [episode["ended_by"] for episode in episodes] == ["error", "error"]
    assert all("opens with the scripted user's words" in episode["error"] for episode in episodes)
    assert "Build the rows with this environment" in episodes[0]["error"]
    assert user.requests == [] and model.requests == []


def test_untold_eval_plays_tau2_benchs_default_split_in_process_and_served_and_test_elsewhere(tmp_path):
    from agent_env.envs.tau2.airline import Tau2Airline
    from agent_env.server.app import build_app
    from tst.unit.server.running import running

    base = AgentEnv.local("tau2-airline").dataset("base")[0]["task_id"]
    assert base not in {row["task_id"] for row in AgentEnv.local("tau2-airline").dataset("test")}

    def first_played(environment: str, name: str) -> tuple[str, str]:
        out = tmp_path / f"{name}.jsonl"
        result = invoke(environment, "--episodes", "1", "--max-turns", "2", "--base-url", model.url,
                        "--out", str(out))  # fmt: skip
        assert result.exit_code == 0, result.output
        header, episode, *_ = (json.loads(line) for line in out.read_text().splitlines())
        return header["split"], episode["episode"]

    say_hello = lambda body, headers: Answer(completion("Hello, how can I help?"))  # noqa: E731
    with scripted(say_hello) as model, running(build_app(Tau2Airline)) as url:
        assert first_played("tau2-airline", "local") == (
            "base",
            base,
        )  # the leaderboard's, as tau2-bench plays
        assert first_played(url, "served") == ("base", base)  # the server lists it with the tools
        assert first_played("testbed.toy:ToyDesk", "toy")[0] == "test"  # an environment that names none
