"""The upper bound UB: the perfect-foresight optimum of the settlement rules, as a MILP solved by HiGHS."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array, csr_array

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.feasibility import REGDN_DURATION_H
from agent_env.envs.gridsim.market import (
    DURATIONS_H,
    N_HOURS,
    PRICE_CAP,
    PRICE_FLOOR,
    PRODUCTS,
    REGDN_ROW,
    UP_ROWS,
    Prices,
)
from agent_env.errors import AgentEnvError

T = N_HOURS
K = len(PRODUCTS)
CHARGE, DISCHARGE, MODE, SOC, AWARD = 0, T, 2 * T, 3 * T, 4 * T
N_VARS = 4 * T + K * T
MIP_REL_GAP = 1e-9
"""Tight enough that the attained objective is the optimum to well under a cent on any day we generate."""


class BoundSolveError(AgentEnvError, RuntimeError):
    """HiGHS did not return an optimal solution; the day's prices or the battery are likely malformed."""

    code = "bound_solve"


@dataclass(frozen=True, eq=False)
class Bound:
    """The perfect-foresight optimum: its profit and the dispatch that attains it."""

    value: float
    """Optimal profit, $; settling `net_mw` and `awards_mw` as offers earns exactly this."""
    net_mw: np.ndarray
    """Net MW per hour, positive discharging; never charging and discharging in the same hour."""
    soc_mwh: np.ndarray
    """SoC at the 25 hour boundaries."""
    awards_mw: np.ndarray
    """AS awards per product (PRODUCTS order) and hour, shape (6, 24)."""

    def offers(self, battery: Battery) -> dict[str, list[dict[str, Any]]]:
        """Plain-dict offers that reproduce this dispatch: a flat curve per hour, AS offers at $0.

        Settled at the prices the bound was solved for, they earn `value` (the bound is attainable).
        """
        net = np.clip(self.net_mw, -battery.charge_mw, battery.discharge_mw)  # solver noise past a bound
        curves = [
            {"hours": [hour + 1], "points": [[mw, PRICE_FLOOR], [mw, PRICE_CAP]]}
            for hour, mw in enumerate(net.tolist())
            if mw != 0
        ]
        caps = [product.cap_mw(battery) for product in PRODUCTS]
        as_offers = [
            {"product": product.name, "hours": [hour + 1], "mw": min(mw, caps[row]), "price": 0}
            for row, product in enumerate(PRODUCTS)
            for hour, mw in enumerate(self.awards_mw[row].tolist())
            if mw > 0
        ]
        return {"curves": curves, "as_offers": as_offers}


def upper_bound(prices: Prices, battery: Battery) -> Bound:
    """Solve the day with perfect foresight under exactly the settlement's feasibility rules.

    Variables per hour: charge MW, discharge MW, a binary mode (1 = may discharge, 0 = may charge),
    end-of-hour SoC, and one award per AS product bounded by its cap. Constraints: the SoC path,
    power headroom p + UP <= discharge_mw and p - regdn >= -charge_mw, energy reserved at both ends of
    every hour, SoC within limits, and the day ending at or above its starting SoC.
    Objective: sum SPP * p + sum MCPC * award - degradation * discharge, the settlement's profit with
    no shortfalls.

    Raises:
        BoundSolveError: HiGHS reported anything but an optimal solution.
    """
    constraint, bounds, integrality = _model(battery)
    objective = np.zeros(N_VARS)
    objective[CHARGE : CHARGE + T] = prices.spp
    objective[DISCHARGE : DISCHARGE + T] = -prices.spp + battery.degradation_per_mwh
    objective[AWARD:] = -prices.mcpc.ravel()
    result = milp(
        objective,
        integrality=integrality,
        bounds=bounds,
        constraints=constraint,
        options={"mip_rel_gap": MIP_REL_GAP},
    )
    if result.status != 0 or result.x is None:
        raise BoundSolveError(
            f"HiGHS could not solve the bound: {result.message}; check the prices are finite"
        )
    x = result.x
    soc = np.concatenate(([battery.soc_start_mwh], x[SOC : SOC + T]))
    return Bound(
        float(-result.fun),
        x[DISCHARGE : DISCHARGE + T] - x[CHARGE : CHARGE + T],
        soc,
        x[AWARD:].reshape(K, T),
    )


