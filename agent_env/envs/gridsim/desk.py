"""The GridSim desk as an `Environment`: read forecasts, submit and manage DAM offers, end the turn to be scored."""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import TypedDict

from agent_env.environment import Environment
from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.bound import upper_bound
from agent_env.envs.gridsim.bundle import load_bundle
from agent_env.envs.gridsim.day import Day
from agent_env.envs.gridsim.hours import hour_label, parse_hours
from agent_env.envs.gridsim.market import N_HOURS, PRICE_CAP, PRICE_FLOOR, PRODUCTS
from agent_env.envs.gridsim.offers import Offers, parse_offers
from agent_env.envs.gridsim.scenario import generate_day
from agent_env.envs.gridsim.scoring import Score, forecast_settlement, score_offers
from agent_env.errors import ToolError
from agent_env.tools import tool

# Every array is bounded by what one operating day can hold (24 hours), so the costliest call the schema lets through
# stays small (docs/server.md gives its CPU time): an hour list names at most 24 distinct hours (a repeat is read
# once, so a longer list only repeats), each hour takes at most one curve, and each product at most one AS offer.
Hour = Annotated[int, Field(ge=1, le=N_HOURS)]
HourSet = Annotated[
    str | Annotated[list[Hour], Field(max_length=N_HOURS)],
    Field(description='"HE07", "HE07-HE10", "all", or hours like [7, 8]'),
]
ProductName = Literal["regup", "regdn", "rrspfr", "rrsffr", "ecrs", "nspin"]


class CurveOffer(TypedDict):
    hours: HourSet
    points: Annotated[
        list[tuple[float, float]],
        Field(min_length=2, max_length=10, description="[mw, price] from max charge (-MW) to max discharge"),
    ]


class ASOffer(TypedDict):
    product: ProductName
    hours: HourSet
    mw: Annotated[float, Field(ge=0)]
    price: Annotated[float, Field(description="$/MW-h; clears when at or below the MCPC")]


Curves = Annotated[
    list[CurveOffer], Field(max_length=N_HOURS, description="Energy offer curves, one per hour set")
]
ASOffers = Annotated[
    list[ASOffer], Field(max_length=len(PRODUCTS) * N_HOURS, description="Ancillary-service offers")
]


@lru_cache(maxsize=256)
def seeded_task(seed: int, battery: Battery) -> tuple[Day, float]:
    """A fresh day from the generator and its bound (the MIP is solved once per seed and battery)."""
    day = generate_day(seed)
    return day, upper_bound(day.outcome.prices(), battery).value


