"""The ORS tier's one session fixture: the openreward SDK's venv, its own server, `agent-env serve --ors`, and what the
SDK's client and TRL's adapter saw there; loaded for every tier by tst/conftest.py, started only when a test asks.

Everything that takes time starts at once and is waited for only when a test needs it: the venv is built (or taken
from the cache, testbed/ors_venv.py), then the SDK's server starts on testbed/ors_orders.py, `agent-env serve --ors`
starts on the toy with a token, and the SDK's client and TRL's adapter drive it in a subprocess (tst/ors/drive.py).
Ports are free ones picked at start, servers are polled on `/health`, and every process is stopped by its own handle
(testbed/processes.py). The tier skips, saying why, only when the package index cannot be reached to build a venv
that is not cached.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed import ors_venv
from testbed.processes import Process, Server
from testbed.tiers import Tier, driver_report, running, serve_toy

HERE = Path(__file__).resolve().parent
TOKEN = "ors-tier-token"


class ORSTier(Tier):
    """The running tier; see the module docstring."""

    def __init__(self, logs: Path) -> None:
        super().__init__(logs)
        self._report: dict[str, Any] | None = None

    def start(self) -> None:
        """Build the venv, then start every server and the clients; returns before the slow ones are up."""
        self.python = ors_venv.python()
        environment = {**os.environ, **ors_venv.QUIET}
        self.sdk = self._start(ors_venv.orders(self.python, self.logs / "sdk-server.log"))
        self.agent_env = self._start(self.serve(self.logs / "agent-env.log"))
        self.driver = self._start(
            Process(
                "the SDK's client and TRL's adapter",
                [str(self.python), str(HERE / "drive.py"), self.agent_env.url(), TOKEN],
                self.logs / "drive.log",
                env=environment,
            )
        )

    def serve(self, log: Path, *options: str) -> Server:
        """`agent-env serve testbed.toy:ToyDesk --ors --token TOKEN` on a free port (not started by the tier when
        called by a test: it stops it)."""
        return serve_toy("agent-env serve --ors", "ors", log, *options, token=TOKEN)

    def report(self) -> dict[str, Any]:
        """What the SDK's client and TRL's adapter saw on `agent-env serve --ors` (tst/ors/drive.py)."""
        if self._report is None:
            self._report = driver_report(self.driver)
        return self._report


@pytest.fixture(scope="session")
def ors_tier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ORSTier]:
    """The ORS tier, started on first use and stopped when the session ends."""
    with running(ORSTier(tmp_path_factory.mktemp("ors")), "the openreward SDK") as tier:
        yield tier
