"""The figures the tier measures (times to detect, rates, latencies), printed at the end of the run, never asserted:
this machine is shared, so they describe one run, not a bound."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Figures:
    """Figures by section, in the order they were recorded."""

    rows: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, section: str, name: str, value: str) -> None:
        self.rows.append((section, name, value))

    def lines(self) -> list[str]:
        """The figures as aligned lines, one section after another."""
        if not self.rows:
            return []
        width = max(len(name) for _, name, _ in self.rows)
        lines: list[str] = []
        section = None
        for row_section, name, value in self.rows:
            if row_section != section:
                section = row_section
                lines.append(f"{section}:")
            lines.append(f"  {name:<{width}}  {value}")
        return lines


FIGURES = Figures()
"""This run's figures (the tier's conftest prints them in pytest's terminal summary)."""


def seconds(value: float) -> str:
    return f"{value:.2f} s"


def milliseconds(value: float) -> str:
    return f"{value * 1000:.1f} ms"


def percentiles(values: list[float]) -> tuple[float, float]:
    """The p50 (median) and p99 (nearest rank: of fewer than 51 values, the largest) of `values`."""
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def spread(values: list[float]) -> str:
    """`low to high`, in seconds (one value when they agree to a hundredth)."""
    low, high = seconds(min(values)), seconds(max(values))
    return low if low == high else f"{low} to {high}"


def took(outcome: dict[str, Any]) -> str:
    """How long a call the trainer recorded took, in seconds."""
    return seconds(outcome["ended"] - outcome["started"])
