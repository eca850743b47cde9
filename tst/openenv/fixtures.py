"""The OpenEnv tier's one session fixture: OpenEnv's venvs, its real servers, agent_env's OpenEnv surface, and what
OpenEnv's real clients saw there; loaded for every tier by tst/conftest.py, started only when a test asks for it.

Everything that takes time starts at once and is waited for only when a test needs it: both venvs are built (or
taken from the cache, testbed/openenv_venvs.py), then OpenEnv's server for each version starts on
testbed/openenv_ledger.py, `agent-env serve --openenv` starts twice (without a token for openenv-core 0.3.0, whose
clients cannot send one; with one for openenv 0.10.0), and each version's clients drive the agent_env server in a
subprocess (tst/openenv/drive.py). Ports are free ones picked at start, servers are polled on `/health`, and every
process is stopped by its own handle (testbed/processes.py). The tier skips, saying why, only when the package index
cannot be reached to build a venv that is not cached.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from testbed import openenv_venvs as venvs
from testbed.processes import Process, Server
from testbed.tiers import Tier, driver_report, running, serve_toy

HERE = Path(__file__).resolve().parent
VERSIONS = tuple(venvs.SPECS)
TOKEN = "openenv-tier-token"
AGENT_ENV_EPISODES = 2
"""The agent_env servers' `--max-episodes`."""


class OpenEnvTier(Tier):
    """The running tier; see the module docstring."""

    def __init__(self, logs: Path) -> None:
        super().__init__(logs)
        self._reports: dict[str, dict[str, Any]] = {}

    def start(self) -> None:
        """Build the venvs, then start every server and the clients; returns before the slow ones are up."""
        with ThreadPoolExecutor(len(VERSIONS)) as pool:
            self.pythons = dict(zip(VERSIONS, pool.map(venvs.python, VERSIONS), strict=True))
        self.ledgers = {version: self._ledger(version) for version in VERSIONS}
        self.agent_envs = {version: self._agent_env(version) for version in VERSIONS}
        self.drivers = {version: self._driver(version) for version in VERSIONS}

    def ledger_url(self, version: str) -> str:
        """The base URL of OpenEnv `version`'s real server on the ledger, once it answers."""
        return self.ledgers[version].url()

    def client_report(self, version: str) -> dict[str, Any]:
        """What OpenEnv `version`'s clients saw on `agent-env serve --openenv` (tst/openenv/drive.py)."""
        if version not in self._reports:
            self._reports[version] = driver_report(self.drivers[version])
        return self._reports[version]

    def _ledger(self, version: str) -> Server:
        name, log = f"OpenEnv {version}'s server", self._log(f"ledger-{version}")
        return self._start(venvs.ledger(self.pythons[version], name, log))

    def _agent_env(self, version: str) -> Server:
        return self._start(
            serve_toy(
                f"agent-env serve --openenv (for {version})",
                "openenv",
                self._log(f"agent-env-{version}"),
                "--max-episodes",
                str(AGENT_ENV_EPISODES),
                token=self.token(version),
                path="/openenv",
            )
        )

    def _driver(self, version: str) -> Process:
        url = self.agent_envs[version].url()
        command = [str(self.pythons[version]), str(HERE / "drive.py"), url, str(AGENT_ENV_EPISODES)]
        token = self.token(version)
        return self._start(
            Process(
                f"OpenEnv {version}'s clients",
                [*command, *([token] if token else [])],
                self._log(f"drive-{version}"),
            )
        )

    def _log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    @staticmethod
    def token(version: str) -> str | None:
        """The agent_env server's token for a version's clients (openenv-core 0.3.0's clients send no headers)."""
        return TOKEN if version != "0.3.0" else None


@pytest.fixture(scope="session")
def openenv_tier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenEnvTier]:
    """The OpenEnv tier, started on first use and stopped when the session ends."""
    with running(OpenEnvTier(tmp_path_factory.mktemp("openenv")), "OpenEnv's packages") as tier:
        yield tier
