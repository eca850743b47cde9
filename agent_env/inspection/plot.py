"""Draw one settled desk day as a PNG a desk trader reads: prices, energy, state of charge, AS awards, hourly P&L."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agent_env.envs.gridsim.bundle import load_bundle
from agent_env.envs.gridsim.hours import hour_label
from agent_env.envs.gridsim.market import PRODUCT_NAMES
from agent_env.inspection.rollout import Episode

HOURS = np.arange(1, 25)
AS_COLORS = ("#4c72b0", "#8172b3", "#dd8452", "#ccb974", "#55a868", "#64b5cd")


def plot_episode(episode: Episode, path: str | Path) -> Path:
    """Write the episode's day to `path` as a PNG (matplotlib's Agg canvas: no display needed); returns the path."""
    from matplotlib.figure import Figure

    bundle = load_bundle(episode.task_id.split("/")[0])
    forecast, battery, s = bundle.day(episode.task_id).forecast, bundle.battery, episode.settlement
    figure = Figure(figsize=(11, 12.5), dpi=100, layout="constrained")
    prices, energy, soc, ancillary, pnl = figure.subplots(
        5, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2.2, 2, 2.2, 1.8]}
    )
    figure.suptitle(
        f"{episode.task_id}  ·  {forecast.date} ({forecast.season})  ·  policy {episode.policy}\n"
        f"profit ${s.profit:,.0f} of ${episode.bound:,.0f} achievable (reward {episode.reward:.3f}):  energy "
        f"${s.energy_revenue:,.0f}, AS ${s.as_revenue:,.0f}, imbalance -${s.imbalance_cost:,.0f}, "
        f"AS penalty -${s.as_penalty:,.0f}, degradation -${s.degradation_cost:,.0f}",
        fontsize=11,
    )

    prices.fill_between(HOURS, forecast.spp.p10, forecast.spp.p90, step="mid", color="#999", alpha=0.25,
                        label="forecast P10-P90")  # fmt: skip
    prices.step(HOURS, forecast.spp.p50, where="mid", color="#555", linestyle="--", label="forecast P50")
    prices.step(HOURS, s.spp, where="mid", color="#c44e52", linewidth=2, label="realized SPP")
    prices.set_ylabel("SPP  $/MWh")
    _headroom(prices, above=True)
    prices.legend(loc="upper left", fontsize=8, ncols=3)

    selling, buying = np.maximum(s.cleared_mw, 0), np.minimum(s.cleared_mw, 0)
    energy.bar(HOURS, selling, width=0.8, color="#55a868", alpha=0.45, label="cleared: discharge (sell)")
    energy.bar(HOURS, buying, width=0.8, color="#4c72b0", alpha=0.45, label="cleared: charge (buy)")
    energy.step(HOURS, s.delivered_mw, where="mid", color="black", linewidth=1.5, label="delivered")
    energy.axhline(0, color="#333", linewidth=0.8)
    energy.set_ylabel("MW\n+ discharge / - charge")
    _headroom(energy, above=True, below=True)
    energy.legend(loc="upper left", fontsize=8, ncols=3)

    boundaries = np.arange(0.5, 25)  # SoC at the start of HE01 ... the end of HE24
    soc.plot(boundaries, s.soc_mwh, color="#8172b3", linewidth=2, marker="o", markersize=3, label="SoC")
    soc.axhline(battery.soc_min_mwh, color="#999", linestyle=":", label="min / max")
    soc.axhline(battery.soc_max_mwh, color="#999", linestyle=":")
    soc.set_ylim(0, battery.capacity_mwh * 1.05)
    soc.set_ylabel("SoC  MWh")
    soc.legend(loc="upper left", fontsize=8, ncols=2)

    bottom = np.zeros(len(HOURS))
    for row, name in enumerate(PRODUCT_NAMES):
        awarded = s.awarded_mw[row]
        if awarded.any():
            ancillary.bar(HOURS, awarded, width=0.8, bottom=bottom, color=AS_COLORS[row], label=name)
            bottom = bottom + awarded
    cut = s.cut_mw.sum(axis=0)
    if cut.any():
        ancillary.bar(HOURS, cut, width=0.8, bottom=bottom - cut, fill=False, hatch="///", edgecolor="#c44e52",
                      label="cut (cannot be backed)")  # fmt: skip
    ancillary.set_ylabel("AS awards  MW")
    if bottom.any() or cut.any():
        _headroom(ancillary, above=True)
        ancillary.legend(loc="upper left", fontsize=8, ncols=7)
    else:
        ancillary.text(12.5, 0.5, "no AS awards", ha="center", va="center", color="#777")

    pnl.bar(HOURS, s.hourly_profit, width=0.8, color=np.where(s.hourly_profit >= 0, "#55a868", "#c44e52"))
    pnl.axhline(0, color="#333", linewidth=0.8)
    pnl.set_ylabel("P&L  $")
    pnl.set_xticks(HOURS, [hour_label(int(hour)) for hour in HOURS], rotation=90, fontsize=8)
    pnl.set_xlim(0.4, 24.6)
    pnl.set_xlabel("hour ending")
    for axes in (prices, energy, soc, ancillary, pnl):
        axes.grid(axis="y", alpha=0.3)
    target = Path(path)
    figure.savefig(target, format="png")
    return target


def _headroom(axes: Any, *, above: bool = False, below: bool = False) -> None:
    """Widen the y range by a quarter, so the legend sits clear of the data."""
    low, high = axes.get_ylim()
    span = high - low
    axes.set_ylim(low - span * 0.25 * below, high + span * 0.25 * above)
