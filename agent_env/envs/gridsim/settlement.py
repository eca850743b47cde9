"""Clear, check and settle one day's offers against one day's prices, keeping every hour's detail."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.feasibility import TOLERANCE_MW, cut_awards, deliver_energy
from agent_env.envs.gridsim.hours import hour_label
from agent_env.envs.gridsim.market import PRODUCT_NAMES, Prices, clear_as
from agent_env.envs.gridsim.offers import Offers

IMBALANCE_ADDER = 100.0
"""$/MWh over SPP to buy back undelivered energy, and under SPP when unabsorbed energy is resold."""
AS_SHORTFALL_FLOOR = 50.0
"""AS MW that cannot be backed is charged max(MCPC, this) $/MW-h."""


@dataclass(frozen=True, eq=False)
class Settlement:
    """A settled day: per-hour arrays (index 0 is HE01) and the totals that make up the profit.

    profit = energy_revenue - imbalance_cost + as_revenue - as_penalty - degradation_cost, and
    hourly_profit sums to profit. Arrays of shape (6, 24) have one row per product in PRODUCTS order.
    """

    spp: np.ndarray
    mcpc: np.ndarray
    cleared_mw: np.ndarray
    """Net MW each hour's curve cleared at its SPP (positive discharge)."""
    delivered_mw: np.ndarray
    """Net MW the battery could deliver: cleared MW clipped to SoC and the end-of-day rule."""
    soc_mwh: np.ndarray
    """SoC at the 25 hour boundaries: the start of HE01 through the end of HE24."""
    awarded_mw: np.ndarray
    """AS MW cleared (price at or below MCPC); all of it is paid MCPC."""
    cut_mw: np.ndarray
    """AS MW the battery could not back, cut lowest MCPC first and charged max(MCPC, $50)."""
    hourly_profit: np.ndarray
    energy_revenue: float
    """DAM energy payment: sum of SPP x cleared MW."""
    imbalance_cost: float
    """Undelivered MWh bought back at SPP + $100, less unabsorbed MWh resold at SPP - $100."""
    as_revenue: float
    as_penalty: float
    degradation_cost: float
    """$ per MWh actually discharged (delivered, grid side)."""
    profit: float

    def shortfalls(self) -> list[str]:
        """One line per hour where energy was clipped or AS was cut, for a feasibility report."""
        lines = []
        for hour in range(len(self.spp)):
            gap = self.cleared_mw[hour] - self.delivered_mw[hour]
            if abs(gap) > TOLERANCE_MW:
                lines.append(
                    f"{hour_label(hour + 1)}: energy cleared {self.cleared_mw[hour]:.1f} MW but SoC allows "
                    f"{self.delivered_mw[hour]:.1f} MW; the gap settles at SPP {'+' if gap > 0 else '-'} $100"
                )
            for row, name in enumerate(PRODUCT_NAMES):
                if self.cut_mw[row, hour] > TOLERANCE_MW:
                    lines.append(
                        f"{hour_label(hour + 1)}: {name} award {self.awarded_mw[row, hour]:.1f} MW cannot be "
                        f"backed; {self.cut_mw[row, hour]:.1f} MW cut and charged max(MCPC, $50)/MW-h"
                    )
        return lines


def settle(offers: Offers, prices: Prices, battery: Battery) -> Settlement:
    """Clear offers at the prices, check feasibility, and settle, in the documented order.

    Energy first: each curve read at its hour's SPP, clipped to what SoC allows (see `deliver_energy`);
    then AS: offers at or below MCPC clear in full and what cannot be backed is cut lowest MCPC first.

    Args:
        offers: Checked offers from `parse_offers`.
        prices: The prices to clear against (realized, or the forecast for a what-if).
        battery: The battery.

    Returns:
        The settlement with per-hour detail and totals.
    """
    cleared = np.clip(offers.cleared_mw(prices.spp), -battery.charge_mw, battery.discharge_mw)
    delivered, soc = deliver_energy(cleared, battery)
    awarded = clear_as(offers.as_mw, offers.as_price, prices.mcpc)
    cut = cut_awards(awarded, delivered, soc, prices.mcpc, battery)
    gap = cleared - delivered
    # Decision: energy_revenue is the DAM payment on cleared MW and imbalance_cost the literal buy-back
    # (SPP + 100) or resale (SPP - 100) of the gap; together they equal SPP * delivered - 100 * |gap|.
    energy = prices.spp * cleared
    imbalance = prices.spp * gap + IMBALANCE_ADDER * np.abs(gap)
    as_revenue = (prices.mcpc * awarded).sum(axis=0)
    as_penalty = (np.maximum(prices.mcpc, AS_SHORTFALL_FLOOR) * cut).sum(axis=0)
    # Decision: degradation is charged on MWh actually delivered to the grid, not on cleared MWh.
    degradation = battery.degradation_per_mwh * np.maximum(delivered, 0.0)
    hourly = energy - imbalance + as_revenue - as_penalty - degradation
    return Settlement(
        spp=prices.spp,
        mcpc=prices.mcpc,
        cleared_mw=cleared,
        delivered_mw=delivered,
        soc_mwh=soc,
        awarded_mw=awarded,
        cut_mw=cut,
        hourly_profit=hourly,
        energy_revenue=float(energy.sum()),
        imbalance_cost=float(imbalance.sum()),
        as_revenue=float(as_revenue.sum()),
        as_penalty=float(as_penalty.sum()),
        degradation_cost=float(degradation.sum()),
        profit=float(hourly.sum()),
    )
