"""The offer contract with the tool layer: plain-dict curves and AS offers in, checked `Offers` out."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.hours import HourSetError, hour_label, parse_hours
from agent_env.envs.gridsim.market import (
    N_HOURS,
    PRICE_CAP,
    PRICE_FLOOR,
    PRODUCT_INDEX,
    PRODUCT_NAMES,
    PRODUCTS,
    Curve,
    CurveRuleError,
    check_curve,
)
from agent_env.errors import ToolError

CURVE_KEYS = ("hours", "points")
AS_OFFER_KEYS = ("product", "hours", "mw", "price")


class OfferError(ToolError):
    """Offers that break a market rule; the message starts with the entry's path and names the rule."""

    code = "invalid_offers"

    def __init__(self, path: str, rule: str) -> None:
        super().__init__(f"{path}: {rule}")
        self.path = path
        self.rule = rule


@dataclass(frozen=True, eq=False)
class Offers:
    """A day's checked offers: at most one curve per hour and one offer per AS product and hour."""

    curves: tuple[Curve | None, ...]
    """The curve for HE01..HE24 (index 0 is HE01); None means no energy offer: the battery idles."""
    as_mw: np.ndarray
    """Offered MW per product (PRODUCTS order) and hour, shape (6, 24); 0 where nothing is offered."""
    as_price: np.ndarray
    """Offer price per product and hour, $/MW-h; NaN where nothing is offered."""

    def __post_init__(self) -> None:
        self.as_mw.setflags(write=False)
        self.as_price.setflags(write=False)

    @classmethod
    def none(cls) -> Offers:
        """No offers at all: the battery idles all day."""
        return cls(
            (None,) * N_HOURS, np.zeros((len(PRODUCTS), N_HOURS)), np.full((len(PRODUCTS), N_HOURS), np.nan)
        )

    def cleared_mw(self, spp: np.ndarray) -> np.ndarray:
        """Energy cleared per hour: each hour's curve read at its SPP, 0 where there is no curve."""
        return np.array(
            [
                0.0 if curve is None else curve.mw_at(float(price))
                for curve, price in zip(self.curves, spp, strict=True)
            ]
        )


def parse_offers(
    curves: Sequence[Mapping[str, object]], as_offers: Sequence[Mapping[str, object]], battery: Battery
) -> Offers:
    """Check plain-dict offers against every rule JSON Schema cannot express and build `Offers`.

    Args:
        curves: `[{"hours": "HE07-HE10" | [7, 8] | "all", "points": [[mw, price], ...]}, ...]`.
        as_offers: `[{"product": "regup", "hours": ..., "mw": 10, "price": 5}, ...]`.
        battery: The battery whose limits bound curve MW and AS caps.

    Returns:
        The checked offers. Hours that no curve names idle at 0 MW.

    Raises:
        OfferError: the first broken rule, e.g. `curves[1].points: MW must be non-decreasing (point 2 has
            -50 after 0); ...`. Rules: entry shape; hour sets parse; a curve's points (see `check_curve`);
            no hour in two curves; AS product is one of the six; MW finite, >= 0 and within the product's
            cap; price finite within -250..5000; no product offered twice in one hour.
    """
    return Offers(_parse_curves(curves, battery), *_parse_as_offers(as_offers, battery))


def _parse_curves(curves: Sequence[Mapping[str, object]], battery: Battery) -> tuple[Curve | None, ...]:
    # Decision: an hour that no curve names has no energy offer and idles at 0 MW.
    by_hour: list[Curve | None] = [None] * N_HOURS
    owner: dict[int, int] = {}
    for index, entry in enumerate(_entries(curves, "curves")):
        path = f"curves[{index}]"
        _check_keys(entry, path, CURVE_KEYS)
        hours = _hours(entry["hours"], f"{path}.hours")
        try:
            curve = check_curve(entry["points"], battery)
        except CurveRuleError as error:
            raise OfferError(f"{path}.points", str(error)) from None
        taken = [hour for hour in hours if hour in owner]
        if taken:
            raise OfferError(
                f"{path}.hours",
                f"{_labels(taken)} already take curves[{owner[taken[0]]}]; each hour takes one curve, "
                "so split the hour sets",
            )
        for hour in hours:
            owner[hour] = index
            by_hour[hour - 1] = curve
    return tuple(by_hour)


