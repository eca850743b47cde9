"""The tier's end-of-run summary (`tst/property/conftest.py`): one line by default, the count per kind with `-v`."""

from __future__ import annotations

import io
from collections import Counter

import pytest
from _pytest.terminal import TerminalReporter

from tst.property import conftest


def summary(pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch, verbose: int) -> list[str]:
    monkeypatch.setattr(pytestconfig.option, "verbose", verbose)
    monkeypatch.setattr(
        conftest, "TRIED", Counter({"render/qwen3: tools rendered": 106, "normalize/x: valid": 2})
    )
    written = io.StringIO()
    conftest.pytest_terminal_summary(TerminalReporter(pytestconfig, written))
    return written.getvalue().splitlines()


def test_the_summary_is_one_line_unless_asked_for_more(pytestconfig, monkeypatch):
    assert summary(pytestconfig, monkeypatch, 0) == [
        "property tier: 108 inputs tried, of 2 kinds (pytest -v lists them)"
    ]


def test_verbose_runs_list_the_count_of_each_kind(pytestconfig, monkeypatch):
    lines = summary(pytestconfig, monkeypatch, 1)
    assert lines[-3:] == [
        "     2  normalize/x: valid",
        "   106  render/qwen3: tools rendered",
        "   108  in all",
    ]
