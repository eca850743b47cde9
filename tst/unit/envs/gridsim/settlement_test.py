"""Settlement on hand-computed days: energy first, clipped to SoC; AS cut lowest MCPC first; then money."""

import numpy as np
import pytest

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.market import PRICE_SERIES, PRODUCT_INDEX, Prices
from agent_env.envs.gridsim.offers import parse_offers
from agent_env.envs.gridsim.settlement import settle

BATTERY = Battery()
ETA = 0.922


def prices(spp, **mcpc) -> Prices:
    spp = [float(spp)] * 24 if np.isscalar(spp) else list(spp)
    series = {}
    for name in PRICE_SERIES:
        value = mcpc.get(name, 0.0)
        series[name] = [float(value)] * 24 if np.isscalar(value) else list(value)
    return Prices.from_series(spp, series)


def flat(hours, mw) -> dict:
    return {"hours": hours, "points": [[mw, -250], [mw, 5000]]}


def run(curves=(), as_offers=(), day=None):
    return settle(parse_offers(list(curves), list(as_offers), BATTERY), day or prices(30), BATTERY)


def test_doing_nothing_earns_exactly_nothing():
    result = run()
    assert result.profit == 0 and result.soc_mwh.tolist() == [100] * 25


def test_flat_day_cycle_loses_round_trip_losses_and_degradation():
    result = run([flat("HE01", -50), flat("HE02", 46.1 * ETA)], day=prices(30))
    assert result.soc_mwh[:3].tolist() == pytest.approx([100, 146.1, 100])
    assert result.energy_revenue == pytest.approx(-30 * 50 + 30 * 42.5042)
    assert result.degradation_cost == pytest.approx(425.042)
    assert result.profit == pytest.approx(-1500 + 1275.126 - 425.042)
    assert result.imbalance_cost == 0 and result.shortfalls() == []


def test_two_price_day_charges_cheap_and_discharges_dear_for_the_hand_computed_profit():
    day = prices([10] * 12 + [100] * 12)
    result = run([flat("HE12", -90 / ETA), flat("HE21", 90 * ETA)], day=day)
    assert result.soc_mwh[12] == pytest.approx(190) and result.soc_mwh[24] == pytest.approx(100)
    assert result.profit == pytest.approx(90 * 90 * ETA - 10 * 90 / ETA)  # 6492.06
    assert result.profit == pytest.approx(result.hourly_profit.sum())


def test_a_price_responsive_curve_reads_each_hour_at_its_own_price():
    curve = {"hours": "all", "points": [[-20, 15], [0, 15.01], [0, 99], [20, 100]]}
    result = run([curve], day=prices([10] * 6 + [50] * 12 + [100] * 6))
    assert result.cleared_mw.tolist() == [-20] * 6 + [0] * 12 + [20] * 6


def test_negative_price_day_pays_the_battery_to_charge():
    result = run([flat("HE03", -90 / ETA)], day=prices(-20))
    assert result.soc_mwh[-1] == pytest.approx(190)
    assert result.profit == pytest.approx(20 * 90 / ETA)  # 1952.28
    assert result.degradation_cost == 0


def test_negative_price_discharge_costs_price_and_degradation():
    result = run([flat("HE03", -10), flat("HE04", 10 * ETA * ETA)], day=prices(-20))
    assert result.profit == pytest.approx(200 - 20 * 10 * ETA * ETA - 10 * 10 * ETA * ETA)


def test_scarcity_day_sells_the_whole_usable_soc_into_the_spike():
    day = prices([30] * 17 + [3000] * 3 + [30] * 4)
    curves = [
        flat("HE01", -90 / ETA),
        flat("HE18", 100),
        flat("HE19", 180 * ETA - 100),
        flat("HE21", -90 / ETA),
    ]
    result = run(curves, day=day)
    assert result.soc_mwh[[1, 18, 19, 21]].tolist() == pytest.approx([190, 190 - 100 / ETA, 10, 100])
    assert result.profit == pytest.approx(2990 * 180 * ETA - 2 * 30 * 90 / ETA)  # 490,363.57
    assert result.shortfalls() == []


