"""Generate one operating day from a seed: prices, AS prices, system conditions and their forecasts."""

from __future__ import annotations

from datetime import date, timedelta
from itertools import pairwise

import numpy as np

from agent_env.envs.gridsim.day import Band, Day, Drivers, Forecast, Outcome
from agent_env.envs.gridsim.market import N_HOURS, PRICE_CAP, PRICE_FLOOR, PRICE_SERIES
from agent_env.envs.gridsim.system import system_day

YEAR_START = date(2026, 1, 1)
"""Days fall in 2026, after ERCOT's real-time co-optimization with batteries went live (December 2025)."""
HISTORY_DAYS = 7
Z90 = 1.2816
"""The standard normal's 90th percentile: P10/P90 sit this many sigmas from P50."""
SEASON_MONTHS = {"winter": (12, 1, 2), "spring": (3, 4, 5), "summer": (6, 7, 8), "fall": (9, 10, 11)}
SEASON_OF_MONTH = {month: season for season, months in SEASON_MONTHS.items() for month in months}
# Decision: scarcity is likelier in summer and winter; the year-round rate is ~3% as the doc asks.
SCARCITY_RATE = {"winter": 0.04, "spring": 0.01, "summer": 0.06, "fall": 0.01}
# Decision: negative midday prices only in spring, on 12% of spring days, which is ~3% of all days.
NEGATIVE_MIDDAY_RATE = {"winter": 0.0, "spring": 0.12, "summer": 0.0, "fall": 0.0}
# Decision: AS quality order regup >= rrs (rrspfr = rrsffr) >= ecrs >= nspin; regdn is priced on its own.
AS_QUALITY_ORDER = ("nspin", "ecrs", "rrs", "regup")
AS_BASE_RANGE = {"regup": (4, 15), "regdn": (1, 10), "rrs": (3, 12), "ecrs": (2, 10), "nspin": (1, 8)}
"""Range of each AS price's daily base, $/MW-h."""
AS_ENERGY_SLOPE = {"regup": 0.08, "regdn": 0.02, "rrs": 0.065, "ecrs": 0.05, "nspin": 0.03}
"""$/MW-h of AS price per $/MWh of SPP above $30: AS prices rise with the energy price."""


def generate_day(seed: int) -> Day:
    """The operating day for a seed; the same seed gives the same day on every run.

    Args:
        seed: Any non-negative integer; it seeds `numpy.random.default_rng`.

    Returns:
        A day with realized prices and system conditions, their forecasts with P10/P50/P90 bands,
        and the realized SPP of the preceding week.
    """
    rng = np.random.default_rng(seed)
    when = YEAR_START + timedelta(days=int(rng.integers(365)))
    season = SEASON_OF_MONTH[when.month]
    kind = _draw_kind(rng, season)
    drivers = _draw_drivers(rng, season, kind)
    spp = _spp(rng, season, kind, drivers)
    mcpc = _mcpc(rng, spp)
    system = system_day(rng, season, kind, drivers)
    history = tuple(_series(_history_spp(rng, season, drivers)) for _ in range(HISTORY_DAYS))
    load, wind, solar = (
        _band(_relative_band(rng, realized, sigma), 1)
        for realized, sigma in ((system.load_mw, 0.03), (system.wind_mw, 0.15), (system.solar_mw, 0.10))
    )
    forecast = Forecast(
        date=when.isoformat(),
        season=season,
        spp=_spp_band(rng, spp, kind),
        mcpc=_mcpc_bands(rng, mcpc),
        load_mw=load,
        wind_mw=wind,
        solar_mw=solar,
        reserve_margin=_reserve_margin(system.thermal_mw, load, wind, solar),
        price_history=history,
    )
    outcome = Outcome(
        _series(spp),
        {name: _series(mcpc[name]) for name in PRICE_SERIES},
        _series(system.load_mw, 1),
        _series(system.wind_mw, 1),
        _series(system.solar_mw, 1),
    )
    return Day(seed, kind, forecast, outcome)


