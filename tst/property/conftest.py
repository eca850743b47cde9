"""The property tier: Hypothesis settings kept small enough that the whole tier runs in about a minute, and the
count of inputs tried, printed at the end of the run in one line (with `-v`, per kind of input)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, settings

PROPERTY = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
"""The settings of every test in this tier (applied per test, so other tiers keep Hypothesis's defaults)."""

TRIED: Counter[str] = Counter()
"""Inputs tried, by what was tried on what (`gridsim-desk/check_offers: valid`, ...)."""


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line at the end of the run, how many inputs the tier tried; with `-v`, the count for each kind."""
    if not TRIED:
        return
    if terminalreporter.verbosity <= 0:
        terminalreporter.write_line(
            f"property tier: {sum(TRIED.values()):,} inputs tried, of {len(TRIED)} kind{'s' if len(TRIED) != 1 else ''} (pytest -v lists them)"
        )
        return
    terminalreporter.section("property tier: inputs tried")
    for what, count in sorted(TRIED.items()):
        terminalreporter.write_line(f"{count:6d}  {what}")
    terminalreporter.write_line(f"{sum(TRIED.values()):6d}  in all")