def test_charging_past_full_is_clipped_and_the_unabsorbed_mwh_resold_at_spp_minus_100():
    result = run([flat("HE01", -100)], day=prices(10))
    absorbed = 90 / ETA
    assert result.delivered_mw[0] == pytest.approx(-absorbed) and result.soc_mwh[1] == pytest.approx(190)
    assert result.energy_revenue == pytest.approx(-1000)  # paid for the full cleared 100 MWh
    assert result.imbalance_cost == pytest.approx(90 * (100 - absorbed))  # resold at 10 - 100
    assert result.profit == pytest.approx(-10 * absorbed - 100 * (100 - absorbed))
    assert result.shortfalls() == [
        "HE01: energy cleared -100.0 MW but SoC allows -97.6 MW; the gap settles at SPP - $100"
    ]


def test_discharging_past_empty_is_bought_back_at_spp_plus_100_and_overfilling_resold_at_spp_minus_100():
    day = prices([10] + [40] * 23)
    curves = [flat("HE01", -100), flat("HE02-HE03", 100), flat("HE04-HE06", -100)]
    result = run(curves, day=day)
    delivered = [-90 / ETA, 100, 180 * ETA - 100, -100, -(190 - 10 - 92.2) / ETA, 0]
    assert result.delivered_mw[:6].tolist() == pytest.approx(delivered)
    assert result.soc_mwh[:7].tolist() == pytest.approx([100, 190, 190 - 100 / ETA, 10, 102.2, 190, 190])
    resold_at_minus_90 = 100 - 90 / ETA  # HE01: SPP 10 - 100
    bought_at_140 = 100 - (180 * ETA - 100)  # HE03: SPP 40 + 100
    resold_at_minus_60 = (100 - 87.8 / ETA) + 100  # HE05 and HE06: SPP 40 - 100
    assert result.imbalance_cost == pytest.approx(
        90 * resold_at_minus_90 + 140 * bought_at_140 + 60 * resold_at_minus_60
    )


def test_a_day_ending_below_its_start_soc_cuts_the_latest_discharge_first():
    result = run([flat("HE10", 50), flat("HE15", 30), flat("HE20", -30)], day=prices(40))
    deficit = 100 - (100 - 80 / ETA + 30 * ETA)  # SoC the two discharges leave unreplaced
    assert result.delivered_mw[[9, 14, 19]].tolist() == pytest.approx([50 - (deficit * ETA - 30), 0, -30])
    assert result.soc_mwh[-1] == pytest.approx(100)
    undelivered = deficit * ETA
    assert result.imbalance_cost == pytest.approx(140 * undelivered)  # bought back at SPP + 100


def test_a_lone_discharge_is_cut_entirely_and_bought_back():
    result = run([flat("HE10", 50)], day=prices(40))
    assert result.delivered_mw.sum() == 0 and result.soc_mwh[-1] == 100
    assert result.profit == pytest.approx(40 * 50 - 140 * 50)


def as_offer(product, mw, hours="HE01", price=0):
    return {"product": product, "hours": hours, "mw": mw, "price": price}


def test_as_offers_above_the_mcpc_earn_nothing_and_at_it_earn_mcpc():
    result = run(
        as_offers=[as_offer("regup", 10, "HE01", 8), as_offer("regup", 10, "HE02", 8.01)],
        day=prices(30, regup=8),
    )
    assert result.awarded_mw[PRODUCT_INDEX["regup"], :2].tolist() == [10, 0]
    assert result.as_revenue == pytest.approx(80) and result.profit == pytest.approx(80)


def test_unbacked_up_awards_are_cut_lowest_mcpc_first_and_charged_50_a_mw():
    # HE01 idle at 100 MWh: 100 MW of up headroom, (100 - 10) * 0.922 = 82.98 MWh of up energy.
    offers = [as_offer("regup", 80), as_offer("ecrs", 50), as_offer("nspin", 10)]
    result = run(as_offers=offers, day=prices(30, regup=12, ecrs=8, nspin=3))
    cut = {name: result.cut_mw[PRODUCT_INDEX[name], 0] for name in ("regup", "ecrs", "nspin")}
    # nspin (3) goes first, all 10 MW; ecrs (8) next: 30 MW restores the power limit, 80 + 20 = 100.
    assert cut == pytest.approx({"regup": 0, "ecrs": 30, "nspin": 10})
    assert result.as_revenue == pytest.approx(12 * 80 + 8 * 50 + 3 * 10)  # cut MW keep their DAM payment
    assert result.as_penalty == pytest.approx(50 * 30 + 50 * 10)  # max(MCPC, 50) = 50
    assert result.profit == pytest.approx(1390 - 2000)
    assert result.shortfalls() == [
        "HE01: ecrs award 50.0 MW cannot be backed; 30.0 MW cut and charged max(MCPC, $50)/MW-h",
        "HE01: nspin award 10.0 MW cannot be backed; 10.0 MW cut and charged max(MCPC, $50)/MW-h",
    ]


