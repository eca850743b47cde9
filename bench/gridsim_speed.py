"""Measure GridSim episodes per second on one core: parse offers, settle, reward against the cached bound.

Run: uv run python bench/gridsim_speed.py [--seconds 5] [--build]
With --build it also times a full in-memory rebuild of desk-v4 (320 days generated, 320 bounds solved).
"""

from __future__ import annotations

import argparse
import itertools
import time

from agent_env.envs.gridsim.baselines import arbitrage_with_as
from agent_env.envs.gridsim.bundle import SPECS, build_text, load_bundle
from agent_env.envs.gridsim.offers import parse_offers
from agent_env.envs.gridsim.scoring import score_offers

TARGET = 50.0
"""Episodes per second the desk must sustain on one core."""


def episodes_per_second(seconds: float) -> tuple[float, int]:
    """Episodes/s over the test split, cycling its days, with realistic offers (arbitrage_with_as)."""
    bundle = load_bundle("desk-v4")
    entries = [bundle.entry(task_id) for task_id in bundle.task_ids("test")]
    plain = [
        arbitrage_with_as(e.day.forecast, bundle.battery) for e in entries
    ]  # the agent's work, not timed
    episodes = 0
    start = time.perf_counter()
    for entry, offers in itertools.cycle(zip(entries, plain, strict=True)):
        checked = parse_offers(offers["curves"], offers["as_offers"], bundle.battery)
        score_offers(checked, entry.day, entry.bound, bundle.battery)
        episodes += 1
        if episodes % 64 == 0 and time.perf_counter() - start >= seconds:
            break
    return episodes / (time.perf_counter() - start), episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--build", action="store_true", help="also time a full rebuild of desk-v4")
    args = parser.parse_args()
    start = time.perf_counter()
    load_bundle("desk-v4")
    print(f"load_bundle('desk-v4'): {time.perf_counter() - start:.2f} s (once per process)")
    rate, episodes = episodes_per_second(args.seconds)
    verdict = "ok" if rate >= TARGET else f"BELOW the target of {TARGET:g}"
    print(f"{rate:,.0f} episodes/s over {episodes} episodes (parse + settle + reward), {verdict}")
    if args.build:
        start = time.perf_counter()
        build_text(SPECS["desk-v4"])
        print(f"full desk-v4 build (320 days + 320 MILP bounds): {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
