"""Scoring: plain offers to reward against the bundle's bound, and the what-if at the P50 forecast."""

import pytest

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.bundle import load_bundle
from agent_env.envs.gridsim.offers import OfferError, parse_offers
from agent_env.envs.gridsim.reward import reward
from agent_env.envs.gridsim.scoring import forecast_profit, forecast_settlement, score_plain_offers
from agent_env.envs.gridsim.settlement import settle

BATTERY = Battery()
PLAIN = {
    "curves": [
        {"hours": "HE02-HE04", "points": [[-40, 30], [0, 30.01]]},
        {"hours": [19], "points": [[0, 40], [90, 41]]},
    ],
    "as_offers": [{"product": "regup", "hours": "all", "mw": 10, "price": 3}],
}


@pytest.fixture(scope="module")
def entry():
    bundle = load_bundle("desk-v4")
    return bundle.entry(bundle.task_ids("test")[0])


def test_score_settles_at_realized_prices_and_rewards_against_the_stored_bound(entry):
    score = score_plain_offers(PLAIN, entry.day, entry.bound, BATTERY)
    offers = parse_offers(PLAIN["curves"], PLAIN["as_offers"], BATTERY)
    assert score.profit == settle(offers, entry.day.outcome.prices(), BATTERY).profit
    assert score.bound == entry.bound and score.reward == reward(score.profit, entry.bound)


def test_bad_plain_offers_raise_before_anything_is_settled(entry):
    with pytest.raises(OfferError, match=r"as_offers\[0\].product: unknown product 'spin'"):
        score_plain_offers(
            {"as_offers": [{"product": "spin", "hours": "all", "mw": 1, "price": 1}]},
            entry.day,
            entry.bound,
            BATTERY,
        )


def test_forecast_profit_settles_at_the_p50_forecast_not_the_outcome(entry):
    offers = parse_offers(PLAIN["curves"], PLAIN["as_offers"], BATTERY)
    what_if = forecast_settlement(offers, entry.day, BATTERY)
    assert what_if.spp.tolist() == list(entry.day.forecast.spp.p50)
    assert forecast_profit(offers, entry.day, BATTERY) == what_if.profit
    assert what_if.profit != settle(offers, entry.day.outcome.prices(), BATTERY).profit
