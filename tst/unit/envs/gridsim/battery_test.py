"""The battery: the desk doc's defaults, the SoC path formula, and refusing contradictory limits."""

import pytest

from agent_env.envs.gridsim.battery import Battery, BatteryConfigError


def test_defaults_are_the_desk_doc_battery():
    battery = Battery()
    assert (battery.charge_mw, battery.discharge_mw, battery.capacity_mwh) == (100, 100, 200)
    assert battery.charge_efficiency == battery.discharge_efficiency == 0.922
    assert (battery.soc_min_mwh, battery.soc_max_mwh, battery.soc_start_mwh) == (10, 190, 100)
    assert battery.degradation_per_mwh == 10


def test_soc_path_gains_eff_times_charge_and_loses_discharge_over_eff():
    path = Battery().soc_path([-50, 46.1, 0, 92.2])
    assert path.tolist() == pytest.approx([100, 146.1, 96.1, 96.1, -3.9])  # limits are not applied


def test_soc_after_agrees_with_the_path_one_hour_at_a_time():
    battery = Battery()
    schedule = [-100, -20, 35, 100, 0, -7.5]
    soc = battery.soc_start_mwh
    for hour, net in enumerate(schedule):
        soc = battery.soc_after(soc, net)
        assert soc == pytest.approx(battery.soc_path(schedule)[hour + 1])


def test_round_trip_through_a_dict_gives_the_same_battery():
    battery = Battery(charge_mw=50, soc_start_mwh=120)
    assert Battery.from_dict(battery.to_dict()) == battery


@pytest.mark.parametrize(
    ("changes", "names"),
    [
        ({"soc_min_mwh": 120}, "soc_min_mwh <= soc_start_mwh"),
        ({"soc_max_mwh": 250}, "capacity_mwh"),
        ({"charge_efficiency": 1.5}, "charge_efficiency must be in (0, 1]"),
        ({"discharge_mw": 0}, "discharge_mw must be > 0"),
        ({"degradation_per_mwh": float("nan")}, "degradation_per_mwh must be a finite number"),
    ],
)
def test_contradictory_limits_raise_naming_the_field(changes, names):
    with pytest.raises(BatteryConfigError) as caught:
        Battery(**changes)
    assert names in str(caught.value)
