"""The day generator: deterministic per seed, the documented price shapes, forecasts consistent with them."""

from datetime import date

import numpy as np
import pytest

from agent_env.envs.gridsim.day import Day
from agent_env.envs.gridsim.market import PRICE_SERIES
from agent_env.envs.gridsim.scenario import HISTORY_DAYS, generate_day


@pytest.fixture(scope="module")
def days() -> list[Day]:
    return [generate_day(seed) for seed in range(1500)]


def spp(day: Day) -> np.ndarray:
    return np.array(day.outcome.spp)


def test_the_same_seed_gives_the_same_day_and_other_seeds_differ():
    assert generate_day(42) == generate_day(42)
    assert generate_day(42).to_dict() == generate_day(42).to_dict()
    assert generate_day(42).outcome.spp != generate_day(43).outcome.spp


def test_a_day_survives_a_round_trip_through_plain_data():
    day = generate_day(7)
    assert Day.from_dict(day.to_dict()) == day


def test_every_series_is_hourly_and_the_history_is_a_week(days):
    day = days[0]
    f, o = day.forecast, day.outcome
    hourly = [o.spp, o.load_mw, o.wind_mw, o.solar_mw, f.reserve_margin, *o.mcpc.values()]
    hourly += [
        getattr(band, q)
        for band in (f.spp, f.load_mw, f.wind_mw, f.solar_mw, *f.mcpc.values())
        for q in ("p10", "p50", "p90")
    ]
    assert {len(series) for series in hourly} == {24}
    assert len(f.price_history) == HISTORY_DAYS and {len(d) for d in f.price_history} == {24}
    assert set(o.mcpc) == set(f.mcpc) == set(PRICE_SERIES)


def test_dates_fall_in_2026_with_the_matching_season(days):
    seasons = {"winter": {12, 1, 2}, "spring": {3, 4, 5}, "summer": {6, 7, 8}, "fall": {9, 10, 11}}
    for day in days[:200]:
        when = date.fromisoformat(day.forecast.date)
        assert when.year == 2026 and when.month in seasons[day.forecast.season]
    assert {day.forecast.season for day in days} == set(seasons)


def test_scarcity_and_negative_midday_days_are_each_about_3_percent(days):
    kinds = [day.kind for day in days]
    assert 0.015 <= kinds.count("scarcity") / len(days) <= 0.05
    assert 0.015 <= kinds.count("negative_midday") / len(days) <= 0.05
    assert {day.forecast.season for day in days if day.kind == "negative_midday"} == {"spring"}


def test_scarcity_days_spike_to_500_5000_in_he18_to_he20(days):
    for day in days:
        evening = spp(day)[17:20]
        if day.kind == "scarcity":
            assert np.all((evening >= 500) & (evening <= 5000))
        else:
            assert np.all((evening >= 50) & (evening <= 150))


def test_the_daily_shape_stays_in_the_documented_ranges(days):
    for day in days:
        prices = spp(day)
        assert np.all((prices[:6] >= 20) & (prices[:6] <= 35)), "overnight 20-35"
        top = 160 if day.forecast.season == "winter" else 60
        assert 30 <= prices[7] <= top, "morning ramp 30-60, winter to 160"
        low, high = (-25, -5) if day.kind == "negative_midday" else (0, 20)
        assert np.all((prices[10:15] >= low) & (prices[10:15] <= high)), "solar dip"
    winter_mornings = [spp(day)[7] for day in days if day.forecast.season == "winter"]
    assert max(winter_mornings) > 100


def test_as_prices_keep_the_quality_order_and_rise_with_energy_prices(days):
    for day in days[:300]:
        m = {name: np.array(values) for name, values in day.outcome.mcpc.items()}
        assert (
            np.all(m["regup"] >= m["rrs"])
            and np.all(m["rrs"] >= m["ecrs"])
            and np.all(m["ecrs"] >= m["nspin"])
        )
        assert min(values.min() for values in m.values()) >= 1
        f = {name: np.array(band.p50) for name, band in day.forecast.mcpc.items()}
        assert (
            np.all(f["regup"] >= f["rrs"])
            and np.all(f["rrs"] >= f["ecrs"])
            and np.all(f["ecrs"] >= f["nspin"])
        )
    calm = [day for day in days if day.kind == "normal"]
    energy = np.concatenate([spp(day) for day in calm])
    regup = np.concatenate([day.outcome.mcpc["regup"] for day in calm])
    assert np.corrcoef(energy, regup)[0, 1] > 0.3
    scarcity = [np.max(day.outcome.mcpc["regup"]) for day in days if day.kind == "scarcity"]
    assert min(scarcity) > 30


def test_bands_are_ordered_and_p10_p90_holds_most_realized_prices(days):
    inside = []
    for day in days[:400]:
        band = day.forecast.spp
        assert np.all(np.array(band.p10) <= band.p50) and np.all(np.array(band.p50) <= band.p90)
        inside.append(np.mean((np.array(band.p10) <= spp(day)) & (spp(day) <= np.array(band.p90))))
        for other in (day.forecast.load_mw, day.forecast.wind_mw, day.forecast.solar_mw):
            assert np.all(np.array(other.p10) <= other.p50) and np.all(np.array(other.p50) <= other.p90)
    assert 0.6 <= np.mean(inside) <= 0.95


def test_forecasts_track_the_realized_day(days):
    errors = [
        np.mean(np.abs(np.array(d.forecast.spp.p50) - spp(d))) / np.mean(np.abs(spp(d))) for d in days[:300]
    ]
    assert 0.03 < np.median(errors) < 0.3


def test_system_conditions_are_consistent_with_prices(days):
    calm = [day for day in days if day.kind == "normal"]
    solar_peak = [max(day.outcome.solar_mw) for day in calm]
    midday = [np.mean(spp(day)[10:15]) for day in calm]
    assert np.corrcoef(solar_peak, midday)[0, 1] < -0.3, "more sun, deeper solar dip"
    assert all(day.outcome.solar_mw[0] == 0 and day.outcome.solar_mw[23] == 0 for day in days[:200])
    tight = [min(day.forecast.reserve_margin[17:20]) for day in days if day.kind == "scarcity"]
    loose = [min(day.forecast.reserve_margin[17:20]) for day in calm]
    assert np.median(tight) < np.median(loose)


def test_the_price_history_looks_like_ordinary_days(days):
    history = np.array([d.forecast.price_history for d in days[:200]])
    assert history.shape == (200, HISTORY_DAYS, 24)
    assert 20 <= np.median(history[:, :, :6]) <= 35 and 50 <= np.median(history[:, :, 17:20]) <= 150
