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

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed import ors_venv
from testbed.processes import STARTUP_SECONDS, Process, Server, free_port
from testbed.venvs import ROOT

HERE = Path(__file__).resolve().parent
TOKEN = "ors-tier-token"


class ORSTier:
    """The running tier; see the module docstring."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.processes: list[Process] = []
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
        port = free_port()
        command = [
            str(Path(sys.executable).parent / "agent-env"),
            "serve",
            "testbed.toy:ToyDesk",
            "--port",
            str(port),
            "--ors",
            "--token",
            TOKEN,
            "--log-level",
            "warning",
            *options,
        ]
        environment = {key: value for key, value in os.environ.items() if key != "AGENT_ENV_TOKEN"}
        environment["PYTHONPATH"] = str(ROOT)
        return Server(
            "agent-env serve --ors", command, f"http://127.0.0.1:{port}", log, cwd=ROOT, env=environment
        )

    def report(self) -> dict[str, Any]:
        """What the SDK's client and TRL's adapter saw on `agent-env serve --ors` (tst/ors/drive.py)."""
        if self._report is None:
            try:
                self.driver.popen.wait(timeout=STARTUP_SECONDS)
            except subprocess.TimeoutExpired:
                raise self.driver.failed(f"did not finish within {STARTUP_SECONDS:g} s") from None
            if self.driver.popen.returncode != 0:
                raise self.driver.failed(f"exited with {self.driver.popen.returncode}")
            lines = self.driver.log.read_text().strip().splitlines()
            self._report = json.loads(lines[-1])
        return self._report

    def close(self) -> None:
        for process in reversed(self.processes):
            process.stop()

    def _start(self, process: Any) -> Any:
        self.processes.append(process)
        return process


@pytest.fixture(scope="session")
def ors_tier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ORSTier]:
    """The ORS tier, started on first use and stopped when the session ends."""
    tier = ORSTier(tmp_path_factory.mktemp("ors"))
    try:
        tier.start()
    except ors_venv.PyPIUnreachableError as error:
        tier.close()
        pytest.skip(f"the openreward SDK cannot be installed: {error}")
    except BaseException:
        tier.close()
        raise
    try:
        yield tier
    finally:
        tier.close()