def _draw_kind(rng: np.random.Generator, season: str) -> str:
    draw = rng.random()
    if draw < SCARCITY_RATE[season]:
        return "scarcity"
    if draw < SCARCITY_RATE[season] + NEGATIVE_MIDDAY_RATE[season]:
        return "negative_midday"
    return "normal"


def _draw_drivers(rng: np.random.Generator, season: str, kind: str) -> Drivers:
    demand, wind = rng.beta(2, 2), rng.beta(3, 2) if season == "spring" else rng.beta(2, 2)
    sun = rng.beta(2, 3) if season == "winter" else rng.beta(4, 2)
    if kind == "scarcity":  # hot or cold, still evening: demand high, wind low
        demand, wind = 0.75 + 0.25 * demand, 0.3 * wind
    if kind == "negative_midday":  # sunny, windy, mild
        sun, wind, demand = 0.8 + 0.2 * sun, 0.6 + 0.4 * wind, 0.5 * demand
    return Drivers(float(demand), float(wind), float(sun))


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))


def _spp(rng: np.random.Generator, season: str, kind: str, d: Drivers) -> np.ndarray:
    """Realized SPP: overnight 20-35, morning ramp 30-60 (winter to 160), solar dip 0-20 (negative
    days -5 to -25), evening peak 50-150; scarcity days put HE18-20 at 500-5000."""
    overnight = 20 + 15 * _unit(0.5 * d.demand + 0.5 * (1 - d.wind) + rng.normal(0, 0.08))
    if season == "winter":
        morning = 30 + 130 * _unit(d.demand**2 + rng.normal(0, 0.08))
    else:
        morning = 30 + 30 * _unit(0.7 * d.demand + 0.3 * (1 - d.wind) + rng.normal(0, 0.08))
    if kind == "negative_midday":
        dip, dip_range = -5 - 20 * _unit(0.5 * d.sun + 0.5 * d.wind + rng.normal(0, 0.1)), (-25.0, -5.0)
    else:
        dip, dip_range = 20 * _unit(1 - 0.8 * d.sun - 0.2 * d.wind + rng.normal(0, 0.08)), (0.0, 20.0)
    evening = 50 + 100 * _unit(0.7 * d.demand + 0.3 * (1 - d.wind) + rng.normal(0, 0.08))
    spp = np.array([overnight, morning, dip, evening]) @ _WEIGHTS
    spp = spp * np.exp(rng.normal(0, 0.04, N_HOURS)) + rng.normal(0, 0.5, N_HOURS)
    spp[0:6] = np.clip(spp[0:6], 20, 35)
    spp[7] = np.clip(spp[7], 30, 160 if season == "winter" else 60)
    spp[10:15] = np.clip(spp[10:15], *dip_range)
    spp[17:20] = np.clip(spp[17:20], 50, 150)
    if kind == "scarcity":
        spp[17:20] = _scarcity_peak(rng)
    return np.clip(spp, PRICE_FLOOR, PRICE_CAP)


# Each hour's price as weights on the four anchors (rows: overnight, morning ramp, solar dip, evening peak).
# fmt: off
_WEIGHTS = np.hstack([
    np.array([  # HE01 .. HE12
        [1.0, .97, .95, .94, .96, 1.0, .50, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, .50, 1.0, .85, .40, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, .15, .60, 1.0, 1.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    ]),
    np.array([  # HE13 .. HE24
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, .50, .75, 1.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, .65, .30, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, .35, .70, .90, 1.0, .95, .80, .50, .25, 0.0],
    ]),
])
# fmt: on


def _scarcity_peak(rng: np.random.Generator) -> np.ndarray:
    peak = float(np.exp(rng.uniform(np.log(800), np.log(5000))))
    shoulders = peak * rng.uniform(0.3, 1.0, 2)
    return np.clip([shoulders[0], peak, shoulders[1]], 500, 5000)


def _history_spp(rng: np.random.Generator, season: str, today: Drivers) -> np.ndarray:
    nearby = Drivers(*(_unit(value + rng.normal(0, 0.15)) for value in (today.demand, today.wind, today.sun)))
    return _spp(rng, season, _draw_kind(rng, season), nearby)


