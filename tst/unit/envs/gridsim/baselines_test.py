"""Baselines: pure functions of the forecast that produce valid, backed offers, ranked as expected."""

import numpy as np
import pytest

from agent_env.envs.gridsim.baselines import (
    BASELINES,
    arbitrage,
    arbitrage_with_as,
    do_nothing,
    plan_arbitrage,
)
from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.bundle import load_bundle
from agent_env.envs.gridsim.offers import parse_offers
from agent_env.envs.gridsim.scoring import score_plain_offers

BATTERY = Battery()


@pytest.fixture(scope="module")
def test_split():
    bundle = load_bundle("desk-v4")
    return [bundle.entry(task_id) for task_id in bundle.task_ids("test")]


def test_do_nothing_offers_nothing_and_scores_zero(test_split):
    entry = test_split[0]
    assert do_nothing(entry.day.forecast, BATTERY) == {"curves": [], "as_offers": []}
    score = score_plain_offers(do_nothing(entry.day.forecast, BATTERY), entry.day, entry.bound, BATTERY)
    assert (score.profit, score.reward) == (0.0, 0.0)


def test_arbitrage_plan_charges_the_cheap_hours_and_discharges_the_dear_ones():
    spp = [20.0] * 6 + [60.0] * 6 + [5.0] * 6 + [120.0] * 6
    net = plan_arbitrage(spp, BATTERY)
    assert np.all(net[12:18] <= 0) and np.all(net[18:] >= 0) and net[12:18].sum() < 0 and net[18:].sum() > 0
    soc = BATTERY.soc_path(net)
    assert soc.min() >= 10 - 1e-9 and soc.max() <= 190 + 1e-9 and soc[-1] >= 100 - 1e-9


def test_arbitrage_plan_stays_idle_when_no_spread_pays_for_losses():
    assert not plan_arbitrage([30.0] * 12 + [40.0] * 12, BATTERY).any()


def test_arbitrage_plan_keeps_soc_in_limits_and_ends_at_its_start_on_every_forecast(test_split):
    for entry in test_split:
        soc = BATTERY.soc_path(plan_arbitrage(entry.day.forecast.spp.p50, BATTERY))
        assert soc.min() >= 10 - 1e-9 and soc.max() <= 190 + 1e-9 and soc[-1] >= 100 - 1e-9


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_offers_parse_and_are_fully_backed_at_realized_prices(name, test_split):
    for entry in test_split:
        plain = BASELINES[name](entry.day.forecast, BATTERY)
        parse_offers(plain["curves"], plain["as_offers"], BATTERY)
        score = score_plain_offers(plain, entry.day, entry.bound, BATTERY)
        assert score.settlement.shortfalls() == [], entry.task_id
        assert score.profit <= entry.bound + 0.01


def test_baselines_rank_do_nothing_below_arbitrage_below_arbitrage_with_as(test_split):
    means = {
        name: np.mean(
            [
                score_plain_offers(BASELINES[name](e.day.forecast, BATTERY), e.day, e.bound, BATTERY).reward
                for e in test_split
            ]
        )
        for name in BASELINES
    }
    assert means["do_nothing"] == 0 < means["arbitrage"] < means["arbitrage_with_as"] < 1


def test_baselines_use_hour_ranges_and_price_zero_as_offers(test_split):
    plain = arbitrage_with_as(test_split[0].day.forecast, BATTERY)
    assert all(offer["price"] == 0 and offer["mw"] >= 0.1 for offer in plain["as_offers"])
    assert all(
        isinstance(curve["hours"], str) and curve["hours"].startswith("HE") for curve in plain["curves"]
    )
    assert arbitrage(test_split[0].day.forecast, BATTERY)["curves"] == plain["curves"]
