"""Score offers on a day: settle at the realized prices for the reward, or at the forecast for a what-if."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.day import Day
from agent_env.envs.gridsim.offers import Offers, parse_offers
from agent_env.envs.gridsim.reward import reward
from agent_env.envs.gridsim.settlement import Settlement, settle

PlainOffers = Mapping[str, Sequence[Mapping[str, object]]]
"""The tool layer's shape: {"curves": [{hours, points}], "as_offers": [{product, hours, mw, price}]}."""


@dataclass(frozen=True, eq=False)
class Score:
    """A scored day: its settlement, profit, the bound it is measured against, and the reward."""

    settlement: Settlement
    profit: float
    bound: float
    reward: float


def score_offers(offers: Offers, day: Day, bound: float, battery: Battery) -> Score:
    """Settle offers at the day's realized prices and score the profit against the day's bound.

    Args:
        offers: Checked offers.
        day: The operating day.
        bound: The day's precomputed upper bound UB, $ (from the bundle, or `upper_bound(...).value`).
        battery: The battery the bound was computed for.

    Returns:
        The score; its reward is `reward(profit, bound)`.
    """
    settlement = settle(offers, day.outcome.prices(), battery)
    return Score(settlement, settlement.profit, bound, reward(settlement.profit, bound))


def score_plain_offers(plain: PlainOffers, day: Day, bound: float, battery: Battery) -> Score:
    """`parse_offers` on the plain-dict shape, then `score_offers`; raises OfferError on bad offers."""
    offers = parse_offers(plain.get("curves", []), plain.get("as_offers", []), battery)
    return score_offers(offers, day, bound, battery)


def forecast_settlement(offers: Offers, day: Day, battery: Battery) -> Settlement:
    """Settle offers at the day's P50 forecast prices instead of the realized ones (changes nothing)."""
    return settle(offers, day.forecast.prices(), battery)


def forecast_profit(offers: Offers, day: Day, battery: Battery) -> float:
    """The profit the offers would earn if prices came in at the P50 forecast."""
    return forecast_settlement(offers, day, battery).profit
