"""Play the GridSim desk's baseline policies through the tools a trainer uses, and score each episode."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from agent_env._agent_env import AgentEnv
from agent_env.envs.gridsim.baselines import BASELINES, PlainOffers
from agent_env.envs.gridsim.bundle import load_bundle
from agent_env.envs.gridsim.scoring import score_plain_offers
from agent_env.envs.gridsim.settlement import Settlement

DESK = "GridSimDesk"
"""The environment the baseline policies are written for (they read its forecasts)."""


class NoPoliciesError(LookupError):
    """Baseline policies exist only for the GridSim desk."""


@dataclass(frozen=True, eq=False)
class Episode:
    """One played episode: the reward the trainer got (`get_reward`) and the settled day behind it."""

    policy: str
    task_id: str
    reward: float
    offers: PlainOffers
    settlement: Settlement
    bound: float


@dataclass(frozen=True)
class PolicySummary:
    """A policy's episodes in a few numbers."""

    policy: str
    episodes: int
    mean_reward: float
    mean_profit: float
    mean_bound: float
    """The best achievable profit, with perfect foresight, averaged over the same days."""


def policy_names(env: AgentEnv, policy: str) -> list[str]:
    """The policies `--policy` names (`all`, one name, or names separated by commas) for `env`.

    Raises:
        NoPoliciesError: `env` is not the GridSim desk.
        LookupError: A name that is not a baseline.
    """
    if env.provider.name != DESK:
        raise NoPoliciesError(
            f"no baseline policies exist for {env.provider.name}: they are written for the GridSim desk "
            f"(gridsim-desk), whose forecasts they read; run rollout on gridsim-desk or a served desk"
        )
    names = list(BASELINES) if policy == "all" else [name.strip() for name in policy.split(",")]
    unknown = [name for name in names if name not in BASELINES]
    if unknown:
        raise LookupError(
            f"no baseline policy {', '.join(unknown)}; the desk has: all, {', '.join(BASELINES)}"
        )
    return names


def play_episode(instance: Any, row: dict[str, Any], policy: str) -> Episode:
    """One episode as TRL plays it: `reset(**row)`, the policy's offers through the `submit_dam_offers`
    SchemaTool, `end_turn`, `get_reward`."""
    instance.reset(**row)
    bundle = load_bundle(row["task_id"].split("/")[0])
    entry = bundle.entry(row["task_id"])
    offers = BASELINES[policy](entry.day.forecast, bundle.battery)
    instance.submit_dam_offers(**offers)
    instance.end_turn()
    reward = instance.get_reward()
    # The settled day behind the reward, for the profit and the plot: the same offers, settled the same way.
    score = score_plain_offers(offers, entry.day, entry.bound, bundle.battery)
    if abs(score.reward - reward) > 1e-9:
        raise RuntimeError(
            f"{row['task_id']}: the environment's reward {reward} differs from the settled offers' {score.reward}; "
            "is the served desk running another version?"
        )
    return Episode(policy, row["task_id"], reward, offers, score.settlement, entry.bound)


def rollout(
    env: AgentEnv,
    policies: list[str],
    *,
    split: str = "test",
    episodes: int = 8,
    on_episode: Callable[[Episode], None] = lambda episode: None,
) -> list[Episode]:
    """Play the first `episodes` tasks of `split` with each policy, one TRL environment instance per policy.

    Raises:
        ValueError: `episodes` is not between 1 and the split's size.
    """
    rows = env.provider.dataset_rows(split)
    if not 1 <= episodes <= len(rows):
        raise ValueError(f"split {split!r} has {len(rows)} tasks; --episodes must be 1 to {len(rows)}")
    played = []
    for policy in policies:
        instance = env.factory()
        for row in rows[:episodes]:
            played.append(play_episode(instance, row, policy))
            on_episode(played[-1])
    return played


def summarize(played: list[Episode]) -> list[PolicySummary]:
    """Mean reward and mean profit per policy, in the order the policies were played."""
    by_policy: dict[str, list[Episode]] = {}
    for episode in played:
        by_policy.setdefault(episode.policy, []).append(episode)
    return [
        PolicySummary(
            policy,
            len(episodes),
            fmean(e.reward for e in episodes),
            fmean(e.settlement.profit for e in episodes),
            fmean(e.bound for e in episodes),
        )
        for policy, episodes in by_policy.items()
    ]
