"""System conditions of a generated day: load, wind, solar and available thermal capacity, in MW."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agent_env.envs.gridsim.day import Drivers
from agent_env.envs.gridsim.market import N_HOURS

HE = np.arange(1, N_HOURS + 1)
PEAK_LOAD_MW = {"winter": 62_000.0, "spring": 52_000.0, "summer": 78_000.0, "fall": 56_000.0}
SOLAR_MW = {"winter": 16_000.0, "spring": 25_000.0, "summer": 28_000.0, "fall": 22_000.0}
WIND_MW = 40_000.0
THERMAL_MW = {"winter": 66_000.0, "spring": 54_000.0, "summer": 72_000.0, "fall": 58_000.0}
SCARCITY_HOUR = 18
"""Index of HE19, where a scarcity day's reserve margin is thinnest."""


@dataclass(frozen=True, eq=False)
class SystemDay:
    """Realized hourly load, wind and solar, and the thermal capacity available all day (MW)."""

    load_mw: np.ndarray
    wind_mw: np.ndarray
    solar_mw: np.ndarray
    thermal_mw: float


def system_day(rng: np.random.Generator, season: str, kind: str, drivers: Drivers) -> SystemDay:
    """System conditions consistent with the day's drivers, hence with its prices.

    More demand raises load (and the evening peak price); more sun deepens the solar dip; more wind
    lowers prices overnight; a scarcity day leaves only a 1-6% reserve margin at HE19.
    """
    load = PEAK_LOAD_MW[season] * (0.85 + 0.25 * drivers.demand) * _load_shape(season)
    load = load * (1 + 0.01 * rng.normal(0, 1, N_HOURS))
    daylight = np.where((HE >= 8) & (HE <= 19), np.exp(-0.5 * ((HE - 13.5) / 2.8) ** 2), 0.0)
    solar = SOLAR_MW[season] * (0.25 + 0.75 * drivers.sun) * daylight * (1 + 0.05 * rng.normal(0, 1, N_HOURS))
    night_lift = 1 + 0.25 * np.cos(2 * np.pi * (HE - 3) / N_HOURS)
    wind = WIND_MW * (0.1 + 0.75 * drivers.wind) * night_lift * (1 + 0.08 * rng.normal(0, 1, N_HOURS))
    solar, wind = np.maximum(solar, 0.0), np.clip(wind, 0.0, WIND_MW)
    thermal = THERMAL_MW[season] * rng.uniform(0.92, 1.0)
    if kind == "scarcity":
        net = load[SCARCITY_HOUR] - wind[SCARCITY_HOUR] - solar[SCARCITY_HOUR]
        thermal = net + load[SCARCITY_HOUR] * rng.uniform(0.01, 0.06)
    return SystemDay(load, wind, solar, float(thermal))


def _load_shape(season: str) -> np.ndarray:
    """Load through the day as a share of the season's peak."""

    def bump(center: float, width: float) -> np.ndarray:
        return np.exp(-0.5 * ((HE - center) / width) ** 2)

    if season == "summer":
        return 0.72 + 0.28 * bump(17.5, 4.0)
    if season == "winter":
        return 0.78 + 0.14 * bump(8, 1.5) + 0.2 * bump(19, 2.5)
    return 0.76 + 0.1 * bump(9, 2.0) + 0.2 * bump(19, 3.0)
