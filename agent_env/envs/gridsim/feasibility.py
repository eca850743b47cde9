"""Physical feasibility: cleared energy clipped to what SoC allows, then AS awards cut to what SoC backs."""

from __future__ import annotations

import numpy as np

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.market import DURATIONS_H, N_HOURS, REGDN_ROW, UP_ROWS

TOLERANCE_MW = 1e-6
"""Excess below this is solver noise, not a shortfall; nothing is clipped or cut for it."""
REGDN_DURATION_H = 0.5
UP_ROW_INDEX = np.flatnonzero(UP_ROWS)


def deliver_energy(cleared_mw: np.ndarray, battery: Battery) -> tuple[np.ndarray, np.ndarray]:
    """The net MW the battery actually delivers, and its SoC path.

    Hour by hour, cleared MW is clipped to the power limits and to what the SoC at the start of the
    hour allows (E stays within soc_min..soc_max). Then, if the day would end below the starting SoC,
    discharges are cut from the last discharging hour backwards until it does not.

    Args:
        cleared_mw: Net MW cleared per hour, positive discharging.
        battery: The battery.

    Returns:
        (delivered MW per hour, SoC at each of the 25 hour boundaries).
    """
    delivered = np.clip(np.asarray(cleared_mw, dtype=float), -battery.charge_mw, battery.discharge_mw)
    soc = battery.soc_start_mwh
    for hour in range(len(delivered)):
        most = max(0.0, (soc - battery.soc_min_mwh) * battery.discharge_efficiency)
        least = -max(0.0, (battery.soc_max_mwh - soc) / battery.charge_efficiency)
        delivered[hour] = min(max(delivered[hour], least), most)
        soc = battery.soc_after(soc, float(delivered[hour]))
    _restore_end_soc(delivered, battery.soc_start_mwh - soc, battery)
    return delivered, battery.soc_path(delivered)


def _restore_end_soc(delivered: np.ndarray, deficit_mwh: float, battery: Battery) -> None:
    # Decision: scoring enforces the doc's "day must end with SoC at least where it began" as part of
    # "clipped to what SoC allows", so the scored dispatch is always one the upper bound may choose.
    # Cutting the latest discharge first keeps every later SoC at or below the start, hence feasible.
    for hour in range(len(delivered) - 1, -1, -1):
        if deficit_mwh * battery.discharge_efficiency <= TOLERANCE_MW:
            return
        if delivered[hour] > 0:
            cut = min(float(delivered[hour]), deficit_mwh * battery.discharge_efficiency)
            delivered[hour] -= cut
            deficit_mwh -= cut / battery.discharge_efficiency


def cut_awards(
    awarded_mw: np.ndarray, delivered_mw: np.ndarray, soc_mwh: np.ndarray, mcpc: np.ndarray, battery: Battery
) -> np.ndarray:
    """MW of each AS award the battery cannot back, given its delivered energy.

    Per hour: up products need p + UP <= discharge_mw and, at both ends of the hour,
    E >= soc_min + sum_k D_k * award_k / eff_discharge; regdn needs p - regdn >= -charge_mw and
    E <= soc_max - 0.5 * regdn * eff_charge. What breaks a limit is cut from the award with the lowest
    MCPC first (ties in PRODUCTS order), each cut just large enough to meet every limit it helps.

    Returns:
        Cut MW per product and hour, shape (6, 24).
    """
    cut = np.zeros_like(awarded_mw)
    for hour in range(N_HOURS):
        low = min(soc_mwh[hour], soc_mwh[hour + 1])
        high = max(soc_mwh[hour], soc_mwh[hour + 1])
        cut[:, hour] = _cut_hour(
            awarded_mw[:, hour], float(delivered_mw[hour]), low, high, mcpc[:, hour], battery
        )
    return cut


def _cut_hour(
    awarded: np.ndarray, net_mw: float, low_soc: float, high_soc: float, mcpc: np.ndarray, battery: Battery
) -> np.ndarray:
    # Decision: "lowest MCPC first" orders the up products within the hour (ties in PRODUCTS order) and
    # cuts each only as much as the limits still need; regdn has limits of its own and is cut alone.
    cut = np.zeros_like(awarded)
    regdn_room = min(
        battery.charge_mw + net_mw,
        (battery.soc_max_mwh - high_soc) / (REGDN_DURATION_H * battery.charge_efficiency),
    )
    cut[REGDN_ROW] = _excess(awarded[REGDN_ROW], max(0.0, regdn_room))
    power_excess = awarded[UP_ROWS].sum() - (battery.discharge_mw - net_mw)
    energy_excess = (DURATIONS_H * awarded)[UP_ROWS].sum() - (
        low_soc - battery.soc_min_mwh
    ) * battery.discharge_efficiency
    for row in UP_ROW_INDEX[np.argsort(mcpc[UP_ROWS], kind="stable")]:
        if power_excess <= TOLERANCE_MW and energy_excess <= TOLERANCE_MW:
            break
        need = max(power_excess, energy_excess / DURATIONS_H[row], 0.0)
        cut[row] = min(float(awarded[row]), need)
        power_excess -= cut[row]
        energy_excess -= DURATIONS_H[row] * cut[row]
    return cut


def _excess(award: float, room: float) -> float:
    return award - room if award - room > TOLERANCE_MW else 0.0
