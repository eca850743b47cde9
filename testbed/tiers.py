"""What the tiers whose servers and clients run in venvs of their own share (tst/ors, tst/openenv): the processes a
tier starts and stops, `agent-env serve` on the toy, the report a tier's driver writes, and the life of the tier's
session fixture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from testbed.processes import STARTUP_SECONDS, Process, Server, free_port
from testbed.venvs import ROOT, PyPIUnreachableError

T = TypeVar("T", bound="Tier")


class Tier:
    """A tier's processes, started by `start` (which returns before the slow ones are up) and stopped by `close`,
    last started first."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.processes: list[Process] = []

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        for process in reversed(self.processes):
            process.stop()

    def _start(self, process: Any) -> Any:
        self.processes.append(process)
        return process


def serve_toy(
    name: str, surface: str, log: Path, *options: str, token: str | None = None, path: str = ""
) -> Server:
    """`agent-env serve testbed.toy:ToyDesk --SURFACE` on a free port, with `token` if given (and no token from this
    process's environment), its base URL the server's plus `path`."""
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "agent-env"),
        "serve",
        "testbed.toy:ToyDesk",
        "--port",
        str(port),
        f"--{surface}",
        *(["--token", token] if token else []),
        "--log-level",
        "warning",
        *options,
    ]
    environment = {key: value for key, value in os.environ.items() if key != "AGENT_ENV_TOKEN"}
    environment["PYTHONPATH"] = str(ROOT)
    return Server(name, command, f"http://127.0.0.1:{port}{path}", log, cwd=ROOT, env=environment)


def driver_report(driver: Process) -> dict[str, Any]:
    """What a tier's driver (a subprocess that drives a server with another project's clients) saw: the JSON of the
    last line it wrote, once it has exited cleanly."""
    try:
        driver.popen.wait(timeout=STARTUP_SECONDS)
    except subprocess.TimeoutExpired:
        raise driver.failed(f"did not finish within {STARTUP_SECONDS:g} s") from None
    if driver.popen.returncode != 0:
        raise driver.failed(f"exited with {driver.popen.returncode}")
    report: dict[str, Any] = json.loads(driver.log.read_text().strip().splitlines()[-1])
    return report


@contextmanager
def running(tier: T, packages: str) -> Iterator[T]:
    """`tier` started, and stopped when done whatever happens; the tests that need it skip, saying why, only when
    `packages` (what its venvs install) are not cached and the package index cannot be reached."""
    try:
        tier.start()
    except PyPIUnreachableError as error:
        tier.close()
        pytest.skip(f"{packages} cannot be installed: {error}")
    except BaseException:
        tier.close()
        raise
    try:
        yield tier
    finally:
        tier.close()


__all__ = ["Tier", "driver_report", "running", "serve_toy"]