def _parse_as_offers(
    as_offers: Sequence[Mapping[str, object]], battery: Battery
) -> tuple[np.ndarray, np.ndarray]:
    mw = np.zeros((len(PRODUCTS), N_HOURS))
    price = np.full((len(PRODUCTS), N_HOURS), np.nan)
    owner: dict[tuple[str, int], int] = {}
    for index, entry in enumerate(_entries(as_offers, "as_offers")):
        path = f"as_offers[{index}]"
        _check_keys(entry, path, AS_OFFER_KEYS)
        product = _product(entry["product"], f"{path}.product")
        hours = _hours(entry["hours"], f"{path}.hours")
        offer_mw = _as_mw(entry["mw"], product, f"{path}.mw", battery)
        offer_price = _number(entry["price"], f"{path}.price")
        # Decision: AS offer prices share the energy bounds, -250..5000; a negative price always clears.
        if not PRICE_FLOOR <= offer_price <= PRICE_CAP:
            raise OfferError(
                f"{path}.price", f"price {offer_price:g} is outside {PRICE_FLOOR:g}..{PRICE_CAP:g} $/MW-h"
            )
        # Decision: one offer per product and hour (no stacked price tranches), so every award is unambiguous.
        taken = [hour for hour in hours if (product, hour) in owner]
        if taken:
            raise OfferError(
                f"{path}.hours",
                f"{product} {_labels(taken)} already offered by as_offers[{owner[(product, taken[0])]}]; "
                f"one {product} offer per hour, so merge them or split the hour sets",
            )
        row = PRODUCT_INDEX[product]
        for hour in hours:
            owner[(product, hour)] = index
            mw[row, hour - 1] = offer_mw
            price[row, hour - 1] = offer_price
    return mw, price


def _entries(entries: object, path: str) -> Sequence[Mapping[str, object]]:
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        raise OfferError(path, f"must be a list of objects, got {type(entries).__name__}")
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise OfferError(f"{path}[{index}]", f"must be an object, got {type(entry).__name__}")
    return entries


def _check_keys(entry: Mapping[str, object], path: str, allowed: tuple[str, ...]) -> None:
    # Decision: unknown keys are rejected, so a misspelt key is reported instead of silently ignored.
    unknown = sorted(str(key) for key in entry if key not in allowed)
    missing = [key for key in allowed if key not in entry]
    if unknown or missing:
        problem = f"unknown key {unknown[0]!r}" if unknown else f"missing {missing[0]!r}"
        raise OfferError(path, f"{problem}; the keys are {', '.join(allowed)}")


def _hours(spec: object, path: str) -> tuple[int, ...]:
    try:
        return parse_hours(spec)
    except HourSetError as error:
        raise OfferError(path, str(error)) from None


def _product(name: object, path: str) -> str:
    if name not in PRODUCT_INDEX:
        raise OfferError(path, f"unknown product {name!r}; use one of {', '.join(PRODUCT_NAMES)}")
    return str(name)


def _as_mw(value: object, product: str, path: str, battery: Battery) -> float:
    mw = _number(value, path)
    spec = PRODUCTS[PRODUCT_INDEX[product]]
    cap = spec.cap_mw(battery)
    if not 0 <= mw <= cap:
        raise OfferError(path, f"{product} MW {mw:g} is outside 0..{cap:g} (the cap is {spec.cap_rule()})")
    return mw


def _number(value: object, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise OfferError(path, f"must be a finite number, got {value!r}")
    return float(value)


def _labels(hours: Sequence[int]) -> str:
    return ", ".join(hour_label(hour) for hour in hours)
