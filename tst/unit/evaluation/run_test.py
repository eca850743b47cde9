"""`agent_env/evaluation/_run.py` and `_arms.py`: the episodes a run plays, the tools each arm sends, and a report
that agrees with the environment's own rewards."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_env import AgentEnv, Environment, tool
from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.evaluation import Episode, plan, summarize
from agent_env.evaluation._arms import lossy_arm
from agent_env.evaluation._run import pass_notes
from agent_env.llm._client import TURN_SEED_STEP
from agent_env.training._render_check import plan_tools
from agent_env.training.families import family_of
from agent_env.training.templates import resolve_template
from testbed.scripted import Answer, call, completion, scripted, tool_results, toy_policy
from testbed.toy import MALFORMED, ToyDesk
from tst.support import trl_refusal_of
from tst.unit.server.running import running


def curves(count: int) -> dict[str, Any]:
    return {
        "curves": [{"hours": f"HE{hour:02d}", "points": [[0, 10], [50, 20]]} for hour in range(1, count + 1)]
    }


def by_position(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """Episode i submits i + 1 curves, then ends its turn: each earns a reward of its own."""
    if tool_results(body):
        return Answer(completion(tool_calls=[call("end_turn", {})]))
    return Answer(completion(tool_calls=[call("submit_offers", curves(body["seed"] + 1))]))


def own_reward(env: AgentEnv, row: dict[str, Any], arguments: dict[str, Any]) -> float:
    with env.open() as session:
        session.reset(**row)
        session.call_tool("submit_offers", arguments)
        return session.reward()


def test_the_file_and_the_summary_agree_with_the_environments_own_rewards(run, toy, tmp_path):
    with scripted(by_position) as server:
        report = run(server.url)
    rows = toy.provider.dataset_rows("test")
    written = {
        line["episode"]: line
        for line in map(json.loads, (tmp_path / "run.jsonl").read_text().splitlines()[1:])
        if line["type"] == "episode"
    }
    expected = {f"test/{i}": own_reward(toy, rows[i], curves(i + 1)) for i in range(4)}
    assert {key: line["reward"] for key, line in written.items()} == pytest.approx(expected)
    assert len(set(expected.values())) == 4  # four different rewards, so a mix-up would show
    assert report.summaries[0].reward.value == pytest.approx(sum(expected.values()) / 4)
    assert report.to_json()["summaries"][0]["reward"]["value"] == pytest.approx(sum(expected.values()) / 4)


def test_the_lossy_arm_sends_what_plain_trl_shows_and_its_calls_are_still_held_to_the_published_ones(
    run, toy, tmp_path
):
    def script(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if tool_results(body):
            return Answer(completion("Done."))
        return Answer(completion(tool_calls=[call("submit_offers", MALFORMED)]))

    with scripted(script) as server:
        report = run(server.url, episodes=2, compare_with="lossy")
    lossy = lossy_arm(toy).tools
    published = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                   "parameters": t.input_schema}} for t in ToyDesk.tools.values()]  # fmt: skip
    sent = [body["tools"] for body, _ in server.requests]  # 2 episodes, 2 arms, 2 replies each
    assert sorted(map(json.dumps, sent)) == sorted(
        map(json.dumps, [lossy] * 4 + [sorted(published, key=_name)] * 4)
    )
    submit = next(t for t in lossy if t["function"]["name"] == "submit_offers")
    # a pydantic model reaches TRL as an array of bare objects: rendered so (transformers < 5.23), or refused and
    # sent in that nearest form (5.23 and later), and then the run says so
    assert submit["function"]["parameters"]["properties"]["curves"]["items"] == {"type": "object"}
    refusal = trl_refusal_of(ToyDesk, "submit_offers")
    assert list(report.unrenderable) == ([] if refusal is None else ["submit_offers"])
    if refusal is not None:
        assert refusal.startswith(report.unrenderable["submit_offers"])
    header = json.loads(next(iter((tmp_path / "run.jsonl").read_text().splitlines())))
    arms = {arm["name"]: arm for arm in header["arms"]}
    assert "unrenderable" not in arms["full"]
    assert arms["lossy"].get("unrenderable", {}) == report.unrenderable  # the file says so too, per tool
    refusals = {tool_results(body)[0] for body, _ in server.requests if tool_results(body)}
    assert len(refusals) == 1 and "curves[0].points[1]: [100] has less than 2 items" in refusals.pop()
    comparison = report.comparison
    assert comparison is not None and comparison.pairs == 2
    seeds = {
        (body["seed"] % TURN_SEED_STEP, json.dumps(body["tools"]) == json.dumps(lossy))
        for body, _ in server.requests
    }
    assert seeds == {(0, True), (0, False), (1, True), (1, False)}  # the same seeds in both arms


def _name(tool: dict[str, Any]) -> str:
    return tool["function"]["name"]


def test_a_named_template_sends_the_tools_as_the_factory_lowers_them(run):
    desk = AgentEnv.local("gridsim-desk")
    with scripted(lambda body, headers: Answer(completion("No trades today."))) as server:
        report = run(server.url, env=desk, episodes=1, template="gemma4")
    template = resolve_template("gemma4")
    lowered = [
        plan.shown for plan in plan_tools(template, GridSimDesk.tools.published, family_of(template.text))
    ]
    sent = {tool["function"]["name"]: tool["function"] for tool in server.requests[0][0]["tools"]}
    for shown in lowered:
        assert sent[shown["name"]]["parameters"] == shown["inputSchema"]
        assert sent[shown["name"]]["description"] == shown["description"]
    published = {tool["name"]: tool for tool in GridSimDesk.tools.published}
    assert sent["submit_dam_offers"]["parameters"] != published["submit_dam_offers"]["inputSchema"]
    assert report.arms == [
        ("full", "published schemas, lowered for gemma4 as env.factory builds them for template gemma4")
    ]


def test_episodes_past_the_splits_rows_cycle_with_new_ids_and_seeds(toy):
    tasks = plan(toy.provider, "test", 6)
    assert [task.id for task in tasks] == ["test/0", "test/1", "test/2", "test/3", "test/0#1", "test/1#1"]
    assert [task.row["task"] for task in tasks] == [
        "test-0",
        "test-1",
        "test-2",
        "test-3",
        "test-0",
        "test-1",
    ]
    desk = AgentEnv.local("gridsim-desk")
    assert [task.id for task in plan(desk.provider, "test", 2)] == ["desk-v4/test/0000", "desk-v4/test/0001"]


class NoDataset(Environment):
    def reset(self, **row: Any) -> str:
        return "Look around, then end your turn."

    def reward(self) -> float:
        return 1.0

    @tool
    def look(self) -> str:
        """Look around."""
        return "a room"


def test_an_environment_without_a_dataset_plays_the_episodes_asked_for_from_its_observation(run):
    with pytest.raises(
        LookupError, match="NoDataset has no dataset rows for split 'test': say how many episodes"
    ):
        plan(AgentEnv.local(NoDataset).provider, "test", None)
    with scripted(lambda body, headers: Answer(completion("Nothing to do."))) as server:
        report = run(server.url, env=AgentEnv.local(NoDataset), episodes=2)
    assert sorted(e.episode for e in report.episodes) == ["episode-0", "episode-1"]
    assert server.requests[0][0]["messages"] == [
        {"role": "user", "content": "Look around, then end your turn."}
    ]


def test_a_served_environment_is_evaluated_through_its_remote_sessions(run):
    from agent_env.server import build_app

    with running(build_app(ToyDesk)) as url, scripted(toy_policy) as server:
        report = run(server.url, env=AgentEnv.connect(url), episodes=2)
    assert [e.reward for e in report.episodes] == [pytest.approx(0.3)] * 2


def test_at_most_concurrency_episodes_are_in_flight(run):
    with scripted(lambda body, headers: Answer(completion("done"), delay=0.3)) as server:
        run(server.url, episodes=5, concurrency=2)
    assert server.most_in_flight == 2
    assert len(server.requests) == 5


@pytest.mark.parametrize(("option", "value"), [("episodes", 0), ("concurrency", 0), ("max_turns", 0)])
def test_counts_below_one_are_refused(run, option, value):
    with pytest.raises(ValueError, match=f"{option} must be at least 1; got 0"):
        run("http://127.0.0.1:9/v1", **{option: value})


def test_an_unknown_comparison_is_refused(run):
    with (
        scripted(toy_policy) as server,
        pytest.raises(LookupError, match="unknown comparison 'schemas'; --compare takes lossy"),
    ):
        run(server.url, compare_with="schemas")


def test_a_run_file_that_fails_stops_the_run_with_its_error_and_every_session_is_closed(run, monkeypatch):
    from agent_env.evaluation._records import RunFile
    from agent_env.session import LocalProvider

    opened: list[Any] = []
    real_open = LocalProvider.open

    def open_and_keep(self: LocalProvider) -> Any:
        session = real_open(self)
        opened.append(session)
        return session

    def full_disk(self: RunFile, episode: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(LocalProvider, "open", open_and_keep)
    monkeypatch.setattr(RunFile, "append", full_disk)
    slow = lambda body, headers: Answer(toy_policy(body).body, delay=0.05)  # noqa: E731  (episodes overlap)
    with scripted(slow) as server, pytest.raises(OSError, match="No space left on device"):
        run(server.url, concurrency=4, episodes=8)
    assert opened and all(session.state.name == "CLOSED" for session in opened)


def test_the_summary_says_where_pass_k_stops_below_the_trials_asked_and_why():
    def played(key: str, reward: float | None) -> Episode:
        return Episode(arm="full", episode=key, position=0, seed=0, task={}, reward=reward,
                       ended_by="error" if reward is None else "ended", error=None, turns=1, calls=[], faults={},
                       tokens=None, wall_time=0.0, transcript=[])  # fmt: skip

    lost_one = [played("a", 1.0), played("a#1", 1.0), played("a#2", 1.0), played("b", 1.0), played("b#1", None),
                played("b#2", 0.0)]  # fmt: skip
    [note] = pass_notes([summarize(lost_one, "full")], trials=3)
    assert note.startswith(
        "pass^k stops at k=2, below --trials 3: the task played least has only 2 scored plays"
    )
    assert pass_notes([summarize(lost_one[:3], "full")], trials=3) == []  # every task kept its plays
