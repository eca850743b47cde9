"""telecom's user side: the customer's phone and where they are (τ²-bench's user_db.toml), and the tools the
simulated user works its phone with.

The phone is simulated as tau2-bench simulates it: each setting the user changes searches the network again, and
whether mobile data works, how fast it is and whether a picture message can be sent follow from the settings, the
SIM, and the line's state on the carrier's side (which `Tau2Telecom.sync` brings over after every step). Each
tool answers with tau2-bench's text, status bar included, so a simulated user reads what it would read there.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, model_validator

from agent_env.envs.tau2.environment import UserSide
from agent_env.envs.tau2.store import Store, Table
from agent_env.tools import tool

USER = "user"
"""The key of the user's one phone and one surroundings in their tables."""

SimStatus = Literal["active", "missing", "locked_pin", "locked_puk"]
Technology = Literal["none", "2G", "3G", "4G", "5G"]
NetworkMode = Literal["4g_5g_preferred", "4g_only", "3g_only", "2g_only"]
Signal = Literal["none", "poor", "fair", "good", "excellent"]
NetworkStatus = Literal["connected", "searching", "no_service", "emergency_only"]
ApnName = Literal["internet", "broken"]


class PerformanceLevel(StrEnum):
    """How well a VPN server performs. An enum of this name, as tau2-bench's is, because `check_vpn_status` shows
    the VPN's details as Python prints them (`<PerformanceLevel.EXCELLENT: 'excellent'>`)."""

    UNKNOWN = "unknown"
    POOR = "poor"
    FAIR = "fair"
    GOOD = "good"
    EXCELLENT = "excellent"


class ApnSettings(BaseModel):
    """An access point (APN) configuration: how the phone reaches the carrier's data network and picture messaging."""

    apn_name: ApnName = Field(
        default="internet", description="The APN's name: 'internet' is the carrier's working one"
    )
    reset_at_reboot: bool = Field(
        default=False, description="Whether the settings go back to the defaults at the next reboot"
    )
    mms_apn: str | None = Field(default="mms", description="The APN picture messages (MMS) use")
    mmsc_url: str | None = Field(
        default="http://mms.carrier.com/mms/wapenc",
        description="The MMS center's URL; without one, no MMS can be sent",
    )
    mms_proxy: str | None = Field(default=None, description="A proxy for MMS, where the network needs one")
    mms_port: int | None = Field(default=None, description="The MMS proxy's port")


class VpnDetails(BaseModel):
    """The connected VPN: its server and how it performs."""

    server_address: str | None = Field(default=None, description="The VPN server's address")
    protocol: str | None = Field(default=None, description="The VPN's protocol")
    server_performance: PerformanceLevel = Field(
        default=PerformanceLevel.UNKNOWN, validate_default=True, description="How fast the VPN server is"
    )


class AppPermissions(BaseModel):
    """What an app may use."""

    sms: bool = Field(default=False, description="Text and picture messages")
    storage: bool = Field(default=False, description="The phone's storage")
    phone: bool = Field(default=False, description="Phone calls")
    network: bool = Field(default=False, description="The network")


class AppStatus(BaseModel):
    """An installed app and its permissions."""

    app_name: str = Field(description="The app's name")
    permissions: AppPermissions = Field(default_factory=AppPermissions, description="What it may use")


def _default_apps() -> dict[str, AppStatus]:
    return {
        "messaging": AppStatus(
            app_name="messaging", permissions=AppPermissions(sms=True, storage=True, phone=True)
        ),
        "browser": AppStatus(app_name="browser", permissions=AppPermissions(network=True, storage=True)),
    }


