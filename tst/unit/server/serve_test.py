"""`agent_env/server/_serve.py`: how `agent-env serve` shows agent_env's own log lines."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator

import pytest

from agent_env.server._serve import show_logs


@pytest.fixture
def package_logger() -> Iterator[logging.Logger]:
    """agent_env's logger with no handlers of its own, as in a fresh process; put back as it was afterwards."""
    package = logging.getLogger("agent_env")
    handlers, level = list(package.handlers), package.level
    package.handlers.clear()
    yield package
    package.handlers[:] = handlers
    package.setLevel(level)


def test_log_lines_go_to_stderr_as_it_is_when_written_not_as_it_was(package_logger, capsys) -> None:
    first = io.StringIO()
    real, sys.stderr = sys.stderr, first
    try:
        show_logs("info")  # as `serve` does in a process whose stderr is later swapped (a test's capture)
        package_logger.warning("first line")
    finally:
        sys.stderr = real
    first.close()
    package_logger.warning("second line")
    err = capsys.readouterr().err
    assert "Logging error" not in err  # not written to the closed stream it was made with
    assert "second line" in err