class GridSimDesk(Environment):
    """The day-ahead trading desk for one grid-scale battery in an ERCOT-style market.

    Args:
        bundle: The bench bundle whose tasks `reset(task_id=...)` loads (`desk-v4`).
    """

    def __init__(self, bundle: str = "desk-v4") -> None:
        self.bundle = load_bundle(bundle)
        self.battery = self.bundle.battery
        self.task_id = ""
        self.day: Day | None = None
        self.bound = 0.0
        self.curves: list[dict[str, Any]] = []
        self.as_offers: list[dict[str, Any]] = []
        self.score: Score | None = None

    def reset(self, task_id: str | None = None, seed: int | None = None, **row: Any) -> str:
        """Start the day of a bundle task (`task_id="desk-v4/test/0003"`) or of a fresh seed (`seed=7`)."""
        if task_id is not None:
            entry = self.bundle.entry(task_id)
            self.task_id, self.day, self.bound, self.battery = (
                task_id,
                entry.day,
                entry.bound,
                self.bundle.battery,
            )
        elif seed is not None:
            self.battery = Battery()
            self.day, self.bound = seeded_task(int(seed), self.battery)
            self.task_id = f"seed/{int(seed)}"
        else:
            raise ValueError(
                "reset needs a task: pass task_id (e.g. 'desk-v4/train/0000') or seed (an integer)"
            )
        self.curves, self.as_offers, self.score = [], [], None
        b = self.battery
        return (
            f"You are the day-ahead trader for one {b.discharge_mw:g} MW / {b.capacity_mwh:g} MWh battery on "
            f"{self.day.forecast.date} ({self.day.forecast.season}). Read the forecasts, submit energy offer "
            "curves and AS offers with submit_dam_offers (check_offers tries them first), then call end_turn. "
            "The day clears at realized prices; your reward is profit over the best achievable profit."
        )

    def reward(self) -> float:
        return self.score.reward if self.score is not None else 0.0

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        # TRL appends the reset observation to this text as it is: end it with a paragraph break.
        prompt = "Trade tomorrow's day-ahead market for the battery; you are scored on profit.\n\n"
        return [
            {"prompt": [{"role": "user", "content": prompt}], "task_id": task_id}
            for task_id in self.bundle.task_ids(split)
        ]

    @tool
    def desk_brief(self) -> dict[str, Any]:
        """The day, the battery, the market rules and how the reward is computed."""
        day, b = self._day(), self.battery
        return {
            "date": day.forecast.date,
            "season": day.forecast.season,
            "battery": self.battery_status(),
            "rules": [
                "Hours are HE01..HE24; an hour set is 'HE07', 'HE07-HE10', 'all' or a list like [7, 8].",
                "Energy: one curve per hour set, 2-10 [mw, price] points from -charge to +discharge MW, MW and "
                f"price non-decreasing, price {PRICE_FLOOR:g}..{PRICE_CAP:g} $/MWh; cleared MW is the curve "
                "read at the hour's price.",
                "AS: an offer clears in full when its price is at or below the hour's MCPC; rrspfr and rrsffr "
                "share the RRS price. Awards need SoC to back them (as_product_rules).",
                "Energy SoC cannot deliver is bought back at SPP+$100; AS MW that cannot be backed pays "
                "max(MCPC, $50)/MW-h. The day must end with SoC at least where it began.",
                f"Degradation costs ${b.degradation_per_mwh:g} per MWh discharged.",
            ],
            "reward": "clip(profit / best achievable profit with perfect foresight, 0, 1)",
        }

    @tool
    def battery_status(self) -> dict[str, float]:
        """The battery's limits, efficiencies and state of charge at the start of the day."""
        b = self.battery
        return {
            "charge_mw": b.charge_mw,
            "discharge_mw": b.discharge_mw,
            "capacity_mwh": b.capacity_mwh,
            "soc_start_mwh": b.soc_start_mwh,
            "soc_min_mwh": b.soc_min_mwh,
            "soc_max_mwh": b.soc_max_mwh,
            "charge_efficiency": b.charge_efficiency,
            "discharge_efficiency": b.discharge_efficiency,
        }

    @tool
    def dam_price_forecast(self, hours: HourSet = "all", bands: bool = False) -> dict[str, Any]:
        """The DAM settlement point price forecast, $/MWh, by hour.

        Args:
            hours: Which hours.
            bands: Also give the P10 and P90 band.
        """
        spp = self._day().forecast.spp
        selected = parse_hours(hours)
        series = {"p50": spp.p50, **({"p10": spp.p10, "p90": spp.p90} if bands else {})}
        return {name: _by_hour(values, selected) for name, values in series.items()}

    @tool
    def as_price_forecast(self, product: ProductName | None = None, hours: HourSet = "all") -> dict[str, Any]:
        """The AS clearing price (MCPC) forecast, P50 in $/MW-h, by product and hour.

        Args:
            product: One product, or all of them when omitted.
            hours: Which hours.
        """
        mcpc, selected = self._day().forecast.mcpc, parse_hours(hours)
        chosen = [p for p in PRODUCTS if product in (None, p.name)]
        return {p.name: _by_hour(mcpc[p.price_series].p50, selected) for p in chosen}

    @tool
    def system_conditions(self, hours: HourSet = "all") -> dict[str, Any]:
        """Forecast load, wind and solar (MW, P50) and reserve margin by hour.

        Args:
            hours: Which hours.
        """
        forecast, selected = self._day().forecast, parse_hours(hours)
        return {
            "load_mw": _by_hour(forecast.load_mw.p50, selected),
            "wind_mw": _by_hour(forecast.wind_mw.p50, selected),
            "solar_mw": _by_hour(forecast.solar_mw.p50, selected),
            "reserve_margin": _by_hour(forecast.reserve_margin, selected),
        }

    @tool
    def price_history(self, days: Annotated[int, Field(ge=1, le=7)] = 7) -> dict[str, Any]:
        """Realized hourly SPP of the preceding days, most recent last.

        Args:
            days: How many days back.
        """
        history = self._day().forecast.price_history[-days:]
        return {f"day_minus_{len(history) - i}": [round(p, 1) for p in day] for i, day in enumerate(history)}

    @tool
    def as_product_rules(self) -> dict[str, Any]:
        """Each AS product's direction, the SoC hours an award must be backed by, and its MW cap."""
        return {
            p.name: {"direction": p.direction, "duration_h": p.duration_h, "cap_mw": p.cap_mw(self.battery)}
            for p in PRODUCTS
        }

    @tool
    def check_offers(self, curves: Curves, as_offers: ASOffers = []) -> dict[str, Any]:  # noqa: B006 (never mutated)
        """Check offers as submit_dam_offers would, without booking them: rules, feasibility, profit at the forecast."""
        offers = self._combined(curves, as_offers)
        settlement = forecast_settlement(offers, self._day(), self.battery)
        return {
            "valid": True,
            "forecast_profit": round(settlement.profit, 2),
            "shortfalls": settlement.shortfalls(),
        }

    @tool
    def submit_dam_offers(self, curves: Curves, as_offers: ASOffers = []) -> str:  # noqa: B006 (never mutated)
        """Add offers to the book (hours may not overlap booked ones); a rejected submission changes nothing."""
        self._combined(curves, as_offers)
        self.curves += [{"hours": list(parse_hours(c["hours"])), "points": c["points"]} for c in curves]
        self.as_offers += [{**o, "hours": list(parse_hours(o["hours"]))} for o in as_offers]
        return f"Booked {len(curves)} curves and {len(as_offers)} AS offers."

    @tool
    def list_offers(self) -> dict[str, Any]:
        """The offers in the book."""
        return {
            "curves": [{**c, "hours": _hours_text(c["hours"])} for c in self.curves],
            "as_offers": [{**o, "hours": _hours_text(o["hours"])} for o in self.as_offers],
        }

    @tool
    def withdraw_offers(
        self, hours: HourSet = "all", product: Literal["energy", ProductName] | None = None
    ) -> str:
        """Withdraw offers from the book in some hours: energy curves, one AS product, or everything.

        Args:
            hours: The hours to withdraw from.
            product: "energy" or an AS product; both energy and AS when omitted.
        """
        drop = set(parse_hours(hours))
        if product in (None, "energy"):
            self.curves = _without_hours(self.curves, drop)
        if product != "energy":
            kept = [o for o in self.as_offers if product is not None and o["product"] != product]
            self.as_offers = kept + _without_hours([o for o in self.as_offers if o not in kept], drop)
        return f"Withdrew {product or 'all offers'} in {_hours_text(sorted(drop))}."

    def end_turn(self) -> str:
        """End your turn: the market clears at the realized prices, the day settles and is scored."""
        offers = parse_offers(self.curves, self.as_offers, self.battery)
        self.score = score_offers(offers, self._day(), self.bound, self.battery)
        s = self.score.settlement
        return (
            f"Day settled. Profit ${s.profit:,.2f} (energy ${s.energy_revenue:,.2f}, AS ${s.as_revenue:,.2f}, "
            f"imbalance -${s.imbalance_cost:,.2f}, AS penalty -${s.as_penalty:,.2f}, degradation "
            f"-${s.degradation_cost:,.2f}); best achievable ${self.bound:,.2f}; reward {self.score.reward:.3f}."
        )

    def _day(self) -> Day:
        if self.day is None:
            raise ToolError("no day is loaded: the episode has not been reset")
        return self.day

    def _combined(self, curves: list[CurveOffer], as_offers: list[ASOffer]) -> Offers:
        """The book plus these offers, checked; raises OfferError naming the entry of this call that breaks a rule."""
        parse_offers(curves, as_offers, self.battery)  # the rules within this call, with this call's paths
        booked_hours = {h for c in self.curves for h in c["hours"]}
        for index, curve in enumerate(curves):
            overlap = booked_hours & set(parse_hours(curve["hours"]))
            if overlap:
                raise ToolError(
                    f"curves[{index}].hours: {_hours_text(sorted(overlap))} already have a curve in the book; "
                    "withdraw_offers(hours=...) first"
                )
        booked_as = {(o["product"], h) for o in self.as_offers for h in o["hours"]}
        for index, offer in enumerate(as_offers):
            overlap = {h for h in parse_hours(offer["hours"]) if (offer["product"], h) in booked_as}
            if overlap:
                raise ToolError(
                    f"as_offers[{index}]: {offer['product']} is already offered in {_hours_text(sorted(overlap))}; "
                    "withdraw_offers(hours=..., product=...) first"
                )
        return parse_offers([*self.curves, *curves], [*self.as_offers, *as_offers], self.battery)


def _by_hour(values: Any, hours: tuple[int, ...]) -> dict[str, float]:
    return {hour_label(h): round(float(values[h - 1]), 2) for h in hours}


def _hours_text(hours: list[int]) -> str | list[int]:
    """An hour list written as the model would: 'HE07', 'HE07-HE10', 'all', or the list itself."""
    if len(hours) == 24:
        return "all"
    if hours and hours == list(range(hours[0], hours[-1] + 1)):
        return hour_label(hours[0]) if len(hours) == 1 else f"{hour_label(hours[0])}-{hour_label(hours[-1])}"
    return hours


def _without_hours(entries: list[dict[str, Any]], drop: set[int]) -> list[dict[str, Any]]:
    kept = []
    for entry in entries:
        hours = [h for h in entry["hours"] if h not in drop]
        if hours:
            kept.append({**entry, "hours": hours})
    return kept