class PhoneState(BaseModel):
    """Everything about the user's phone that its tools read and change."""

    sim_card_status: SimStatus = Field(default="active", description="The SIM's state")
    sim_card_missing: bool = Field(default=False, description="Whether the SIM is out of the phone")
    airplane_mode: bool = Field(default=False, description="Whether airplane mode is on")
    network_signal_strength: Signal = Field(default="good", description="The cellular signal")
    network_technology_connected: Technology = Field(
        default="5G", description="The cellular technology in use"
    )
    network_connection_status: NetworkStatus = Field(
        default="connected", description="Whether the phone has service"
    )
    battery_level: int = Field(default=80, description="Battery, in percent")
    data_enabled: bool = Field(default=True, description="Whether mobile data is switched on")
    roaming_enabled: bool = Field(default=False, description="Whether data roaming is switched on")
    network_mode_preference: NetworkMode = Field(
        default="4g_5g_preferred", description="The network type it prefers"
    )
    active_apn_settings: ApnSettings = Field(default_factory=ApnSettings, description="The APN in use")
    wifi_enabled: bool = Field(default=False, description="Whether Wi-Fi is switched on")
    wifi_connected: bool = Field(default=False, description="Whether it is on a Wi-Fi network")
    wifi_ssid: str | None = Field(default=None, description="The Wi-Fi network it is on")
    wifi_signal_strength: Signal = Field(default="none", description="The Wi-Fi signal")
    wifi_calling_enabled: bool = Field(default=False, description="Whether Wi-Fi calling is on")
    wifi_calling_mms_over_wifi: bool = Field(default=False, description="Whether MMS goes over Wi-Fi calling")
    data_saver_mode: bool = Field(default=False, description="Whether data saver is on")
    vpn_enabled_setting: bool = Field(
        default=False, description="Whether a VPN is switched on in the settings"
    )
    vpn_connected: bool = Field(default=False, description="Whether a VPN is connected")
    vpn_details: VpnDetails | None = Field(default=None, description="The connected VPN, if any")
    app_statuses: dict[str, AppStatus] = Field(
        default_factory=_default_apps, description="The apps installed"
    )
    _vpn_server: PerformanceLevel = PrivateAttr(PerformanceLevel.EXCELLENT)
    """How the VPN server it connects to performs: poor once `break_vpn` broke it, so that connecting again gives the
    same slow VPN, as in tau2-bench (where it breaks the toolkit's default VPN itself). Not part of the dump."""


class PaymentRequest(BaseModel):
    """A bill the agent asked the user to pay."""

    bill_id: str = Field(description="The bill's id")
    amount_due: float = Field(description="What it asks for, in dollars")
    paid: bool = Field(default=False, description="Whether the user has paid it")


def _default_signals() -> dict[Technology, Signal]:
    return {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"}


class Surroundings(BaseModel):
    """Where the user is, and what the carrier's side lets their phone do (brought over by `Tau2Telecom.sync`)."""

    name: str | None = Field(default=None, description="The user's name")
    phone_number: str | None = Field(default=None, description="The number of the user's line")
    is_abroad: bool = Field(default=False, description="Whether the user is abroad")
    roaming_allowed: bool = Field(default=False, description="Whether their line may roam")
    signal_strength: dict[Technology, Signal] = Field(
        default_factory=_default_signals, description="The signal each technology has where they are"
    )
    mobile_data_usage_exceeded: bool = Field(
        default=False, description="Whether their line has used up its data"
    )
    line_active: bool = Field(default=True, description="Whether their line is in service")
    payment_request: PaymentRequest | None = Field(
        default=None, description="A bill the agent asked them to pay"
    )


class TelecomUserDB(BaseModel):
    """The user's side: one phone and one surroundings, each a table of one (`USER`), read from tau2-bench's form
    (`device` and `surroundings`, each a single entity)."""

    device: dict[str, PhoneState]
    surroundings: dict[str, Surroundings]

    @model_validator(mode="before")
    @classmethod
    def _as_tables(cls, data: Any) -> Any:
        if not isinstance(data, dict) or set(data) - {"device", "surroundings"}:
            return data
        return {name: {USER: data.get(name) or {}} for name in ("device", "surroundings")}


class TelecomUserStore(Store):
    device: Table[PhoneState]
    surroundings: Table[Surroundings]

    def update(self, data: Mapping[str, Any]) -> None:
        """Merge a task's initialization data for the user, in tau2-bench's form (`{"device": {...}}`: each side a
        single entity), into the user's phone and surroundings, as tau2-bench merges it."""
        super().update({name: {USER: fields} for name, fields in data.items()})


SIGNAL_BARS = {
    "none": "📵 No Signal",
    "poor": "📶¹ Poor",
    "fair": "📶² Fair",
    "good": "📶³ Good",
    "excellent": "📶⁴ Excellent",
}
SPEEDS: dict[Technology, tuple[float, float]] = {
    "2G": (0.1, 0.4),
    "3G": (1.0, 5.0),
    "4G": (10.0, 100.0),
    "5G": (50.0, 500.0),
    "none": (0.0, 0.0),
}
"""The slowest and fastest download each technology gives, in Mbps."""
SIGNAL_SHARE: dict[Signal, float] = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0, "none": 0.0}
"""The share of a technology's speed each signal gives."""
ADVICE = {
    "Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
    "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
    "Fair": "Connection is okay for web browsing and some standard definition streaming.",
    "Good": "Connection is good for most activities, including HD streaming.",
    "Excellent": "Connection is very fast.",
}
SIM_STATES = {
    "active": "Your SIM card is active and working.",
    "missing": "No SIM card detected in the phone.",
    "locked_pin": "The SIM card is locked with a PIN code.",
    "locked_puk": "The SIM card is locked with a PUK code.",
}
MODE_TECHNOLOGY: dict[str, Technology] = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}
DEFAULT_VPN = VpnDetails(
    server_address="192.168.1.1", protocol="OpenVPN", server_performance=PerformanceLevel.EXCELLENT
)
"""The VPN a phone connects to (each phone its own copy)."""

