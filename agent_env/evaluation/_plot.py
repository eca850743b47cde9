"""Draw a run's reward distribution, each arm side by side, and for a comparison the paired differences (in the
format the file's suffix names; matplotlib, the `cli` extra)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from agent_env.evaluation._run import Report
from agent_env.evaluation._stats import latest

COLORS = {"full": "#4c72b0", "lossy": "#dd8452"}


def plot_rewards(report: Report, path: str | Path) -> Path:
    """Write the reward histogram of each arm (and, comparing, of the paired differences) to `path`."""
    from matplotlib.figure import Figure

    by_key = latest(report.episodes)
    names = [summary.arm for summary in report.summaries]
    rewards = {
        name: np.array(
            [e.reward for (arm, _), e in by_key.items() if arm == name and e.scored()], dtype=float
        )
        for name in names
    }
    panels = len(names) + (report.comparison is not None)
    figure = Figure(figsize=(4.2 * panels, 3.8), dpi=100, layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, panels, sharey=False))
    bins = np.linspace(*_span(rewards), 21)
    for axis, (summary, name) in zip(axes, zip(report.summaries, names, strict=True), strict=False):
        values = rewards[name]
        axis.hist(values, bins=bins, color=COLORS.get(name, "#55a868"), edgecolor="white")
        estimate = summary.reward
        axis.axvline(estimate.value, color="black", linewidth=1.5, label=f"mean {estimate.value:.3f}")
        if np.isfinite(estimate.low):
            axis.axvspan(estimate.low, estimate.high, color="black", alpha=0.12, label="95% CI")
        axis.set_title(f"{name}: {len(values)} episodes")
        axis.set_xlabel("reward")
        axis.legend(loc="upper left", fontsize=8)
    axes[0].set_ylabel("episodes")
    comparison = report.comparison
    if comparison is not None:
        first, second = comparison.first, comparison.second
        differences = np.array(
            [
                (e.reward or 0.0) - (by_key[(second, key)].reward or 0.0)
                for (arm, key), e in by_key.items()
                if arm == first and e.scored() and (second, key) in by_key and by_key[(second, key)].scored()
            ],
            dtype=float,
        )
        axis = axes[-1]
        axis.hist(differences, bins=21, color="#8172b3", edgecolor="white")
        axis.axvline(0, color="grey", linewidth=1)
        axis.axvline(
            comparison.reward.value,
            color="black",
            linewidth=1.5,
            label=f"mean {comparison.reward.value:+.3f}",
        )
        if np.isfinite(comparison.reward.low):
            axis.axvspan(
                comparison.reward.low, comparison.reward.high, color="black", alpha=0.12, label="95% CI"
            )
        axis.set_title(f"{first} - {second}, paired: {comparison.pairs}")
        axis.set_xlabel("reward difference")
        axis.legend(loc="upper left", fontsize=8)
    figure.suptitle(f"{report.environment} on {report.model} ({report.split})")
    figure.savefig(path, format=plot_format(path))
    return Path(path)


def plot_format(path: str | Path) -> str:
    """The format `path` is drawn in: the one its suffix names, PNG without one (the name is kept as it is).

    Raises:
        ValueError: The suffix names a format matplotlib cannot write.
    """
    from matplotlib.backend_bases import FigureCanvasBase

    suffix = Path(path).suffix.lower().removeprefix(".")
    if not suffix:
        return "png"
    known = FigureCanvasBase.get_supported_filetypes()
    if suffix not in known:
        listed = ", ".join(f".{name}" for name in sorted(known))
        raise ValueError(f"--plot {path}: matplotlib cannot write .{suffix} files; name one of {listed}")
    return suffix


def check_plot_path(path: str | Path) -> None:
    """Refuse a plot the run could not write at its end, before it starts: an unknown suffix, a folder that is
    missing or not writable, a folder named as the file.

    Raises:
        ValueError: Saying which.
    """
    plot_format(path)
    folder = Path(path).parent
    if not folder.is_dir():
        raise ValueError(f"--plot cannot be written: {folder} is not a folder (create it, or name another)")
    if Path(path).is_dir():
        raise ValueError(f"--plot cannot be written: {path} is a folder (name a file in it)")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"--plot cannot be written: {folder} is not writable")


def _span(rewards: dict[str, np.ndarray]) -> tuple[float, float]:
    values = np.concatenate([*rewards.values(), np.array([0.0, 1.0])])
    low, high = float(values.min()), float(values.max())
    return (low, high) if high > low else (low - 0.5, high + 0.5)
