"""parse_offers: the tool layer's plain dicts become Offers, or an OfferError naming the entry and rule."""

import numpy as np
import pytest

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.market import PRODUCT_INDEX
from agent_env.envs.gridsim.offers import OfferError, Offers, parse_offers
from agent_env.errors import ToolError

BATTERY = Battery()
GOOD_CURVE = {"hours": "HE07-HE10", "points": [[-100, 10], [0, 20], [100, 60]]}


def error_of(curves, as_offers=()) -> str:
    with pytest.raises(OfferError) as caught:
        parse_offers(list(curves), list(as_offers), BATTERY)
    return str(caught.value)


def test_curves_map_onto_their_hours_and_other_hours_idle():
    offers = parse_offers([GOOD_CURVE, {"hours": [1, 24], "points": [[-50, 0], [-50, 1]]}], [], BATTERY)
    assert [hour + 1 for hour, curve in enumerate(offers.curves) if curve is not None] == [1, 7, 8, 9, 10, 24]
    assert offers.curves[6] is offers.curves[9]
    assert offers.cleared_mw(np.full(24, 20.0)).tolist() == [-50] + [0] * 22 + [-50]


def test_as_offers_fill_their_product_and_hours():
    offers = parse_offers([], [{"product": "ecrs", "hours": "HE18-HE19", "mw": 25, "price": 4.5}], BATTERY)
    row = PRODUCT_INDEX["ecrs"]
    assert offers.as_mw[row, 17:19].tolist() == [25, 25] and offers.as_mw.sum() == 50
    assert offers.as_price[row, 17:19].tolist() == [4.5, 4.5]
    assert np.isnan(offers.as_price).sum() == 6 * 24 - 2


def test_no_offers_idle_all_day():
    offers = Offers.none()
    assert offers.curves == (None,) * 24 and offers.as_mw.sum() == 0


def test_the_doc_example_message_names_entry_point_and_rule():
    bad = {"hours": "HE11", "points": [[-100, 10], [0, 20], [-50, 30]]}
    assert error_of([GOOD_CURVE, bad]).startswith(
        "curves[1].points: MW must be non-decreasing (point 2 has -50 after 0)"
    )


@pytest.mark.parametrize(
    ("curves", "message"),
    [
        (
            [{"hours": "HE7-HE", "points": [[0, 1], [1, 2]]}],
            "curves[0].hours: hour set 'HE7-HE' does not parse",
        ),
        (
            [GOOD_CURVE, {"hours": [10, 11], "points": [[0, 1], [1, 2]]}],
            "curves[1].hours: HE10 already take curves[0]; each hour takes one curve",
        ),
        (
            [{"hours": "all", "points": [[0, 1], [1, 2]]}, GOOD_CURVE],
            "curves[1].hours: HE07, HE08, HE09, HE10 already take curves[0]",
        ),
        ([{"hours": "HE01"}], "curves[0]: missing 'points'; the keys are hours, points"),
        ([{"hours": "HE01", "points": [[0, 1], [1, 2]], "mW": 3}], "curves[0]: unknown key 'mW'"),
        (["HE01"], "curves[0]: must be an object, got str"),
        ([{"hours": "HE01", "points": [[0, 1], [1, 6000]]}], "curves[0].points: point 1 has price 6000"),
    ],
)
def test_bad_curves_raise_naming_the_entry_and_rule(curves, message):
    assert message in error_of(curves)


@pytest.mark.parametrize(
    ("as_offers", "message"),
    [
        (
            [{"product": "rrs", "hours": "HE01", "mw": 1, "price": 1}],
            "as_offers[0].product: unknown product 'rrs'",
        ),
        (
            [{"product": "rrsffr", "hours": "HE01", "mw": 60, "price": 1}],
            "as_offers[0].mw: rrsffr MW 60 is outside 0..50 (the cap is 50% of max discharge)",
        ),
        (
            [{"product": "rrspfr", "hours": "HE01", "mw": 160, "price": 1}],
            "rrspfr MW 160 is outside 0..157 "
            "(the cap is the lesser of max charge + max discharge and 157 MW)",
        ),
        (
            [{"product": "regup", "hours": "HE01", "mw": -1, "price": 1}],
            "as_offers[0].mw: regup MW -1 is outside",
        ),
        (
            [{"product": "regup", "hours": "HE01", "mw": "5", "price": 1}],
            "as_offers[0].mw: must be a finite number",
        ),
        (
            [{"product": "regup", "hours": "HE01", "mw": 5, "price": 9e9}],
            "as_offers[0].price: price 9e+09 is outside",
        ),
        ([{"product": "regup", "hours": "HE01", "mw": 5}], "as_offers[0]: missing 'price'"),
        (
            [{"product": "regup", "hours": [], "mw": 5, "price": 1}],
            "as_offers[0].hours: hour set [] is empty",
        ),
        (
            [
                {"product": "regup", "hours": "HE01-HE05", "mw": 5, "price": 1},
                {"product": "regdn", "hours": "HE03", "mw": 5, "price": 1},
                {"product": "regup", "hours": [5, 6], "mw": 5, "price": 2},
            ],
            "as_offers[2].hours: regup HE05 already offered by as_offers[0]; one regup offer per hour",
        ),
    ],
)
def test_bad_as_offers_raise_naming_the_entry_and_rule(as_offers, message):
    assert message in error_of([], as_offers)


def test_offer_error_is_a_tool_error_with_path_and_rule():
    with pytest.raises(OfferError) as caught:
        parse_offers("not a list", [], BATTERY)  # type: ignore[arg-type]
    assert isinstance(caught.value, ToolError) and isinstance(caught.value, ValueError)
    assert (caught.value.path, caught.value.code) == ("curves", "invalid_offers")
    assert caught.value.rule == "must be a list of objects, got str"
