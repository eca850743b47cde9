"""`agent_env/evaluation/_stats.py`: intervals, paired differences, the sample size, and what a summary counts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from agent_env.evaluation import Episode, compare, pairs_needed, summarize
from agent_env.evaluation._stats import mean_estimate, paired_ratio_difference, recoveries


def episode(
    arm: str, key: str, reward: float | None, verdicts: list[tuple[str, str]] = (), **more: Any
) -> Episode:
    settings: dict[str, Any] = {
        "arm": arm, "episode": key, "position": int(key[1:]) if key[1:].isdigit() else 0, "seed": 0, "task": {}, "reward": reward,
        "ended_by": "end_turn" if reward is not None else "error", "error": None, "turns": 1,
        "calls": [{"name": name, "verdict": verdict} for name, verdict in verdicts], "faults": {}, "tokens": None,
        "wall_time": 0.0, "transcript": [],
    }  # fmt: skip
    return Episode(**{**settings, **more})


def test_the_mean_reward_interval_is_students_t():
    rewards = [0.1, 0.4, 0.35, 0.8, 0.0, 0.55]
    estimate = mean_estimate(rewards)
    expected = stats.ttest_1samp(rewards, 0).confidence_interval(0.95)
    assert (estimate.value, estimate.n) == (pytest.approx(np.mean(rewards)), 6)
    assert (estimate.low, estimate.high) == (pytest.approx(expected.low), pytest.approx(expected.high))


def test_an_interval_needs_two_episodes_and_equal_rewards_give_a_point():
    assert math.isnan(mean_estimate([0.5]).low)
    assert mean_estimate([0.5, 0.5]).high == 0.5


def test_the_difference_pairs_the_same_episode_of_both_arms_whatever_the_order():
    played = [
        episode("lossy", "e1", 0.2), episode("full", "e0", 0.9), episode("full", "e1", 0.5),
        episode("lossy", "e0", 0.4), episode("full", "e2", 1.0), episode("lossy", "e2", None),  # failed: no pair
        episode("full", "e3", 0.7),  # unpaired
    ]  # fmt: skip
    comparison = compare(played, "full", "lossy")
    assert comparison.pairs == 2
    assert comparison.reward.value == pytest.approx(((0.9 - 0.4) + (0.5 - 0.2)) / 2)
    assert comparison.reward_sd == pytest.approx(np.std([0.5, 0.3], ddof=1))


def test_the_valid_call_rate_difference_is_the_pooled_rates_with_a_paired_bootstrap_interval():
    rng = np.random.default_rng(1)
    calls_a, calls_b = rng.integers(1, 6, 40), rng.integers(1, 6, 40)
    valid_a, valid_b = rng.binomial(calls_a, 0.9), rng.binomial(calls_b, 0.6)
    estimate = paired_ratio_difference(valid_a, calls_a, valid_b, calls_b)
    assert estimate.value == pytest.approx(valid_a.sum() / calls_a.sum() - valid_b.sum() / calls_b.sum())
    assert estimate.low < estimate.value < estimate.high
    assert estimate.low > 0  # a 30-point gap over 40 episodes is clear
    assert (
        paired_ratio_difference(valid_a, calls_a, valid_b, calls_b) == estimate
    )  # seeded: the same each time


def test_pairs_needed_gives_the_power_it_promises():
    sd, difference = 0.3, 0.03
    n = pairs_needed(sd, difference)
    rng = np.random.default_rng(0)
    differences = rng.normal(difference, sd, size=(4000, n))
    power = (stats.ttest_1samp(differences, 0, axis=1).pvalue < 0.05).mean()
    assert power == pytest.approx(0.8, abs=0.025)


def test_a_refused_call_recovers_when_an_accepted_call_to_the_same_tool_follows():
    calls = [
        {"name": "submit", "verdict": "invalid_arguments"},
        {"name": "check", "verdict": "not_json"},  # never recovered
        {"name": "nope", "verdict": "unknown_tool"},  # no such tool: not counted
        {"name": "submit", "verdict": "accepted"},
        {"name": "check", "verdict": "tool_error"},
    ]
    assert recoveries(calls) == (1, 3)


def test_a_summary_scores_finished_episodes_counts_calls_and_the_episodes_each_fault_touched():
    played = [
        episode("full", "e0", 0.5, [("submit", "invalid_arguments"), ("submit", "accepted")], faults={"timeout": 2},
                tokens={"prompt": 100, "completion": 10}),
        episode("full", "e1", 0.0, [("submit", "not_json")], faults={"timeout": 1, "parallel_calls": 1},
                tokens={"prompt": 300, "completion": 30}),
        episode("full", "e2", None, [("submit", "accepted")], faults={"server_error": 4}),
        episode("full", "e0", 1.0, [("submit", "accepted")]),  # e0 again: its last line counts
    ]  # fmt: skip
    summary = summarize(played, "full")
    assert (summary.episodes, summary.failed, summary.reward.value) == (3, 1, pytest.approx(0.5))
    assert summary.calls == 2 and summary.verdicts == {"accepted": 1, "not_json": 1}
    assert summary.valid_rate() == pytest.approx(0.5)
    assert summary.malformed_rates()["not_json"] == pytest.approx(0.5)
    assert summary.faults == {"parallel_calls": 1, "server_error": 1, "timeout": 1}
    assert (
        summary.prompt_tokens_per_episode == 300
    )  # the one scored episode with usage that is the last of its key
    assert summary.ended_by == {"end_turn": 2, "error": 1}


def plays(task: str, *rewards: float | None) -> list[Episode]:
    """One task's plays in order (`task`, `task#1`, ...), None for one that ended in an error."""
    return [
        episode("full", f"{task}#{index}" if index else task, reward) for index, reward in enumerate(rewards)
    ]


def test_pass_k_goes_up_to_the_fewest_scored_plays_and_averages_each_k_over_every_task_as_tau2_does():
    # a: 3 scored plays, 2 succeed; b: 2 scored (its third failed), both succeed; c: 3 scored, 2 succeed (one
    # within 1e-6 of 1, one not). τ²-bench stops at k = 2, b's plays; averaging each k over the tasks played at
    # least k times would have gone on to pass^3 = 0 over a and c alone.
    played = [*plays("a", 1.0, 1.0, 0.0), *plays("b", 1.0, 1.0, None), *plays("c", 0.999, 1 - 1e-7, 1.0)]
    pass_k = summarize(played, "full").pass_k
    assert list(pass_k) == [1, 2]
    assert pass_k[1].value == pytest.approx((2 / 3 + 1 + 2 / 3) / 3) and pass_k[1].n == 3
    assert pass_k[2].value == pytest.approx((1 / 3 + 1 + 1 / 3) / 3) and pass_k[2].n == 3


def test_pass_k_of_tasks_all_played_as_often_is_each_tasks_chance_averaged():
    played = [*plays("a", 1.0, 0.0), *plays("b", 1.0, 1.0)]
    pass_k = summarize(played, "full").pass_k
    assert {k: estimate.value for k, estimate in pass_k.items()} == {1: 0.75, 2: 0.5}