def test_an_energy_bound_cut_takes_only_what_the_soc_needs():
    # 82.98 MWh of up energy; nspin 25 needs 100 MWh, regup 1 needs 0.5: nspin (cheaper) gives up 17.52 / 4 h.
    result = run(as_offers=[as_offer("nspin", 25), as_offer("regup", 1)], day=prices(30, regup=20, nspin=2))
    assert result.cut_mw[PRODUCT_INDEX["nspin"], 0] == pytest.approx((25 * 4 + 0.5 - 90 * ETA) / 4)
    assert result.cut_mw[PRODUCT_INDEX["regup"], 0] == 0


def test_a_cut_above_50_is_charged_the_mcpc():
    # Idle, the battery has 100 MW of up headroom: 50 of the 150 MW regup award cannot be backed.
    result = run(as_offers=[as_offer("regup", 150)], day=prices(30, regup=80))
    assert result.cut_mw[PRODUCT_INDEX["regup"], 0] == pytest.approx(50)
    assert result.as_revenue == pytest.approx(80 * 150) and result.as_penalty == pytest.approx(80 * 50)


def test_while_charging_up_headroom_exceeds_max_discharge():
    # Charging 50 MW at HE01 leaves 150 MW of up headroom, and SoC 100 backs 165.96 MW of regup.
    result = run(
        [flat("HE01", -50), flat("HE02", 50 * ETA * ETA)], [as_offer("regup", 150)], day=prices(30, regup=9)
    )
    assert result.cut_mw.sum() == 0 and result.as_revenue == pytest.approx(150 * 9)


def test_regdn_is_cut_to_the_room_left_below_the_soc_ceiling():
    # Charging 97.61 MW fills the battery to 190 MWh in HE01: no room left to regulate down there.
    curves = [flat("HE01", -90 / ETA), flat("HE02", 90 * ETA)]
    result = run(curves, [as_offer("regdn", 40, "HE01-HE03")], day=prices(30, regdn=5))
    assert result.cut_mw[PRODUCT_INDEX["regdn"], :3].tolist() == pytest.approx([40, 40, 0])
    assert result.as_penalty == pytest.approx(2 * 40 * 50)


def test_kept_awards_always_respect_power_and_energy_limits():
    rng = np.random.default_rng(7)
    names = ("regup", "regdn", "rrspfr", "rrsffr", "ecrs", "nspin")
    for _ in range(30):
        curves = [flat([hour], float(rng.uniform(-100, 100))) for hour in range(1, 25)]
        offers = [as_offer(n, float(rng.uniform(0, 50)), [h]) for n in names for h in range(1, 25)]
        mcpc = {name: rng.uniform(1, 20, 24) for name in PRICE_SERIES}
        result = run(curves, offers, day=prices(rng.uniform(0, 80, 24), **mcpc))
        kept = result.awarded_mw - result.cut_mw
        up = np.delete(kept, PRODUCT_INDEX["regdn"], axis=0)
        low = np.minimum(result.soc_mwh[:-1], result.soc_mwh[1:])
        high = np.maximum(result.soc_mwh[:-1], result.soc_mwh[1:])
        durations = np.array([0.5, 0.5, 0.25, 1, 4])[:, None]
        assert np.all(result.delivered_mw + up.sum(axis=0) <= 100 + 1e-6)
        assert np.all(low - (durations * up).sum(axis=0) / ETA >= 10 - 1e-6)
        assert np.all(high + 0.5 * ETA * kept[PRODUCT_INDEX["regdn"]] <= 190 + 1e-6)
        assert np.all(result.delivered_mw - kept[PRODUCT_INDEX["regdn"]] >= -100 - 1e-6)
        assert np.all(result.cut_mw >= 0) and result.soc_mwh[-1] >= 100 - 1e-9
