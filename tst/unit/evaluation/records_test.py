"""`agent_env/evaluation/_records.py`: the run's JSONL file, written one whole line per episode, and `--resume`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_env.evaluation import RunFileError
from agent_env.llm._client import TURN_SEED_STEP
from testbed.scripted import Answer, scripted, toy_policy


def lines(path: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def episode_lines(path: Any) -> list[dict[str, Any]]:
    return [line for line in lines(path) if line["type"] == "episode"]


def failing(position: int) -> Any:
    def script(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if body["seed"] % TURN_SEED_STEP == position:
            return Answer({"error": {"message": "overloaded"}}, status=400)
        return toy_policy(body)

    return script


def test_the_file_holds_the_runs_settings_then_one_line_per_episode(run, tmp_path):
    with scripted(toy_policy) as server:
        run(server.url, episodes=3)
    header, *episodes, summary = lines(tmp_path / "run.jsonl")
    assert header["type"] == "run" and header["environment"] == "ToyDesk" and header["model"] == "scripted"
    assert summary["type"] == "summary" and summary["summaries"][0]["episodes"] == 3
    assert header["arms"][0]["name"] == "full" and header["api_key_env"] == "OPENAI_API_KEY"
    assert sorted(line["episode"] for line in episodes) == ["test/0", "test/1", "test/2"]
    assert all(line["type"] == "episode" and line["reward"] == pytest.approx(0.3) for line in episodes)


def test_a_file_that_holds_a_run_is_not_overwritten_without_resume(run, tmp_path):
    with scripted(toy_policy) as server:
        run(server.url, episodes=1)
        before = (tmp_path / "run.jsonl").read_text()
        with pytest.raises(
            RunFileError, match=r"run\.jsonl already holds a run: pass --resume to continue it, or name"
        ):
            run(server.url, episodes=1)
    assert (tmp_path / "run.jsonl").read_text() == before


def test_resume_plays_only_what_did_not_finish_and_sums_up_the_whole_run(run, tmp_path):
    with scripted(failing(1)) as server:
        first = run(server.url)
    assert first.summaries[0].failed == 1
    with scripted(toy_policy) as server:
        second = run(server.url, resume=True)
    assert {body["seed"] % TURN_SEED_STEP for body, _ in server.requests} == {
        1
    }  # the failed episode only, with its own seed
    assert (second.played, second.skipped) == (1, 3)
    summary = second.summaries[0]
    assert (summary.episodes, summary.failed, summary.reward.n) == (4, 0, 4)
    episodes = episode_lines(tmp_path / "run.jsonl")
    assert [line["ended_by"] for line in episodes if line["episode"] == "test/1"] == ["error", "end_turn"]
    # one summary, the last line, of the whole run: the first run's was dropped when the second resumed it
    written = lines(tmp_path / "run.jsonl")
    assert [line["type"] for line in written].count("summary") == 1 and written[-1]["type"] == "summary"
    assert (written[-1]["summaries"][0]["episodes"], written[-1]["summaries"][0]["failed"]) == (4, 0)
    assert written[-1]["played"] == 1 and written[-1]["skipped"] == 3


def test_resume_plays_again_an_episode_an_earlier_version_ended_as_agent_error(run, tmp_path):
    # Earlier versions scored 0 a reply with both text and calls under a user's protocol (`agent_error`); τ²-bench's
    # default plays on, so a resumed run plays such an episode again rather than keep a score by the old rule.
    with scripted(toy_policy) as server:
        run(server.url, episodes=2, concurrency=1)
        path = tmp_path / "run.jsonl"
        header, first, second, _ = lines(path)
        first.update(ended_by="agent_error", reward=0.0)
        path.write_text("".join(json.dumps(line) + "\n" for line in (header, first, second)))
        server.requests.clear()
        report = run(server.url, episodes=2, concurrency=1, resume=True)
    assert {body["seed"] % TURN_SEED_STEP for body, _ in server.requests} == {first["seed"]}
    assert (report.played, report.skipped) == (1, 1)
    assert report.summaries[0].ended_by == {"end_turn": 2}


def test_a_last_line_cut_short_by_a_kill_is_dropped_and_its_episode_played_again(run, tmp_path):
    with scripted(toy_policy) as server:
        run(server.url, episodes=2, concurrency=1)
        path = tmp_path / "run.jsonl"
        text = path.read_text()
        text = text[: text.rindex("\n", 0, len(text) - 1) + 1]  # killed, it wrote no summary
        cut = text[: text.rindex("\n", 0, len(text) - 1) + 40]  # the second episode's line, 40 bytes of it
        path.write_text(cut)
        server.requests.clear()
        report = run(server.url, episodes=2, concurrency=1, resume=True)
    assert {body["seed"] % TURN_SEED_STEP for body, _ in server.requests} == {1}
    assert report.skipped == 1
    assert [line["episode"] for line in episode_lines(path)] == ["test/0", "test/1"]


def test_resume_refuses_a_file_of_another_run_naming_what_differs(run, tmp_path):
    with scripted(toy_policy) as server:
        run(server.url, episodes=1)
        with pytest.raises(RunFileError) as raised:
            run(server.url, episodes=1, resume=True, max_turns=4, split="train")
    assert str(raised.value) == (
        f'{tmp_path / "run.jsonl"} holds a run with other settings (split "test" there, "train" here, max_turns 10 '
        "there, 4 here): resume it with the same ones, or name another --out"
    )


def test_resume_refuses_a_file_that_is_no_run(run, tmp_path):
    (tmp_path / "run.jsonl").write_text('{"hello": 1}\n')
    with scripted(toy_policy) as server, pytest.raises(RunFileError, match="is not an agent-env eval run"):
        run(server.url, resume=True)


def test_resume_names_the_part_of_a_setting_that_differs_not_its_first_characters(run, tmp_path):
    from agent_env.evaluation import Sampling

    with scripted(toy_policy) as server:
        run(server.url, episodes=1)
        with pytest.raises(RunFileError) as compared:
            run(server.url, episodes=1, resume=True, compare_with="lossy")
        with pytest.raises(RunFileError) as sampled:
            run(server.url, episodes=1, resume=True, sampling=Sampling(temperature=0.6))
    assert (
        'arms[1] absent there, {"name": "lossy", "shows": "TRL\'s own rendering of the environment\'s tool'
        in str(compared.value)
    )
    assert "(sampling.temperature null there, 0.6 here)" in str(sampled.value)


def test_a_finished_run_ends_with_its_summary_which_pass_k_can_be_read_from(run, tmp_path):
    with scripted(toy_policy) as server:
        report = run(server.url, episodes=2, trials=2)
    summary = lines(tmp_path / "run.jsonl")[-1]
    assert summary == json.loads(json.dumps({"type": "summary", **report.to_json()}))
    assert summary["summaries"][0]["pass_k"]["2"]["n"] == 2


def test_resuming_a_finished_run_replaces_its_summary(run, tmp_path):
    with scripted(toy_policy) as server:
        run(server.url, episodes=2)
        before = lines(tmp_path / "run.jsonl")
        run(server.url, episodes=2, resume=True)
    after = lines(tmp_path / "run.jsonl")
    assert after[:-1] == before[:-1] and [line["type"] for line in after].count("summary") == 1
    assert (after[-1]["played"], after[-1]["skipped"]) == (0, 2)
