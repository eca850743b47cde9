"""The upper bound: hand-computed optima, never beaten by any offers, always attained by its own dispatch."""

import numpy as np
import pytest

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.bound import upper_bound
from agent_env.envs.gridsim.market import PRICE_SERIES, PRODUCTS, Prices
from agent_env.envs.gridsim.offers import parse_offers
from agent_env.envs.gridsim.reward import reward
from agent_env.envs.gridsim.scenario import generate_day
from agent_env.envs.gridsim.settlement import settle

BATTERY = Battery()
ETA = 0.922


def prices(spp, **mcpc) -> Prices:
    return Prices.from_series(spp, {name: [float(mcpc.get(name, 0.0))] * 24 for name in PRICE_SERIES})


@pytest.mark.parametrize(
    ("spp", "optimum"),
    [
        ([30.0] * 24, 0.0),  # flat: every cycle loses
        ([10.0] * 12 + [100.0] * 12, 90 * 90 * ETA - 10 * 90 / ETA),  # one full cycle, back to 100 MWh
        ([-20.0] * 24, 20 * 90 / ETA),  # paid to fill up; cycling costs more than it earns
        (
            [30.0] * 17 + [3000.0] * 3 + [30.0] * 4,
            2990 * 180 * ETA - 2 * 30 * 90 / ETA,
        ),  # fill, empty, refill
    ],
    ids=["flat", "two-price", "negative", "scarcity"],
)
def test_energy_only_days_match_the_hand_computed_optimum(spp, optimum):
    assert upper_bound(prices(spp), BATTERY).value == pytest.approx(optimum, abs=1e-4)


def test_as_only_day_earns_at_least_full_idle_headroom_every_hour():
    # Flat SPP and only regup pays: idling at SoC 100 already backs 100 MW of regup in every hour.
    bound = upper_bound(prices([30.0] * 24, regup=5.0), BATTERY)
    assert bound.value >= 24 * 100 * 5 - 1e-6
    assert bound.awards_mw[0].min() >= 100 - 1e-6


def test_the_dispatch_follows_the_soc_rules_and_ends_at_or_above_its_start():
    day = generate_day(11)
    bound = upper_bound(day.outcome.prices(), BATTERY)
    assert bound.soc_mwh == pytest.approx(BATTERY.soc_path(bound.net_mw), abs=1e-6)
    assert bound.soc_mwh.min() >= 10 - 1e-6 and bound.soc_mwh.max() <= 190 + 1e-6
    assert bound.soc_mwh[-1] >= 100 - 1e-6
    caps = np.array([product.cap_mw(BATTERY) for product in PRODUCTS])[:, None]
    assert np.all(bound.awards_mw <= caps + 1e-6) and np.all(bound.awards_mw >= -1e-9)


SEEDS = [0, 3, 25, 43, 56, 60, 101, 9]  # includes scarcity (25, 43) and negative-midday (56, 60) days


def test_generated_days_in_the_attainability_set_cover_every_kind():
    assert {generate_day(seed).kind for seed in SEEDS} == {"normal", "scarcity", "negative_midday"}


@pytest.mark.parametrize("seed", SEEDS)
def test_the_bound_is_attained_by_offers_that_reproduce_its_dispatch(seed):
    day = generate_day(seed)
    bound = upper_bound(day.outcome.prices(), BATTERY)
    plain = bound.offers(BATTERY)
    result = settle(parse_offers(plain["curves"], plain["as_offers"], BATTERY), day.outcome.prices(), BATTERY)
    assert result.shortfalls() == []
    assert result.profit == pytest.approx(bound.value, rel=1e-9, abs=1e-6)
    assert reward(result.profit, bound.value) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("seed", [25, 56, 5])
def test_random_offers_never_beat_the_bound(seed):
    rng = np.random.default_rng(seed)
    day = generate_day(seed)
    ub = upper_bound(day.outcome.prices(), BATTERY).value
    for _ in range(40):
        curves = []
        for hour in range(1, 25):
            size = int(rng.integers(2, 6))
            mw, price = np.sort(rng.uniform(-100, 100, size)), np.sort(rng.uniform(-100, 400, size))
            curves.append({"hours": [hour], "points": np.column_stack([mw, price]).tolist()})
        as_offers = [
            {"product": p.name, "hours": [h], "mw": float(rng.uniform(0, p.cap_mw(BATTERY))), "price": 0}
            for p in PRODUCTS
            for h in range(1, 25)
            if rng.random() < 0.4
        ]
        profit = settle(parse_offers(curves, as_offers, BATTERY), day.outcome.prices(), BATTERY).profit
        assert profit <= ub + 1e-6


def test_the_bound_uses_the_batterys_limits():
    spp = [10.0] * 12 + [100.0] * 12
    small = Battery(charge_mw=20, discharge_mw=20)
    big = upper_bound(prices(spp), BATTERY).value
    assert upper_bound(prices(spp), small).value < big