def _mcpc(rng: np.random.Generator, spp: np.ndarray) -> dict[str, np.ndarray]:
    """AS clearing prices: a base of $1-15 by product, noise, and a term rising with SPP; then the
    quality order is imposed bottom up so a better product never clears below a lesser one."""
    mcpc = {}
    for name in PRICE_SERIES:
        base = rng.uniform(*AS_BASE_RANGE[name]) * np.exp(rng.normal(0, 0.1, N_HOURS))
        mcpc[name] = base + AS_ENERGY_SLOPE[name] * np.maximum(spp - 30, 0)
    # Decision: regdn also rises as energy gets cheap (below $5), when charging headroom is scarce.
    mcpc["regdn"] = mcpc["regdn"] + 0.3 * np.maximum(5 - spp, 0)
    for lower, higher in pairwise(AS_QUALITY_ORDER):
        mcpc[higher] = np.maximum(mcpc[higher], mcpc[lower])
    return {name: np.clip(values, 1.0, PRICE_CAP) for name, values in mcpc.items()}


def _errors(rng: np.random.Generator, rho: float = 0.7) -> np.ndarray:
    """Standard normal forecast errors, correlated from hour to hour (AR(1) with coefficient rho)."""
    shocks = rng.normal(0, 1, N_HOURS)
    errors = np.empty(N_HOURS)
    errors[0] = shocks[0]
    for hour in range(1, N_HOURS):
        errors[hour] = rho * errors[hour - 1] + np.sqrt(1 - rho**2) * shocks[hour]
    return errors


# Decision: forecast P50 = realized + AR(1) error (sigma 10% + $2); P10/P90 sit 1.28 sigma from P50 with sigma
# taken from P50 itself, so the band never leaks the realized value; a scarcity spike is forecast from
# exp(N(-0.3, 0.5)) times its size (median 0.74x, 80% within 0.39x..1.4x) with a +-64% band.
def _spp_band(rng: np.random.Generator, spp: np.ndarray, kind: str) -> Band:
    sigma = 0.10 * np.abs(spp) + 2.0
    p50 = spp + sigma * _errors(rng)
    if kind == "scarcity":  # a spike is seen coming, but its size is a guess
        p50[17:20] = spp[17:20] * np.exp(rng.normal(-0.3, 0.5, 3))
    spread = Z90 * np.where(p50 > 300, 0.5 * p50, 0.10 * np.abs(p50) + 2.0)
    return _band((p50 - spread, p50, p50 + spread), 2, PRICE_FLOOR, PRICE_CAP)


def _mcpc_bands(rng: np.random.Generator, mcpc: dict[str, np.ndarray]) -> dict[str, Band]:
    # One error per hour for all up products keeps the forecast in the same quality order.
    up_error, down_error = _errors(rng), _errors(rng)
    bands = {}
    for name in PRICE_SERIES:
        p50 = mcpc[name] * np.exp(0.15 * (down_error if name == "regdn" else up_error))
        spread = np.exp(Z90 * 0.15)
        bands[name] = _band((p50 / spread, p50, p50 * spread), 2, 0.0, PRICE_CAP)
    return bands


def _relative_band(rng: np.random.Generator, realized: np.ndarray, sigma: float) -> tuple[np.ndarray, ...]:
    p50 = np.maximum(realized * (1 + sigma * _errors(rng)), 0.0)
    return p50 * (1 - Z90 * sigma), p50, p50 * (1 + Z90 * sigma)


def _band(values: tuple[np.ndarray, ...], digits: int, low: float = 0.0, high: float = np.inf) -> Band:
    p10, p50, p90 = (_series(np.clip(series, low, high), digits) for series in values)
    return Band(p10, p50, p90)


def _reserve_margin(thermal_mw: float, load: Band, wind: Band, solar: Band) -> tuple[float, ...]:
    load_p50 = np.array(load.p50)
    return _series((thermal_mw + np.array(wind.p50) + np.array(solar.p50) - load_p50) / load_p50, 3)


def _series(values: np.ndarray, digits: int = 2) -> tuple[float, ...]:
    return tuple(round(float(value), digits) for value in values)
