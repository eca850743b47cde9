"""The desk's battery: its limits and how net power moves its state of charge (SoC)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from agent_env.errors import AgentEnvError


class BatteryConfigError(AgentEnvError, ValueError):
    """A battery whose limits contradict each other; the message names the field to change."""

    code = "battery_config"


@dataclass(frozen=True)
class Battery:
    """One grid-scale battery; defaults are the GridSim desk's (100 MW, 200 MWh, 85% round trip).

    Net power p is in MW over one hour, positive when discharging to the grid, negative when charging.
    Invariant: 0 < soc_min_mwh <= soc_start_mwh <= soc_max_mwh <= capacity_mwh.
    """

    charge_mw: float = 100.0
    discharge_mw: float = 100.0
    capacity_mwh: float = 200.0
    charge_efficiency: float = 0.922
    discharge_efficiency: float = 0.922
    soc_min_mwh: float = 10.0
    soc_max_mwh: float = 190.0
    soc_start_mwh: float = 100.0
    degradation_per_mwh: float = 10.0

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not math.isfinite(value) or value < 0:
                raise BatteryConfigError(f"Battery.{name} must be a finite number >= 0, got {value!r}")
        if self.charge_mw <= 0 or self.discharge_mw <= 0:
            raise BatteryConfigError("Battery.charge_mw and discharge_mw must be > 0")
        for name in ("charge_efficiency", "discharge_efficiency"):
            if not 0 < getattr(self, name) <= 1:
                raise BatteryConfigError(f"Battery.{name} must be in (0, 1], got {getattr(self, name)!r}")
        if not self.soc_min_mwh <= self.soc_start_mwh <= self.soc_max_mwh <= self.capacity_mwh:
            raise BatteryConfigError(
                "Battery needs soc_min_mwh <= soc_start_mwh <= soc_max_mwh <= capacity_mwh, "
                f"got {self.soc_min_mwh}, {self.soc_start_mwh}, {self.soc_max_mwh}, {self.capacity_mwh}"
            )

    def soc_after(self, soc_mwh: float, net_mw: float) -> float:
        """SoC at the end of an hour that starts at `soc_mwh` and runs at `net_mw` (no limits applied)."""
        if net_mw >= 0:
            return soc_mwh - net_mw / self.discharge_efficiency
        return soc_mwh - self.charge_efficiency * net_mw

    def soc_path(self, net_mw: Sequence[float] | np.ndarray) -> np.ndarray:
        """SoC at every hour boundary for an hourly net-power schedule.

        E_t = E_{t-1} + eff_charge * max(-p_t, 0) - max(p_t, 0) / eff_discharge, starting at soc_start_mwh.

        Args:
            net_mw: Net power per hour in MW, positive discharging.

        Returns:
            Array of len(net_mw) + 1 values: E_0 (the start) through E_T, in MWh; limits are not applied.
        """
        p = np.asarray(net_mw, dtype=float)
        change = self.charge_efficiency * np.maximum(-p, 0.0) - np.maximum(p, 0.0) / self.discharge_efficiency
        return np.concatenate(([self.soc_start_mwh], self.soc_start_mwh + np.cumsum(change)))

    def to_dict(self) -> dict[str, float]:
        """The battery as plain JSON-ready numbers."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Battery:
        """A battery from `to_dict` output; unknown keys are rejected by the constructor."""
        return cls(**{key: float(value) for key, value in data.items()})
