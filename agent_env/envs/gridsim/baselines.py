"""Baseline desks: pure functions from the forecast a desk can see to offers in the tool layer's shape."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.day import Forecast
from agent_env.envs.gridsim.feasibility import REGDN_DURATION_H
from agent_env.envs.gridsim.hours import hour_label
from agent_env.envs.gridsim.market import N_HOURS, PRICE_CAP, PRICE_FLOOR, PRODUCTS

PlainOffers = dict[str, list[dict[str, Any]]]
Baseline = Callable[[Forecast, Battery], PlainOffers]
MIN_MW = 0.1
"""Smaller moves and AS offers are not worth an offer."""


def do_nothing(forecast: Forecast, battery: Battery) -> PlainOffers:
    """No offers: the battery idles and earns exactly $0."""
    return {"curves": [], "as_offers": []}


def arbitrage(forecast: Forecast, battery: Battery) -> PlainOffers:
    """Charge in the cheapest P50-forecast hours and discharge in the dearest, as flat curves.

    The schedule keeps SoC within limits and ends the day at its starting SoC (see `plan_arbitrage`), so
    a price-taking battery delivers it exactly, whatever prices come in.
    """
    return {"curves": _flat_curves(plan_arbitrage(forecast.spp.p50, battery)), "as_offers": []}


def arbitrage_with_as(forecast: Forecast, battery: Battery) -> PlainOffers:
    """`arbitrage`, plus AS offers at $0 for every MW the schedule leaves room to back.

    Each hour, up products are filled in order of forecast MCPC (dearest first) within the power and
    SoC the energy schedule leaves; regdn takes the charging headroom. AS is not deployed in this
    market, so any MW that can be backed is worth offering at any non-negative price.
    """
    net = plan_arbitrage(forecast.spp.p50, battery)
    soc = battery.soc_path(net)
    as_offers = []
    for hour in range(N_HOURS):
        prices = {p.name: forecast.mcpc[p.price_series].p50[hour] for p in PRODUCTS}
        awards = _as_room(
            float(net[hour]), min(soc[hour], soc[hour + 1]), max(soc[hour], soc[hour + 1]), prices, battery
        )
        as_offers += [
            {"product": name, "hours": hour_label(hour + 1), "mw": mw, "price": 0}
            for name, mw in awards.items()
        ]
    return {"curves": _flat_curves(net), "as_offers": as_offers}


BASELINES: dict[str, Baseline] = {
    "do_nothing": do_nothing,
    "arbitrage": arbitrage,
    "arbitrage_with_as": arbitrage_with_as,
}


def plan_arbitrage(spp: Sequence[float], battery: Battery) -> np.ndarray:
    """A greedy energy schedule for forecast prices: net MW per hour, positive discharging.

    Pairs (discharge hour, charge hour) are taken in order of margin per MW discharged,
    spp_d - degradation - spp_c / (eff_charge * eff_discharge), each as large as power and SoC allow;
    every pair is SoC-neutral, so the day ends where it began. Then hours with negative prices charge
    whatever SoC room is left (raising the end SoC, which the rules allow).
    """
    prices = np.asarray(spp, dtype=float)
    net = np.zeros(N_HOURS)
    round_trip = battery.charge_efficiency * battery.discharge_efficiency
    pairs = sorted(
        (
            (prices[d] - battery.degradation_per_mwh - prices[c] / round_trip, d, c)
            for d in range(N_HOURS)
            for c in range(N_HOURS)
            if d != c
        ),
        reverse=True,
    )
    for margin, discharge, charge in pairs:
        if margin <= 0:
            break
        if net[discharge] >= 0 and net[charge] <= 0:
            mw = _pair_room(net, discharge, charge, battery)
            if mw >= MIN_MW:
                net[discharge] += mw
                net[charge] -= mw / round_trip
    for hour in np.argsort(prices):
        if prices[hour] < 0 and net[hour] <= 0:
            soc = battery.soc_path(net)
            room = (battery.soc_max_mwh - soc[hour + 1 :].max()) / battery.charge_efficiency
            net[hour] -= max(0.0, min(room, battery.charge_mw + net[hour]))
    return net


def _pair_room(net: np.ndarray, discharge: int, charge: int, battery: Battery) -> float:
    """Most MW to add at `discharge`, matched by charging at `charge`, within power and SoC limits."""
    round_trip = battery.charge_efficiency * battery.discharge_efficiency
    soc = battery.soc_path(net)
    if charge < discharge:  # SoC is higher between the two hours
        soc_room = battery.soc_max_mwh - soc[charge + 1 : discharge + 1].max()
    else:  # SoC is lower between the two hours
        soc_room = soc[discharge + 1 : charge + 1].min() - battery.soc_min_mwh
    return max(
        0.0,
        min(
            battery.discharge_mw - net[discharge],
            (battery.charge_mw + net[charge]) * round_trip,
            soc_room * battery.discharge_efficiency,
        ),
    )


def _as_room(
    net_mw: float, low_soc: float, high_soc: float, prices: dict[str, float], battery: Battery
) -> dict[str, float]:
    """MW of each product one hour can back, filling up products by forecast price, dearest first."""
    power = battery.discharge_mw - net_mw
    energy = (low_soc - battery.soc_min_mwh) * battery.discharge_efficiency
    awards = {}
    for product in sorted((p for p in PRODUCTS if p.direction == "up"), key=lambda p: -prices[p.name]):
        mw = _floor(min(product.cap_mw(battery), power, energy / product.duration_h))
        if mw >= MIN_MW:
            awards[product.name] = mw
            power -= mw
            energy -= mw * product.duration_h
    regdn = min(
        battery.charge_mw + net_mw,
        (battery.soc_max_mwh - high_soc) / (REGDN_DURATION_H * battery.charge_efficiency),
    )
    if _floor(regdn) >= MIN_MW:
        awards["regdn"] = _floor(regdn)
    return awards


def _flat_curves(net: np.ndarray) -> list[dict[str, Any]]:
    """One flat curve per run of hours with the same MW (idle hours get none)."""
    curves: list[dict[str, Any]] = []
    hour = 0
    while hour < N_HOURS:
        end = hour
        while end + 1 < N_HOURS and net[end + 1] == net[hour]:
            end += 1
        if net[hour] != 0:
            label = hour_label(hour + 1) if end == hour else f"{hour_label(hour + 1)}-{hour_label(end + 1)}"
            mw = float(net[hour])
            curves.append({"hours": label, "points": [[mw, PRICE_FLOOR], [mw, PRICE_CAP]]})
        hour = end + 1
    return curves


def _floor(mw: float) -> float:
    """Round MW down to a tenth, so an offer never asks for more than can be backed."""
    return math.floor(max(mw, 0.0) * 10) / 10
