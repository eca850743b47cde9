"""`agent_env/envs/tau2/telecom_device.py`: the user's phone in τ²-bench's telecom domain. Its tools, each checked
against what tau2-bench's own does (its text, status bar included, and what it changes), the network search every
setting triggers, the speed and MMS rules, the helpers tasks break the phone with, and its assertions."""

from __future__ import annotations

from typing import Any

import pytest

from agent_env import ToolArgumentError
from agent_env.envs.tau2.store import Store
from agent_env.envs.tau2.telecom import Tau2Telecom
from agent_env.envs.tau2.telecom_device import USER, TelecomUserStore, UserPhone


@pytest.fixture(scope="module")
def base() -> Any:
    return Tau2Telecom().data.user_base


@pytest.fixture
def phone(base: Any) -> UserPhone:
    """A fresh phone as user_db.toml has it: at home, 5G, data on, no Wi-Fi, no VPN."""
    return UserPhone(TelecomUserStore(base))


def use(phone: UserPhone, name: str, **arguments: Any) -> str:
    """A call of one of the user's tools, validated against its published schema first, as every call is."""
    tool = UserPhone.tools[name]
    return str(tool.function(phone, **tool.bind(arguments)))


def state(phone: UserPhone) -> Any:
    return phone.db.device[USER]


def test_the_status_bar_and_network_status_read_as_upstream_draws_them(phone):
    assert use(phone, "check_status_bar") == "Status Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"
    assert use(phone, "check_network_status").splitlines() == [
        "Airplane Mode: OFF",
        "SIM Card Status: active",
        "Cellular Connection: connected",
        "Cellular Signal: good",
        "Cellular Network Type: 5G",
        "Mobile Data Enabled: Yes",
        "Data Roaming Enabled: No",
        "Wi-Fi Radio: OFF",
        "Wi-Fi Connected: No",
    ]  # fmt: skip  (the file says 'good' on 5G until the phone first searches the network)
    use(phone, "toggle_data_saver_mode")
    use(phone, "connect_vpn")
    assert use(phone, "check_status_bar").endswith("| 🔽 Data Saver | 🔒 VPN Connected | 🔋 80%")


def test_airplane_mode_cuts_service_and_vpn_and_turning_it_off_searches_again(phone):
    use(phone, "connect_vpn")
    assert (
        use(phone, "toggle_airplane_mode") == "Airplane Mode is now ON.\nStatus Bar: ✈️ Airplane Mode | 🔋 80%"
    )
    device = state(phone)
    assert (device.network_connection_status, device.network_technology_connected, device.vpn_connected) == (
        "no_service", "none", False,
    )  # fmt: skip
    assert (
        use(phone, "toggle_wifi")
        == "Cannot change Wi-Fi settings while Airplane Mode is ON.\nStatus Bar: ✈️ Airplane Mode | 🔋 80%"
    )
    assert use(phone, "toggle_airplane_mode").startswith(
        "Airplane Mode is now OFF.\nStatus Bar: 📶⁴ Excellent | 5G"
    )
    assert state(phone).network_connection_status == "connected"


def test_the_network_mode_sets_the_technology_and_the_signal_where_the_user_is(phone):
    said = use(phone, "set_network_mode_preference", mode="2g_only")
    assert (
        said == "Preferred Network Mode set to: 2g_only\nStatus Bar: 📶¹ Poor | 2G | 📱 Data Enabled | 🔋 80%"
    )
    assert use(phone, "run_speed_test") == (
        "Speed Test Result: 0.05 Mbps (Very Poor). Connection is very slow. Basic web browsing might be difficult."
    )
    assert use(phone, "check_network_mode_preference") == "Network Mode Preference: 2g_only"
    use(phone, "set_network_mode_preference", mode="3g_only")
    assert use(phone, "run_speed_test").startswith("Speed Test Result: 1.50 Mbps (Poor).")
    use(phone, "set_network_mode_preference", mode="4g_5g_preferred")
    assert (
        use(phone, "run_speed_test") == "Speed Test Result: 275.00 Mbps (Excellent). Connection is very fast."
    )


def test_a_mode_outside_the_four_is_refused_by_the_schema_and_changes_nothing(phone):
    with pytest.raises(
        ToolArgumentError, match='mode: expected one of "4g_5g_preferred", "4g_only", "3g_only", "2g_only"'
    ):
        use(phone, "set_network_mode_preference", mode="5g_only")
    assert state(phone).network_mode_preference == "4g_5g_preferred" and not phone.db.device.changed()


def test_data_saver_and_a_poor_vpn_slow_data_and_a_broken_vpn_stays_poor_when_reconnected(phone):
    use(phone, "reboot_device")  # searched: 5G, excellent where the user is
    use(phone, "toggle_data_saver_mode")
    assert use(phone, "run_speed_test").startswith("Speed Test Result: 55.00 Mbps (Good).")
    use(phone, "toggle_data_saver_mode")
    assert phone.break_vpn() == "VPN connection broken."
    assert use(phone, "run_speed_test").startswith("Speed Test Result: 27.50 Mbps (Good).")
    assert use(phone, "check_vpn_status") == (
        "VPN is ON and connected. Details: {'server_address': '192.168.1.1', 'protocol': 'OpenVPN', "
        "'server_performance': <PerformanceLevel.POOR: 'poor'>}"
    )
    use(phone, "disconnect_vpn")
    assert use(phone, "run_speed_test").startswith("Speed Test Result: 275.00 Mbps")
    assert use(phone, "connect_vpn").startswith("VPN connected successfully.")
    assert use(phone, "run_speed_test").startswith("Speed Test Result: 27.50 Mbps")  # the same poor server
    assert use(phone, "connect_vpn") == "VPN already connected."
    assert (
        "server_performance" not in state(phone).model_dump_json().split("vpn_details")[0]
    )  # not in the dump


