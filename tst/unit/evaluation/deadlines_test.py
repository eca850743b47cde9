"""An evaluation's episodes against calls out of time and a full server: the model reads a timeout as TRL would tell
it, the episode then ends unscored and counted by what ran out (`call_timeout`, `episode_budget`), and an episode that
finds no room waits for it, or ends unscored as `too_many_episodes`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.session import abandoned_calls
from testbed.scripted import Answer, call, completion, scripted, tool_results
from testbed.stuck import StuckDesk
from testbed.toy import ToyDesk
from tst.unit.server.running import running


def task_of(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"]).split(":")[0]


def stuck_policy(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """Task 0 hangs, task 1 naps until its budget runs out, task 2 counts and ends its turn."""
    task, results = task_of(body), tool_results(body)
    if task == "Task 0":
        return Answer(completion(tool_calls=[call("hang", {})]))
    if task == "Task 1":
        return Answer(completion(tool_calls=[call("nap", {"seconds": 0.3})]))
    return Answer(completion(tool_calls=[call("add" if not results else "end_turn", {})]))


@pytest.fixture
def release(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "release"
    yield str(path)
    path.touch()


def test_a_call_out_of_time_is_read_by_the_model_and_ends_its_episode_unscored_and_counted(run, release):
    env = AgentEnv.local(StuckDesk, call_timeout=0.4, episode_budget=0.75)
    rows = [{"prompt": f"Task {index}: count.", "release": release} for index in range(3)]
    with scripted(stuck_policy) as server:
        report = run(server.url, env=env, rows=rows, max_turns=6)
    hung, spent, counted = sorted(report.episodes, key=lambda episode: episode.position)
    assert (hung.ended_by, hung.reward, hung.faults) == ("error", None, {"call_timeout": 1})
    assert [call["verdict"] for call in hung.calls] == ["timeout"]
    assert hung.error == (
        "StuckDesk could not score it: tool 'hang' did not finish within its call timeout of 0.4 s; what it did is "
        "unknown, so the episode has ended"
    )
    assert (spent.ended_by, spent.reward, spent.faults) == ("error", None, {"episode_budget": 1})
    assert [call["verdict"] for call in spent.calls] == ["accepted", "accepted", "timeout"]
    assert (counted.ended_by, counted.reward) == ("end_turn", 1.0)
    said = [body for body, _ in server.requests if task_of(body) == "Task 0" and tool_results(body)]
    assert said == []  # the episode ended with the call: the model was asked nothing after it
    summary = report.summaries[0]
    assert summary.ended_by == {"end_turn": 1, "error": 2}
    assert eventually(
        lambda: abandoned_calls() == 1
    )  # the hang's thread, counted until it returns (the nap's
    Path(release).touch()  # returns within its 0.3 s)
    assert eventually(lambda: abandoned_calls() == 0)


def eventually(condition: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def slow_toy_policy(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """ToyDesk played well, slowly: each reply takes 0.2 s, so that the episodes overlap."""
    results = tool_results(body)
    step = (
        [call("battery_status", {})] if not results else [call("end_turn", {})] if len(results) == 1 else None
    )
    return Answer(completion(tool_calls=step) if step else completion("Done."), delay=0.2)


def test_more_episodes_at_once_than_the_server_holds_wait_for_room_and_all_are_scored(run):
    from agent_env.server.app import build_app

    app = build_app(ToyDesk, max_episodes=2)
    with running(app) as url, scripted(slow_toy_policy) as server:
        report = run(server.url, env=AgentEnv.connect(url), episodes=6, concurrency=6)
    assert server.most_in_flight >= 2
    assert [episode.ended_by for episode in report.episodes] == ["end_turn"] * 6
    assert all(episode.faults == {} for episode in report.episodes)


def test_an_episode_that_finds_no_room_in_time_ends_unscored_as_too_many_episodes(run):
    from agent_env.server.app import build_app

    app = build_app(ToyDesk, max_episodes=2)
    with running(app) as url, scripted(slow_toy_policy) as server:
        report = run(server.url, env=AgentEnv.connect(url, capacity_wait=0), episodes=4, concurrency=4)
    refused = [episode for episode in report.episodes if episode.ended_by == "error"]
    assert len(refused) == 2 and all(episode.faults == {"too_many_episodes": 1} for episode in refused)
    assert all("could not start it: the server already holds 2 live episodes" in e.error for e in refused)
    assert sorted(episode.ended_by for episode in report.episodes) == [
        "end_turn",
        "end_turn",
        "error",
        "error",
    ]
