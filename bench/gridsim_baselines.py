"""Print each GridSim baseline's mean reward and mean profit on a desk bundle split.

Run: uv run python bench/gridsim_baselines.py [--bundle desk-v4] [--split test]
"""

from __future__ import annotations

import argparse
import statistics

from agent_env.envs.gridsim.baselines import BASELINES
from agent_env.envs.gridsim.bundle import load_bundle
from agent_env.envs.gridsim.scoring import score_plain_offers


def baseline_table(bundle_name: str, split: str) -> list[tuple[str, float, float, float]]:
    """(baseline, mean reward, mean profit $, mean bound $) for every baseline on one split."""
    bundle = load_bundle(bundle_name)
    entries = [bundle.entry(task_id) for task_id in bundle.task_ids(split)]
    rows = []
    for name, baseline in BASELINES.items():
        scores = [
            score_plain_offers(baseline(e.day.forecast, bundle.battery), e.day, e.bound, bundle.battery)
            for e in entries
        ]
        rows.append(
            (
                name,
                statistics.fmean(s.reward for s in scores),
                statistics.fmean(s.profit for s in scores),
                statistics.fmean(e.bound for e in entries),
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", default="desk-v4")
    parser.add_argument("--split", default="test")
    args = parser.parse_args()
    rows = baseline_table(args.bundle, args.split)
    print(f"{args.bundle}/{args.split}: {len(load_bundle(args.bundle).task_ids(args.split))} days")
    print(f"{'baseline':<20} {'mean reward':>12} {'mean profit $':>14} {'mean UB $':>12}")
    for name, mean_reward, mean_profit, mean_bound in rows:
        print(f"{name:<20} {mean_reward:>12.4f} {mean_profit:>14,.0f} {mean_bound:>12,.0f}")


if __name__ == "__main__":
    main()