@cache
def _model(battery: Battery) -> tuple[LinearConstraint, Bounds, np.ndarray]:
    rows = _Rows()
    for t in range(T):
        _hour_rows(rows, t, battery)
    constraint = LinearConstraint(rows.matrix(), rows.lower, rows.upper)
    lower = np.zeros(N_VARS)
    upper = np.concatenate(
        [
            np.full(T, battery.charge_mw),
            np.full(T, battery.discharge_mw),
            np.ones(T),
            np.full(T, battery.soc_max_mwh),
            np.repeat([product.cap_mw(battery) for product in PRODUCTS], T),
        ]
    )
    lower[SOC : SOC + T] = battery.soc_min_mwh
    # The doc's assumed rule, also enforced by scoring: the day ends with SoC at least where it began.
    lower[SOC + T - 1] = max(battery.soc_min_mwh, battery.soc_start_mwh)
    integrality = np.zeros(N_VARS)
    integrality[MODE : MODE + T] = 1
    return constraint, Bounds(lower, upper), integrality


def _hour_rows(rows: _Rows, t: int, b: Battery) -> None:
    c, d, u, e = CHARGE + t, DISCHARGE + t, MODE + t, SOC + t
    up = [AWARD + k * T + t for k in range(K) if UP_ROWS[k]]
    regdn = AWARD + REGDN_ROW * T + t
    reserve = [-DURATIONS_H[k] / b.discharge_efficiency for k in range(K) if UP_ROWS[k]]
    headroom = REGDN_DURATION_H * b.charge_efficiency
    start = b.soc_start_mwh if t == 0 else 0.0  # E_{t-1} is a constant in the first hour
    before = [] if t == 0 else [e - 1]
    rows.add({d: 1, u: -b.discharge_mw}, -np.inf, 0)  # discharge only in discharge mode (u = 1)
    rows.add({c: 1, u: b.charge_mw}, -np.inf, b.charge_mw)  # charge only in charge mode (u = 0)
    # SoC path: E_t - E_{t-1} - eff_c * c + d / eff_d = 0
    rows.add(
        {e: 1, **{i: -1 for i in before}, c: -b.charge_efficiency, d: 1 / b.discharge_efficiency},
        start,
        start,
    )
    rows.add({d: 1, c: -1, **dict.fromkeys(up, 1)}, -np.inf, b.discharge_mw)  # p + UP <= Pdis
    rows.add({c: 1, d: -1, regdn: 1}, -np.inf, b.charge_mw)  # p - regdn >= -Pch
    for soc_cols, constant in (([e], 0.0), (before, start)):  # energy reserved at both ends of the hour
        rows.add(
            {**dict.fromkeys(soc_cols, 1), **dict(zip(up, reserve, strict=True))},
            b.soc_min_mwh - constant,
            np.inf,
        )
        rows.add({**dict.fromkeys(soc_cols, 1), regdn: headroom}, -np.inf, b.soc_max_mwh - constant)


class _Rows:
    """Sparse constraint rows collected one at a time."""

    def __init__(self) -> None:
        self.cols: list[int] = []
        self.row_ids: list[int] = []
        self.values: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, coefficients: dict[int, float], lower: float, upper: float) -> None:
        row = len(self.lower)
        for col, value in coefficients.items():
            self.row_ids.append(row)
            self.cols.append(col)
            self.values.append(value)
        self.lower.append(lower)
        self.upper.append(upper)

    def matrix(self) -> csr_array:
        shape = (len(self.lower), N_VARS)
        return csr_array(coo_array((self.values, (self.row_ids, self.cols)), shape=shape))
