"""`agent-env rollout` (`agent_env/inspection/rollout.py`, `plot.py`): baselines through the trainer's tools."""

from __future__ import annotations

import pytest

from agent_env import AgentEnv
from agent_env.envs.gridsim.baselines import BASELINES
from agent_env.envs.gridsim.bundle import load_bundle
from agent_env.envs.gridsim.scoring import score_plain_offers
from agent_env.inspection.rollout import rollout, summarize


def test_rollout_prints_a_table_of_every_policy_and_draws_the_best_one(invoke, tmp_path):
    plot = tmp_path / "day.png"
    result = invoke("rollout", "--episodes", "2", "--plot", str(plot))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any("Baseline policies on the test split" in line for line in lines)
    for policy in BASELINES:
        assert any(line.startswith(policy + " ") and " 2 " in line for line in lines), policy
    assert any(line.startswith("do_nothing") and "0.000" in line and "$0" in line for line in lines)
    assert "Drew desk-v4/test/0000 as played by arbitrage_with_as (reward " in result.stdout
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot.stat().st_size > 50_000  # five panels, not an empty canvas


def test_each_episode_is_scored_by_the_environment_as_its_offers_settle():
    env = AgentEnv.local("gridsim-desk")
    played = rollout(env, ["arbitrage"], split="test", episodes=2)
    bundle = load_bundle("desk-v4")
    for episode in played:
        entry = bundle.entry(episode.task_id)
        expected = score_plain_offers(episode.offers, entry.day, entry.bound, bundle.battery)
        assert episode.reward == pytest.approx(expected.reward)
    (summary,) = summarize(played)
    assert summary.mean_profit == pytest.approx(sum(e.settlement.profit for e in played) / 2)


def test_other_environments_have_no_policies(invoke):
    result = invoke("rollout", "testbed.toy:ToyDesk")
    assert result.exit_code == 2
    assert "agent-env rollout: no baseline policies exist for ToyDesk" in result.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--policy", "greedy"],
            "no baseline policy greedy; the desk has: all, do_nothing, arbitrage, arbitrage_with_as",
        ),
        (["--episodes", "0"], "split 'test' has 64 tasks; --episodes must be 1 to 64"),
        (["--split", "dev"], "bundle 'desk-v4' has no split 'dev'"),
    ],
)
def test_bad_options_are_one_line_on_stderr(invoke, arguments, message):
    result = invoke("rollout", *arguments)
    assert result.exit_code == 2
    assert message in result.stderr
