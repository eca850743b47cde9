"""Market rules: prices, offer curves and how they read, the six AS products and how their offers clear."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from agent_env.envs.gridsim.battery import Battery
from agent_env.errors import ToolError

PRICE_FLOOR = -250.0
"""Lowest offer price, $/MWh (ERCOT's floor)."""
PRICE_CAP = 5000.0
"""Highest offer price, $/MWh (ERCOT's cap)."""
MIN_POINTS, MAX_POINTS = 2, 10
N_HOURS = 24


class CurveRuleError(ToolError):
    """An offer curve that breaks a market rule; the message names the rule and the point."""

    code = "curve_rule"


@dataclass(frozen=True)
class Product:
    """One ancillary-service product: its direction, the SoC duration an award needs, and its cap."""

    name: str
    direction: Literal["up", "down"]
    duration_h: float
    price_series: str
    cap_discharge_share: float | None = None
    """Cap as a share of max discharge; None caps at the battery's full swing, charge_mw + discharge_mw."""
    cap_fixed_mw: float = math.inf

    def cap_mw(self, battery: Battery) -> float:
        """Most MW this battery may offer or be awarded of this product in one hour."""
        # Decision: beyond the doc's two caps, a product is capped by the power headroom rules alone:
        # p + UP <= discharge_mw with p >= -charge_mw (and p - regdn >= -charge_mw with p <= discharge_mw)
        # allow up to charge_mw + discharge_mw, e.g. regup 200 MW while charging at 100 MW.
        if self.cap_discharge_share is None:
            share_cap = battery.charge_mw + battery.discharge_mw
        else:
            share_cap = self.cap_discharge_share * battery.discharge_mw
        return min(self.cap_fixed_mw, share_cap)

    def cap_rule(self) -> str:
        """The cap in words, for messages."""
        if self.cap_discharge_share is None:
            parts = ["max charge + max discharge"]
        else:
            parts = [f"{self.cap_discharge_share:.0%} of max discharge"]
        if math.isfinite(self.cap_fixed_mw):
            parts.append(f"{self.cap_fixed_mw:g} MW")
        return " or ".join(parts) if len(parts) == 1 else "the lesser of " + " and ".join(parts)


PRODUCTS: tuple[Product, ...] = (
    Product("regup", "up", 0.5, "regup"),
    Product("regdn", "down", 0.5, "regdn"),
    Product("rrspfr", "up", 0.5, "rrs", cap_fixed_mw=157.0),
    # Decision (doc: assumed): rrsffr's 0.25 h duration and its 50%-of-max-discharge cap.
    Product("rrsffr", "up", 0.25, "rrs", cap_discharge_share=0.5),
    Product("ecrs", "up", 1.0, "ecrs"),
    Product("nspin", "up", 4.0, "nspin"),
)
"""The six AS products, in the row order used by every (6, 24) array in this package."""
PRODUCT_NAMES: tuple[str, ...] = tuple(product.name for product in PRODUCTS)
PRODUCT_INDEX: dict[str, int] = {name: index for index, name in enumerate(PRODUCT_NAMES)}
PRICE_SERIES: tuple[str, ...] = ("regup", "regdn", "rrs", "ecrs", "nspin")
"""AS clearing-price series: rrspfr and rrsffr share one RRS clearing price."""
UP_ROWS = np.array([product.direction == "up" for product in PRODUCTS])
DURATIONS_H = np.array([product.duration_h for product in PRODUCTS])
REGDN_ROW = PRODUCT_INDEX["regdn"]


@dataclass(frozen=True, eq=False)
class Prices:
    """One day's clearing prices: SPP per hour and MCPC per product and hour (read-only arrays)."""

    spp: np.ndarray
    """Settlement point price per hour, $/MWh, shape (24,)."""
    mcpc: np.ndarray
    """AS clearing price per product (PRODUCTS order) and hour, $/MW-h, shape (6, 24)."""

    @classmethod
    def from_series(cls, spp: Sequence[float], mcpc_by_series: Mapping[str, Sequence[float]]) -> Prices:
        """Prices from an SPP series and one MCPC series per entry of PRICE_SERIES."""
        spp_array = np.array(spp, dtype=float)
        mcpc = np.array([mcpc_by_series[product.price_series] for product in PRODUCTS], dtype=float)
        if spp_array.shape != (N_HOURS,) or mcpc.shape != (len(PRODUCTS), N_HOURS):
            raise ValueError(
                f"prices need 24 hourly values per series, got {spp_array.shape} and {mcpc.shape}"
            )
        spp_array.setflags(write=False)
        mcpc.setflags(write=False)
        return cls(spp_array, mcpc)


@dataclass(frozen=True)
class Curve:
    """An energy offer curve: MW (positive discharge) against price, both non-decreasing."""

    mw: tuple[float, ...]
    price: tuple[float, ...]

    def mw_at(self, price: float) -> float:
        """Cleared MW at a price: linear between points, the first MW below the curve, the last above it.

        At a price shared by several points (a vertical step) the largest of their MW clears, as an
        offer at or below the clearing price clears.
        """
        # Decision: at a step price the larger MW clears, matching "clears when its price is at or below".
        prices = self.price
        if price < prices[0]:
            return self.mw[0]
        last = len(prices) - 1
        i = 0
        while i < last and prices[i + 1] <= price:
            i += 1
        if i == last:
            return self.mw[last]
        share = (price - prices[i]) / (prices[i + 1] - prices[i])
        return self.mw[i] + share * (self.mw[i + 1] - self.mw[i])

    @classmethod
    def flat(cls, mw: float) -> Curve:
        """A curve that clears `mw` at every price."""
        return cls((mw, mw), (PRICE_FLOOR, PRICE_CAP))


def check_curve(points: object, battery: Battery) -> Curve:
    """A curve from `[[mw, price], ...]` points, after every market rule on curves.

    Rules: 2..10 points, each two finite numbers; MW within -charge_mw..discharge_mw; price within
    -250..5000 $/MWh; MW and price both non-decreasing. A curve need not span the battery's full range.

    Raises:
        CurveRuleError: names the rule and the offending point (points count from 0).
    """
    if not isinstance(points, Sequence) or isinstance(points, str):
        raise CurveRuleError(f"must be a list of [mw, price] points, got {type(points).__name__}")
    if not MIN_POINTS <= len(points) <= MAX_POINTS:
        raise CurveRuleError(f"needs {MIN_POINTS} to {MAX_POINTS} points, got {len(points)}")
    # Decision: the doc's "from max charge to max discharge" describes the range points may use, not a
    # requirement to reach both ends, so a flat curve ([[mw, -250], [mw, 5000]]) is a valid fixed schedule.
    pairs = [_point(index, point) for index, point in enumerate(points)]
    for index, (mw, price) in enumerate(pairs):
        _check_limits(index, mw, price, battery)
    for index in range(1, len(pairs)):
        (mw_before, price_before), (mw, price) = pairs[index - 1], pairs[index]
        if mw < mw_before:
            raise CurveRuleError(
                f"MW must be non-decreasing (point {index} has {mw:g} after {mw_before:g}); "
                "order points from most charging to most discharging"
            )
        if price < price_before:
            raise CurveRuleError(
                f"price must be non-decreasing (point {index} has {price:g} after {price_before:g}); "
                "a higher MW must come at the same or a higher price"
            )
    return Curve(tuple(mw for mw, _ in pairs), tuple(price for _, price in pairs))


def _point(index: int, point: object) -> tuple[float, float]:
    if (
        isinstance(point, Sequence)
        and not isinstance(point, str)
        and len(point) == 2
        and all(_is_number(value) for value in point)
    ):
        return float(point[0]), float(point[1])
    raise CurveRuleError(f"point {index} must be [mw, price] with two finite numbers, got {point!r}")


def _check_limits(index: int, mw: float, price: float, battery: Battery) -> None:
    if not -battery.charge_mw <= mw <= battery.discharge_mw:
        raise CurveRuleError(
            f"point {index} has MW {mw:g}, outside the battery's limits {-battery.charge_mw:g}.."
            f"{battery.discharge_mw:g} (negative charges, positive discharges)"
        )
    if not PRICE_FLOOR <= price <= PRICE_CAP:
        raise CurveRuleError(
            f"point {index} has price {price:g}, outside {PRICE_FLOOR:g}..{PRICE_CAP:g} $/MWh"
        )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def clear_as(offer_mw: np.ndarray, offer_price: np.ndarray, mcpc: np.ndarray) -> np.ndarray:
    """AS awards: each offer clears in full when its price is at or below its hour's MCPC.

    Args:
        offer_mw: Offered MW per product and hour, shape (6, 24).
        offer_price: Offer price per product and hour, NaN where nothing is offered.
        mcpc: Clearing price per product and hour.

    Returns:
        Awarded MW per product and hour, shape (6, 24).
    """
    with np.errstate(invalid="ignore"):
        return np.where(offer_price <= mcpc, offer_mw, 0.0)
