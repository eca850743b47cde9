"""`agent_env/server/_serve.py`: how `agent-env serve` shows agent_env's own log lines, and which HTTP stack it runs."""

from __future__ import annotations

import importlib.util
import io
import logging
import sys
from collections.abc import Iterator

import pytest

from agent_env.server._protocol import HEADER_BYTES
from agent_env.server._serve import show_logs, uvicorn_options
from agent_env.server.client import KEEPALIVE_EXPIRY


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


def test_serve_runs_httptools_on_uvloop_where_they_are_installed_and_h11_on_asyncio_where_not(monkeypatch):
    pytest.importorskip("httptools")
    pytest.importorskip("uvloop")
    options = uvicorn_options(3.0)
    assert (options["http"].parser_name, options["http"].header_timeout, options["loop"]) == (
        "httptools",
        3.0,
        "uvloop",
    )
    assert options["h11_max_incomplete_event_size"] == HEADER_BYTES
    assert (
        options["timeout_keep_alive"] > KEEPALIVE_EXPIRY
    )  # the client's connections never race the server's

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("httptools", "uvloop") else real(name, *a),
    )
    options = uvicorn_options(3.0)
    assert (options["http"].parser_name, options["loop"]) == ("h11", "asyncio")
    with pytest.raises(
        ValueError, match=r"httptools parser is not installed: .*or parse with h11 \(--http h11\)"
    ):
        uvicorn_options(http="httptools")
    with pytest.raises(
        ValueError, match=r"uvloop is not installed: .*or run asyncio's loop \(--loop asyncio\)"
    ):
        uvicorn_options(loop="uvloop")


def test_an_unknown_parser_or_loop_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="the HTTP parser must be auto, httptools or h11, not 'h2'"):
        uvicorn_options(http="h2")
    with pytest.raises(ValueError, match="the event loop must be auto, uvloop or asyncio, not 'trio'"):
        uvicorn_options(loop="trio")
