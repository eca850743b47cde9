"""Market rules: reading a curve at a price, the curve rules, the six AS products, and AS clearing."""

import numpy as np
import pytest

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.market import (
    PRICE_SERIES,
    PRODUCT_NAMES,
    PRODUCTS,
    Curve,
    CurveRuleError,
    Prices,
    check_curve,
    clear_as,
)

CURVE = Curve(mw=(-100.0, 0.0, 0.0, 100.0), price=(10.0, 20.0, 40.0, 60.0))


@pytest.mark.parametrize(
    ("price", "mw"),
    [
        (-250, -100),  # below the first point: the first point's MW
        (9.99, -100),
        (10, -100),
        (15, -50),  # linear between points
        (30, 0),
        (50, 50),
        (60, 100),
        (5000, 100),  # above the last point: the last point's MW
    ],
)
def test_curve_reads_linearly_and_holds_its_end_points(price, mw):
    assert CURVE.mw_at(price) == pytest.approx(mw)


def test_a_vertical_step_clears_its_larger_mw_at_the_step_price():
    step = Curve(mw=(-100.0, 0.0, 100.0), price=(20.0, 20.0, 20.0))
    assert (step.mw_at(19.99), step.mw_at(20), step.mw_at(20.01)) == (-100, 100, 100)


def test_a_flat_curve_clears_the_same_mw_at_every_price():
    flat = Curve.flat(-37.5)
    assert {flat.mw_at(price) for price in (-250, -3, 0, 45.5, 5000)} == {-37.5}


def test_valid_points_become_a_curve():
    assert check_curve([[-100, 10], [0, 20], [0, 40], [100, 60]], Battery()) == CURVE


@pytest.mark.parametrize(
    ("points", "rule"),
    [
        ([[0, 10]], "needs 2 to 10 points, got 1"),
        ([[0, p] for p in range(11)], "needs 2 to 10 points, got 11"),
        ([[-100, 10], [0, 20], [-50, 30]], "MW must be non-decreasing (point 2 has -50 after 0)"),
        ([[-100, 30], [0, 20]], "price must be non-decreasing (point 1 has 20 after 30)"),
        ([[-150, 10], [0, 20]], "point 0 has MW -150, outside the battery's limits -100..100"),
        ([[0, 10], [101, 20]], "point 1 has MW 101, outside the battery's limits -100..100"),
        ([[0, -251], [10, 20]], "point 0 has price -251, outside -250..5000 $/MWh"),
        ([[0, 10], [10, 5000.5]], "point 1 has price 5000.5, outside -250..5000 $/MWh"),
        ([[0, 10], [10]], "point 1 must be [mw, price] with two finite numbers, got [10]"),
        ([[0, 10], [10, float("nan")]], "point 1 must be [mw, price] with two finite numbers"),
        ([[0, 10], [True, 20]], "point 1 must be [mw, price] with two finite numbers"),
        ("[[0, 10]]", "must be a list of [mw, price] points, got str"),
    ],
)
def test_curves_that_break_a_rule_raise_naming_the_rule_and_point(points, rule):
    with pytest.raises(CurveRuleError) as caught:
        check_curve(points, Battery())
    assert rule in str(caught.value)


def test_curve_limits_follow_the_battery():
    small = Battery(charge_mw=40, discharge_mw=60)
    check_curve([[-40, 0], [60, 10]], small)
    with pytest.raises(CurveRuleError, match=r"outside the battery's limits -40\.\.60"):
        check_curve([[-41, 0], [60, 10]], small)


def test_the_six_products_with_their_durations_and_directions():
    assert PRODUCT_NAMES == ("regup", "regdn", "rrspfr", "rrsffr", "ecrs", "nspin")
    assert {p.name: p.duration_h for p in PRODUCTS} == {
        "regup": 0.5,
        "regdn": 0.5,
        "rrspfr": 0.5,
        "rrsffr": 0.25,
        "ecrs": 1.0,
        "nspin": 4.0,
    }
    assert [p.name for p in PRODUCTS if p.direction == "down"] == ["regdn"]


def test_caps_are_157_mw_for_rrspfr_half_discharge_for_rrsffr_and_the_power_swing_otherwise():
    caps = {p.name: p.cap_mw(Battery()) for p in PRODUCTS}
    assert caps == {"regup": 200, "regdn": 200, "rrspfr": 157, "rrsffr": 50, "ecrs": 200, "nspin": 200}
    small = {p.name: p.cap_mw(Battery(charge_mw=50, discharge_mw=60)) for p in PRODUCTS}
    assert small["rrspfr"] == 110 and small["rrsffr"] == 30


def test_rrspfr_and_rrsffr_share_the_rrs_clearing_price():
    series = {name: [float(index)] * 24 for index, name in enumerate(PRICE_SERIES)}
    prices = Prices.from_series([30.0] * 24, series)
    rows = dict(zip(PRODUCT_NAMES, prices.mcpc[:, 0], strict=True))
    assert rows["rrspfr"] == rows["rrsffr"] == series["rrs"][0]
    assert rows["regup"] == series["regup"][0] and rows["nspin"] == series["nspin"][0]


def test_prices_are_read_only_and_need_24_hours():
    prices = Prices.from_series([30.0] * 24, {name: [5.0] * 24 for name in PRICE_SERIES})
    with pytest.raises(ValueError, match="read-only"):
        prices.spp[0] = 1
    with pytest.raises(ValueError, match="24 hourly values"):
        Prices.from_series([30.0] * 23, {name: [5.0] * 23 for name in PRICE_SERIES})


def test_an_as_offer_clears_in_full_at_or_below_the_mcpc_and_not_above():
    mcpc = np.full((6, 24), 10.0)
    mw = np.full((6, 24), 20.0)
    price = np.full((6, 24), np.nan)
    price[0, 0], price[0, 1], price[0, 2] = 9.99, 10.0, 10.01
    awards = clear_as(mw, price, mcpc)
    assert awards[0, :3].tolist() == [20, 20, 0]
    assert awards.sum() == 40  # hours and products without an offer award nothing