Cues = tuple[tuple[str, ...], ...]
CUES: dict[str, Cues] = {
    "toggle_airplane_mode": (("airplane", "flight mode"),),
    "toggle_data": (("mobile data", "cellular data"),),
    "toggle_roaming": (("roaming",),),
    "toggle_data_saver_mode": (("data saver",),),
    "toggle_wifi_calling": (("wifi calling", "wi fi calling"),),
    "set_network_mode_preference": (
        ("network mode", "network type", "network preference", "preferred network", "4g", "5g", "lte"),
    ),
    "reseat_sim_card": (
        ("sim",),
        ("reseat", "re seat", "remove", "reinsert", "re insert", "take out", "eject", "put it back"),
    ),
    "reset_apn_settings": (("apn",), ("reset", "default", "defaults")),
    "reboot_device": (
        ("reboot", "restart", "power cycle", "turn it off and on", "turn your phone off and on"),
    ),
    "disconnect_vpn": (("vpn",),),
    "make_payment": (("pay", "payment"),),
}
"""The words by which an agent's message asks the user to make each call a task's reference has them make
(`agent_env.users.UserAction`); `grant_app_permission` also needs the permission's name."""


class UserPhone(UserSide):
    """The user's phone and surroundings: the tools the simulated user works its phone with, the helpers tasks
    call to break it (initialization actions) and to check it (assertions), and the network it finds."""

    db: TelecomUserStore

    @classmethod
    def cues(cls, name: str, arguments: Mapping[str, Any]) -> Cues | None:
        if name == "grant_app_permission":
            permission = str(arguments.get("permission", ""))
            return (("permission", "permissions", "allow", "access"), (permission,))
        return CUES.get(name)

    # Reading and changing the phone and the surroundings (the episode's own copy, made on the first change).

    @property
    def phone(self) -> PhoneState:
        return self.db.device[USER]

    @property
    def around(self) -> Surroundings:
        return self.db.surroundings[USER]

    def _phone(self) -> PhoneState:
        return self.db.device.edit(USER)

    def _around(self) -> Surroundings:
        return self.db.surroundings.edit(USER)

    def status_bar(self) -> str:
        """The status bar, as tau2-bench draws it."""
        phone, shown = self.phone, []
        if phone.airplane_mode:
            shown.append("✈️ Airplane Mode")
        else:
            shown.append(SIGNAL_BARS.get(phone.network_signal_strength, SIGNAL_BARS["none"]))
            if phone.network_technology_connected != "none":
                shown.append(phone.network_technology_connected)
            if phone.data_enabled and phone.network_technology_connected != "none":
                shown.append("📱 Data Enabled")
                if phone.data_saver_mode:
                    shown.append("🔽 Data Saver")
            else:
                shown.append("📵 Data Disabled")
        if phone.wifi_enabled and phone.wifi_connected:
            shown.append(f"📡 Connected to {phone.wifi_ssid}" if phone.wifi_ssid else "📡 Enabled")
        if phone.vpn_connected:
            shown.append("🔒 VPN Connected")
        shown.append(f"🔋 {phone.battery_level}%")
        return " | ".join(shown)

    def _with_bar(self, text: str) -> str:
        return f"{text}\nStatus Bar: {self.status_bar()}"

    def sim_status(self) -> SimStatus:
        return "missing" if self.phone.sim_card_missing else self.phone.sim_card_status

    def mobile_data_works(self) -> bool:
        """Whether mobile data works: service, a signal, roaming where needed, data on and not used up."""
        phone, around = self.phone, self.around
        if phone.airplane_mode or phone.network_signal_strength == "none":
            return False
        if phone.network_connection_status == "no_service":
            return False
        if around.is_abroad and not (phone.roaming_enabled and around.roaming_allowed):
            return False
        return phone.data_enabled and not around.mobile_data_usage_exceeded

    def speed(self) -> tuple[float | None, str]:
        """A speed test's result: Mbps (None without a connection) and how it rates."""
        if not self.mobile_data_works():
            return None, "No Connection"
        phone = self.phone
        factor = 1.0
        details = phone.vpn_details
        if (
            phone.vpn_connected
            and details is not None
            and details.server_performance == PerformanceLevel.POOR
        ):
            factor = 0.1
        if phone.data_saver_mode:
            factor *= 0.2
        low, high = SPEEDS.get(phone.network_technology_connected, (0.0, 0.0))
        mbps = round((low + high) / 2.0 * SIGNAL_SHARE.get(phone.network_signal_strength, 0.0) * factor, 2)
        for limit, rating in ((1, "Very Poor"), (5, "Poor"), (25, "Fair"), (100, "Good")):
            if mbps < limit:
                return mbps, rating
        return mbps, "Excellent"

    def mms_works(self) -> bool:
        """Whether the messaging app can send a picture message."""
        phone = self.phone
        if not self.mobile_data_works() or phone.network_technology_connected == "2G":
            return False
        if phone.wifi_calling_enabled and phone.wifi_calling_mms_over_wifi:
            return False  # the carrier does not carry MMS over Wi-Fi calling
        if phone.active_apn_settings.mmsc_url is None:
            return False
        messaging = phone.app_statuses.get("messaging")
        return messaging is not None and messaging.permissions.storage and messaging.permissions.sms

    def simulate_network_search(self) -> None:
        """Search for the network again: what the phone connects to, from its SIM, its preferred network type and
        the signal where the user is; no service in airplane mode, with a broken APN, or on a line out of service."""
        phone, around = self._phone(), self.around
        technology: Technology = "none"
        signal: Signal = "none"
        if self.sim_status() == "active":
            status: NetworkStatus = "connected"
            technology = MODE_TECHNOLOGY.get(phone.network_mode_preference, "4G")
            if phone.network_mode_preference == "4g_5g_preferred":
                technology = "4G" if around.signal_strength.get("5G", "none") == "none" else "5G"
            signal = around.signal_strength.get(technology, "none")
        else:
            status = "no_service"
        if phone.airplane_mode or phone.active_apn_settings.apn_name == "broken" or not around.line_active:
            status, technology, signal = "no_service", "none", "none"
        phone.network_connection_status = status
        phone.network_technology_connected = technology
        phone.network_signal_strength = signal

    # The user's tools.

    @tool
    def check_status_bar(self) -> str:
        """Look at the icons along the top of your phone's screen: signal bars and network type, whether mobile data is on (and data saver), Wi-Fi, VPN and the battery."""
        return f"Status Bar: {self.status_bar()}"

    @tool
    def check_network_status(self) -> str:
        """Open your phone's connection settings: airplane mode, the SIM, cellular service, signal and network type, whether mobile data and data roaming are on, and Wi-Fi."""
        phone = self.phone
        shown = [
            f"Airplane Mode: {'ON' if phone.airplane_mode else 'OFF'}",
            f"SIM Card Status: {self.sim_status()}",
            f"Cellular Connection: {phone.network_connection_status}",
            f"Cellular Signal: {phone.network_signal_strength}",
            f"Cellular Network Type: {phone.network_technology_connected}",
            f"Mobile Data Enabled: {'Yes' if phone.data_enabled else 'No'}",
            f"Data Roaming Enabled: {'Yes' if phone.roaming_enabled else 'No'}",
            f"Wi-Fi Radio: {'ON' if phone.wifi_enabled else 'OFF'}",
            f"Wi-Fi Connected: {'Yes' if phone.wifi_connected else 'No'}",
        ]
        if phone.wifi_connected:
            shown.append(f"Connected Wi-Fi Network: {phone.wifi_ssid}")
        return "\n".join(shown)

    @tool
    def check_network_mode_preference(self) -> str:
        """See which type of cellular network your phone prefers."""
        return f"Network Mode Preference: {self.phone.network_mode_preference}"

    @tool
    def set_network_mode_preference(
        self,
        mode: Annotated[
            NetworkMode,
            Field(
                description="'4g_5g_preferred' (the fastest the network has), '4g_only', '3g_only' or '2g_only' (slow, and no picture messages)"
            ),
        ],
    ) -> str:
        """Choose which type of cellular network your phone prefers; the phone then searches for the network again. Faster networks give faster data."""
        self._phone().network_mode_preference = mode
        self.simulate_network_search()
        return self._with_bar(f"Preferred Network Mode set to: {mode}")

    @tool
    def run_speed_test(self) -> str:
        """Measure how fast your mobile internet is right now, and what it is good enough for."""
        mbps, rating = self.speed()
        if mbps is None:
            return f"Speed test failed: {rating or 'Could not determine speed'}."
        return f"Speed Test Result: {mbps:.2f} Mbps ({rating}). {ADVICE.get(rating, '')}"

    @tool
    def toggle_airplane_mode(self) -> str:
        """Switch airplane mode on if it is off, or off if it is on. While it is on, the phone has no cellular service, no Wi-Fi and no VPN."""
        on = self._toggle_airplane_mode()
        return self._with_bar(f"Airplane Mode is now {'ON' if on else 'OFF'}.")

    @tool
    def check_sim_status(self) -> str:
        """See whether your SIM card works: active, missing, or locked by a PIN or PUK code."""
        return SIM_STATES[self.sim_status()]

    @tool
    def reseat_sim_card(self) -> str:
        """Take your SIM card out and put it back in, which can make the phone recognise it again."""
        self._phone().sim_card_missing = False
        self.simulate_network_search()
        return self._with_bar("SIM card re-seated successfully.")

    @tool
    def toggle_data(self) -> str:
        """Switch mobile data on if it is off, or off if it is on: whether the phone may use the cellular network for the internet."""
        on = self._toggle("data_enabled", search=True)
        return self._with_bar(f"Mobile Data is now {'ON' if on else 'OFF'}.")

    @tool
    def toggle_roaming(self) -> str:
        """Switch data roaming on if it is off, or off if it is on: whether the phone may use mobile data on other carriers' networks, abroad."""
        on = self._toggle("roaming_enabled", search=True)
        return self._with_bar(f"Data Roaming is now {'ON' if on else 'OFF'}.")

    @tool
    def check_data_restriction_status(self) -> str:
        """See whether data saver, which limits how much data the phone uses, is on."""
        if self.phone.data_saver_mode:
            return "Data Saver mode is ON (limits data usage)."
        return "Data Saver mode is OFF."

    @tool
    def toggle_data_saver_mode(self) -> str:
        """Switch data saver on if it is off, or off if it is on. While it is on, mobile data is slower."""
        on = self._toggle("data_saver_mode", search=False)
        return self._with_bar(f"Data Saver Mode is now {'ON' if on else 'OFF'}.")

    @tool
    def check_apn_settings(self) -> str:
        """See your phone's APN settings, which it reaches the carrier's data network and picture messaging through: the APN's name and the MMS center's URL."""
        settings = self.phone.active_apn_settings
        return (
            f"Current APN Name: {settings.apn_name or 'Not Set'}\n"
            f"MMSC URL (for picture messages): {settings.mmsc_url or 'Not Set'}\n"
            "(These are technical settings, usually best left unchanged.)"
        )

    @tool
    def set_apn_settings(self, apn_settings: ApnSettings) -> str:
        """Replace your phone's APN settings with these; a setting left out takes its default. The phone then searches for the network again.

        Args:
            apn_settings: The new APN settings.
        """
        self._phone().active_apn_settings = apn_settings.model_copy(deep=True)
        self.simulate_network_search()
        return self._with_bar(f"APN settings set to: {apn_settings.apn_name}")

    @tool
    def reset_apn_settings(self) -> str:
        """Put your APN settings back to the defaults. This takes effect when the phone next restarts."""
        self._phone().active_apn_settings.reset_at_reboot = True
        self.simulate_network_search()
        return self._with_bar("APN settings will reset at reboot.")

    @tool
    def check_wifi_status(self) -> str:
        """See whether Wi-Fi is on, which network the phone is on, and its signal."""
        phone = self.phone
        if not phone.wifi_enabled:
            return "Wi-Fi is turned OFF."
        if phone.wifi_connected:
            return f"Wi-Fi is ON and connected to '{phone.wifi_ssid}'. Signal strength: {phone.wifi_signal_strength}."
        return "Wi-Fi is ON but not connected to any network."

    @tool
    def toggle_wifi(self) -> str:
        """Switch Wi-Fi on if it is off, or off if it is on. It cannot be changed while airplane mode is on."""
        if self.phone.airplane_mode:
            return self._with_bar("Cannot change Wi-Fi settings while Airplane Mode is ON.")
        phone = self._phone()
        phone.wifi_enabled = not phone.wifi_enabled
        if not phone.wifi_enabled:
            phone.wifi_connected, phone.wifi_ssid, phone.wifi_signal_strength = False, None, "none"
        return self._with_bar(f"Wi-Fi is now {'ON' if phone.wifi_enabled else 'OFF'}.")

    @tool
    def check_wifi_calling_status(self) -> str:
        """See whether Wi-Fi calling, which carries calls over Wi-Fi instead of the cellular network, is on."""
        return f"Wi-Fi Calling is currently turned {'ON' if self.phone.wifi_calling_enabled else 'OFF'}."

    @tool
    def toggle_wifi_calling(self) -> str:
        """Switch Wi-Fi calling on if it is off, or off if it is on: whether calls go over Wi-Fi where the cellular signal is weak."""
        on = self._toggle("wifi_calling_enabled", search=False)
        return self._with_bar(f"Wi-Fi Calling is now {'ON' if on else 'OFF'}.")

    @tool
    def check_vpn_status(self) -> str:
        """See whether a VPN is switched on and connected, and the connected one's details."""
        phone = self.phone
        if phone.vpn_connected:
            if phone.vpn_details is not None:
                return f"VPN is ON and connected. Details: {phone.vpn_details.model_dump()}"
            return "VPN is ON and connected (no specific details available)."
        if phone.vpn_enabled_setting:
            return "VPN is turned ON in settings, but currently not connected."
        return "VPN is turned OFF."

    @tool
    def connect_vpn(self) -> str:
        """Connect to your VPN."""
        if self.phone.vpn_connected:
            return "VPN already connected."
        phone = self._phone()
        details = DEFAULT_VPN.model_copy(update={"server_performance": phone._vpn_server})
        phone.vpn_connected, phone.vpn_details = True, details
        return self._with_bar("VPN connected successfully.")

    @tool
    def disconnect_vpn(self) -> str:
        """Disconnect the VPN, if one is connected: your traffic then no longer goes through the VPN's server."""
        disconnected = self._disconnect_vpn()
        return self._with_bar(
            "VPN disconnected successfully." if disconnected else "No active VPN connection to disconnect."
        )

    @tool
    def check_installed_apps(self) -> str:
        """List the apps installed on your phone."""
        return f"The following apps are installed on the phone: {', '.join(self.phone.app_statuses)}"

    @tool
    def check_app_status(self, app_name: str) -> str:
        """See an app's details: the permissions it has.

        Args:
            app_name: The app's name as check_installed_apps lists it, such as 'messaging'.
        """
        app = self.phone.app_statuses.get(app_name)
        if app is None:
            return f"App '{app_name}' not found on this phone."
        granted = _granted(app.permissions)
        if not granted:
            return f"Status for App: {app_name}\n - Permissions: None granted."
        return "\n".join(
            [f"Status for App: {app_name}", " - Permissions Granted:", *(f"   - {p}" for p in granted)]
        )

    @tool
    def check_app_permissions(self, app_name: str) -> str:
        """See which permissions an app has, such as storage or SMS.

        Args:
            app_name: The app's name as check_installed_apps lists it, such as 'messaging'.
        """
        app = self.phone.app_statuses.get(app_name)
        if app is None:
            return f"App '{app_name}' not found on this phone."
        granted = _granted(app.permissions)
        if not granted:
            return f"App '{app_name}' currently has no permissions granted."
        return f"App '{app_name}' has permission for: {', '.join(granted)}."

    @tool
    def grant_app_permission(self, app_name: str, permission: str) -> str:
        """Give an app a permission it needs, such as storage or SMS for the messaging app to send picture messages.

        Args:
            app_name: The app's name as check_installed_apps lists it, such as 'messaging'.
            permission: The permission: 'sms', 'storage', 'phone' or 'network' (any case).
        """
        permission = permission.lower()
        if app_name not in self.phone.app_statuses:
            return self._with_bar(f"Error. App '{app_name}' not found. Cannot grant permission.")
        known = list(AppPermissions.model_fields)
        if permission not in known:
            return self._with_bar(
                f"Error. Permission '{permission}' not tracked for app '{app_name}', available permissions: {known}"
            )
        setattr(self._phone().app_statuses[app_name].permissions, permission, True)
        return self._with_bar(f"Success. Permission '{permission}' granted to app '{app_name}'.")

    @tool
    def can_send_mms(self) -> str:
        """Check whether your messaging app can send a picture message (MMS)."""
        if self.mms_works():
            return "Your messaging app can send MMS messages."
        return "Your messaging app cannot send MMS messages."

    @tool
    def reboot_device(self) -> str:
        """Restart your phone. Its network services start again, and APN settings set to go back to the defaults do so."""
        said = []
        if self.phone.active_apn_settings.reset_at_reboot:
            said.append("Resetting APN settings...")
            self._phone().active_apn_settings = ApnSettings()
        said.append("Restarting network services...")
        self._phone().network_connection_status = "searching"
        self.simulate_network_search()
        return self._with_bar("\n".join(said))

    @tool
    def check_payment_request(self) -> str:
        """See whether the agent has sent you a bill to pay."""
        request = self.around.payment_request
        if request is None:
            return "No payment request has been made."
        return f"You have a payment request for bill {request.bill_id} of {request.amount_due} USD."

    @tool
    def make_payment(self) -> str:
        """Pay the bill the agent sent you a payment request for."""
        if self.around.payment_request is None:
            return "You do not have a payment request."
        request = self._around().payment_request
        assert request is not None
        request.paid = True
        return f"Payment of {request.amount_due} USD has been made for bill {request.bill_id}."

    # What tasks call to set the scene (initialization actions).

    def set_user_info(self, name: str, phone_number: str) -> None:
        around = self._around()
        around.name, around.phone_number = name, phone_number

    def set_user_location(self, abroad: bool) -> None:
        self._around().is_abroad = abroad

    def turn_airplane_mode_on(self) -> str:
        if not self._toggle_airplane_mode():
            self._toggle_airplane_mode()
        return "Airplane Mode is now ON."

    def turn_airplane_mode_off(self) -> str:
        if self._toggle_airplane_mode():
            self._toggle_airplane_mode()
        return "Airplane Mode is now OFF."

    def unseat_sim_card(self) -> str:
        self._phone().sim_card_missing = True
        self.simulate_network_search()
        return "SIM card un-seated successfully."

    def lock_sim_card(self, mode: Literal["pin", "puk"]) -> str:
        if mode in ("pin", "puk"):
            self._phone().sim_card_status = "locked_pin" if mode == "pin" else "locked_puk"
        self.simulate_network_search()
        return f"SIM card locked successfully in {mode} mode."

    def turn_data_on(self) -> str:
        self._phone().data_enabled = True  # no network search, as tau2-bench's
        return "Data connection restored."

    def turn_data_off(self) -> str:
        self._turn("data_enabled", False, search=True)
        return "Data connection broken."

    def turn_roaming_on(self) -> str:
        self._turn("roaming_enabled", True, search=True)
        return "Data Roaming is now ON."

    def turn_roaming_off(self) -> str:
        self._turn("roaming_enabled", False, search=True)
        return "Data Roaming is now OFF."

    def turn_data_saver_mode_on(self) -> str:
        self._turn("data_saver_mode", True, search=False)
        return "Data Saver Mode is now ON."

    def turn_data_saver_mode_off(self) -> str:
        self._turn("data_saver_mode", False, search=False)
        return "Data Saver Mode is now OFF."

    def break_apn_settings(self) -> str:
        self._phone().active_apn_settings.apn_name = "broken"
        self.simulate_network_search()
        return "APN settings broken. Please call reset_apn_settings() to fix."

    def break_apn_mms_setting(self) -> str:
        self._phone().active_apn_settings.mmsc_url = None
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."

    def set_wifi_calling(self, enabled: bool, mms_over_wifi: bool | None = None) -> str:
        phone = self._phone()
        phone.wifi_calling_enabled = enabled
        said = f"Wi-Fi Calling is now {'ON' if enabled else 'OFF'}."
        if mms_over_wifi is not None:
            phone.wifi_calling_mms_over_wifi = mms_over_wifi
            said += f"\nMMS over Wi-Fi is now {'ON' if mms_over_wifi else 'OFF'}."
        return said

    def break_vpn(self) -> str:
        """Connect a VPN whose server performs poorly (slow mobile data)."""
        self.connect_vpn()
        phone = self._phone()
        if phone.vpn_details is None:
            raise AttributeError("'NoneType' object has no attribute 'server_performance'")
        phone.vpn_details.server_performance = phone._vpn_server = PerformanceLevel.POOR
        return "VPN connection broken."

    def remove_app_permission(self, app_name: str, permission: str) -> tuple[bool, str]:
        permission = permission.lower()
        if app_name not in self.phone.app_statuses:
            return False, f"App '{app_name}' not found. Cannot remove permission."
        if permission not in AppPermissions.model_fields:
            return False, f"Permission '{permission}' not tracked for app '{app_name}'."
        setattr(self._phone().app_statuses[app_name].permissions, permission, False)
        return True, f"Permission '{permission}' removed from app '{app_name}'."

    # What tasks check at the end (assertions).

    def assert_airplane_mode_status(self, expected_status: bool) -> bool:
        return self.phone.airplane_mode == expected_status

    def assert_service_status(self, expected_status: str) -> bool:
        if expected_status not in ("connected", "searching", "no_service", "emergency_only"):
            raise ValueError(f"'{expected_status}' is not a valid NetworkStatus")
        return self.phone.network_connection_status == expected_status

    def assert_mobile_data_status(self, expected_status: bool) -> bool:
        return self.mobile_data_works() == expected_status

    def assert_mobile_roaming_status(self, expected_status: bool) -> bool:
        return self.phone.roaming_enabled == expected_status

    def assert_mobile_data_saver_mode_status(self, expected_status: bool) -> bool:
        return self.phone.data_saver_mode == expected_status

    def assert_internet_speed(self, expected_speed: float, expected_desc: str | None = None) -> bool:
        mbps, rating = self.speed()
        fast_enough = (mbps or 0.0) >= expected_speed
        return (
            fast_enough if expected_desc is None else fast_enough and rating.lower() == expected_desc.lower()
        )

    def assert_internet_not_excellent(self) -> bool:
        return self.speed()[1].lower() != "excellent"

    def assert_can_send_mms(self, expected_status: bool) -> bool:
        return self.mms_works() == expected_status

    def assert_mobile_data_usage_exceeded(self, expected_status: bool) -> bool:
        return self.around.mobile_data_usage_exceeded == expected_status

    # Switches.

    def _toggle(self, setting: str, *, search: bool) -> bool:
        phone = self._phone()
        on = not getattr(phone, setting)
        setattr(phone, setting, on)
        if search:
            self.simulate_network_search()
        return on

    def _turn(self, setting: str, on: bool, *, search: bool) -> None:
        """Switch a setting on or off as tau2-bench's helpers do: toggle it, and again if it came out wrong (each
        toggle searching the network where `search`)."""
        if self._toggle(setting, search=search) != on:
            self._toggle(setting, search=search)

    def _toggle_airplane_mode(self) -> bool:
        phone = self._phone()
        was_on = phone.airplane_mode
        phone.airplane_mode = not was_on
        if was_on:
            phone.network_connection_status = "searching"
        if not was_on or phone.wifi_enabled:
            phone.wifi_connected, phone.wifi_ssid, phone.wifi_signal_strength = False, None, "none"
        if not was_on and phone.vpn_connected:
            self._disconnect_vpn()
        self.simulate_network_search()
        return phone.airplane_mode

    def _disconnect_vpn(self) -> bool:
        if not self.phone.vpn_connected:
            return False
        phone = self._phone()
        phone.vpn_connected, phone.vpn_details = False, None
        return True


def _granted(permissions: AppPermissions) -> list[str]:
    return [name.replace("_", " ").lower() for name, allowed in permissions.model_dump().items() if allowed]