def test_the_sim_out_or_locked_leaves_no_service_and_reseating_finds_it(phone):
    phone.unseat_sim_card()
    assert use(phone, "check_sim_status") == "No SIM card detected in the phone."
    assert use(phone, "run_speed_test") == "Speed test failed: No Connection."
    assert use(phone, "reseat_sim_card").startswith(
        "SIM card re-seated successfully.\nStatus Bar: 📶⁴ Excellent"
    )
    phone.lock_sim_card("pin")
    assert use(phone, "check_sim_status") == "The SIM card is locked with a PIN code."
    use(phone, "reboot_device")
    assert phone.assert_service_status("no_service") and not phone.assert_mobile_data_status(True)


def test_apn_settings_reset_only_at_the_next_reboot(phone):
    phone.break_apn_settings()
    assert state(phone).network_connection_status == "no_service"
    assert use(phone, "check_apn_settings").startswith(
        "Current APN Name: broken\nMMSC URL (for picture messages): http"
    )
    assert (
        use(phone, "reset_apn_settings")
        == "APN settings will reset at reboot.\nStatus Bar: 📵 No Signal | 📵 Data Disabled | 🔋 80%"
    )
    assert state(phone).active_apn_settings.apn_name == "broken"
    assert use(phone, "reboot_device") == (
        "Resetting APN settings...\nRestarting network services...\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"
    )
    said = use(phone, "set_apn_settings", apn_settings={"apn_name": "internet", "mmsc_url": None})
    assert said.startswith("APN settings set to: internet") and not phone.mms_works()
    with pytest.raises(ToolArgumentError, match=r"apn_settings\.apn_name"):
        use(phone, "set_apn_settings", apn_settings={"apn_name": "carrier"})


def test_mms_needs_data_3g_or_better_no_mms_over_wifi_calling_an_mmsc_and_both_permissions(phone):
    assert use(phone, "can_send_mms") == "Your messaging app can send MMS messages."
    phone.set_wifi_calling(enabled=True, mms_over_wifi=True)
    assert not phone.mms_works()
    use(phone, "toggle_wifi_calling")
    assert phone.mms_works()
    phone.remove_app_permission("messaging", "storage")
    assert use(phone, "can_send_mms") == "Your messaging app cannot send MMS messages."
    assert (
        use(phone, "check_app_permissions", app_name="messaging")
        == "App 'messaging' has permission for: sms, phone."
    )
    said = use(phone, "grant_app_permission", app_name="messaging", permission="STORAGE")
    assert (
        said.startswith("Success. Permission 'storage' granted to app 'messaging'.\nStatus Bar:")
        and phone.mms_works()
    )
    assert use(phone, "grant_app_permission", app_name="messaging", permission="camera").startswith(
        "Error. Permission 'camera' not tracked for app 'messaging', available permissions: "
        "['sms', 'storage', 'phone', 'network']\nStatus Bar:"
    )
    assert use(phone, "grant_app_permission", app_name="camera", permission="sms").startswith(
        "Error. App 'camera' not found. Cannot grant permission."
    )
    assert use(phone, "check_app_status", app_name="browser") == (
        "Status for App: browser\n - Permissions Granted:\n   - storage\n   - network"
    )
    assert (
        use(phone, "check_installed_apps")
        == "The following apps are installed on the phone: messaging, browser"
    )
    phone.set_user_location(abroad=True)  # roaming off: no data abroad, so no MMS either
    assert not phone.mms_works()


def test_turning_helpers_reach_their_state_whatever_it_was(phone):
    for _ in range(2):
        assert phone.turn_airplane_mode_on() == "Airplane Mode is now ON." and state(phone).airplane_mode
    assert phone.turn_airplane_mode_off() == "Airplane Mode is now OFF." and not state(phone).airplane_mode
    phone.turn_data_off()
    phone.turn_data_off()
    assert not state(phone).data_enabled and use(phone, "check_status_bar").endswith(
        "📵 Data Disabled | 🔋 80%"
    )
    assert phone.turn_data_on() == "Data connection restored." and state(phone).data_enabled
    phone.turn_roaming_on()
    phone.turn_roaming_on()
    assert state(phone).roaming_enabled


def test_a_payment_is_made_only_on_a_request(phone):
    assert use(phone, "make_payment") == "You do not have a payment request."
    assert use(phone, "check_payment_request") == "No payment request has been made."


def test_the_shared_phone_is_never_changed_by_an_episode(phone, base):
    use(phone, "toggle_airplane_mode")
    assert base.device[USER].airplane_mode is False and isinstance(phone.db, Store)
