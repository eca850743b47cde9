"""One operating day as data: the conditions it was drawn from, what the desk sees before the market (forecast) and
what happened (outcome)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_env.envs.gridsim.market import PRICE_SERIES, Prices

Series = tuple[float, ...]
"""24 hourly values, index 0 is HE01."""
DAY_KINDS = ("normal", "scarcity", "negative_midday")


@dataclass(frozen=True)
class Drivers:
    """The day's latent conditions in [0, 1]: demand, wind and sun, which set both prices and system."""

    demand: float
    wind: float
    sun: float


@dataclass(frozen=True)
class Band:
    """A forecast with its P10/P50/P90 band, hour by hour; p10 <= p50 <= p90 in every hour."""

    p10: Series
    p50: Series
    p90: Series

    def to_dict(self) -> dict[str, list[float]]:
        """The band as plain JSON-ready lists."""
        return {"p10": list(self.p10), "p50": list(self.p50), "p90": list(self.p90)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Sequence[float]]) -> Band:
        """A band from `to_dict` output."""
        return cls(tuple(data["p10"]), tuple(data["p50"]), tuple(data["p90"]))


@dataclass(frozen=True)
class Forecast:
    """Everything the desk may see before it offers: no realized values of the day itself."""

    date: str
    """ISO date of the operating day."""
    season: str
    spp: Band
    """DAM settlement point price forecast, $/MWh."""
    mcpc: Mapping[str, Band]
    """AS clearing-price forecast per series in PRICE_SERIES (rrspfr and rrsffr share "rrs"), $/MW-h."""
    load_mw: Band
    wind_mw: Band
    solar_mw: Band
    reserve_margin: Series
    """Forecast reserve margin, (available capacity + wind + solar - load) / load, as a fraction."""
    price_history: tuple[Series, ...]
    """Realized hourly SPP of the preceding days, oldest first; the last is the day before."""

    def prices(self) -> Prices:
        """The P50 forecast as prices, for settling offers at the forecast."""
        return Prices.from_series(self.spp.p50, {name: self.mcpc[name].p50 for name in PRICE_SERIES})


@dataclass(frozen=True)
class Outcome:
    """What the day turned out to be; only settlement and the bound read it."""

    spp: Series
    mcpc: Mapping[str, Series]
    load_mw: Series
    wind_mw: Series
    solar_mw: Series

    def prices(self) -> Prices:
        """The realized prices the day clears and settles at."""
        return Prices.from_series(self.spp, self.mcpc)


@dataclass(frozen=True)
class Day:
    """One generated operating day."""

    seed: int
    kind: str
    """One of DAY_KINDS; a label for analysis, not shown to the desk."""
    forecast: Forecast
    outcome: Outcome

    def to_dict(self) -> dict[str, Any]:
        """The day as plain JSON-ready data; `Day.from_dict` inverts it exactly."""
        f, o = self.forecast, self.outcome
        return {
            "seed": self.seed,
            "kind": self.kind,
            "forecast": {
                "date": f.date,
                "season": f.season,
                "spp": f.spp.to_dict(),
                "mcpc": {name: f.mcpc[name].to_dict() for name in PRICE_SERIES},
                "load_mw": f.load_mw.to_dict(),
                "wind_mw": f.wind_mw.to_dict(),
                "solar_mw": f.solar_mw.to_dict(),
                "reserve_margin": list(f.reserve_margin),
                "price_history": [list(day) for day in f.price_history],
            },
            "outcome": {
                "spp": list(o.spp),
                "mcpc": {name: list(o.mcpc[name]) for name in PRICE_SERIES},
                "load_mw": list(o.load_mw),
                "wind_mw": list(o.wind_mw),
                "solar_mw": list(o.solar_mw),
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Day:
        """A day from `to_dict` output."""
        f, o = data["forecast"], data["outcome"]
        forecast = Forecast(
            date=f["date"],
            season=f["season"],
            spp=Band.from_dict(f["spp"]),
            mcpc={name: Band.from_dict(f["mcpc"][name]) for name in PRICE_SERIES},
            load_mw=Band.from_dict(f["load_mw"]),
            wind_mw=Band.from_dict(f["wind_mw"]),
            solar_mw=Band.from_dict(f["solar_mw"]),
            reserve_margin=tuple(f["reserve_margin"]),
            price_history=tuple(tuple(day) for day in f["price_history"]),
        )
        outcome = Outcome(
            spp=tuple(o["spp"]),
            mcpc={name: tuple(o["mcpc"][name]) for name in PRICE_SERIES},
            load_mw=tuple(o["load_mw"]),
            wind_mw=tuple(o["wind_mw"]),
            solar_mw=tuple(o["solar_mw"]),
        )
        return cls(int(data["seed"]), str(data["kind"]), forecast, outcome)
