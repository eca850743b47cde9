"""Subprocesses the tests and the benchmarks start: each logs to a file and is stopped by its own handle."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

STARTUP_SECONDS = 300.0
"""How long a server may take to answer /health: importing openenv 0.10.0 (gradio, fastmcp) takes 20-35 s on an idle
2-core machine, and the tests share the machine with the rest of the suite."""


class Process:
    """A subprocess whose output goes to a log file; stopped by its own handle."""

    def __init__(self, name: str, command: list[str], log: Path, **options: Any) -> None:
        self.name = name
        self.log = log
        with log.open("wb") as output:
            self.popen = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, **options)

    def failed(self, why: str) -> RuntimeError:
        """An error naming the process and `why`, with the end of its output."""
        tail = self.log.read_text(errors="replace")[-3000:]
        return RuntimeError(f"{self.name} {why}; its output ends:\n{tail}")

    def stop(self) -> None:
        """Terminate the process, then kill it if it has not gone within 15 s; a stopped one is left alone."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


class Server(Process):
    """A server on a free loopback port; `url()` waits until it answers `{base}/health`."""

    def __init__(
        self,
        name: str,
        command: list[str],
        base: str,
        log: Path,
        startup_seconds: float = STARTUP_SECONDS,
        **options: Any,
    ) -> None:
        super().__init__(name, command, log, **options)
        self.base = base
        self.startup_seconds = startup_seconds
        self._ready = False

    def url(self) -> str:
        """The base URL, once the server answers `/health` (within `startup_seconds`, or an error)."""
        deadline = time.monotonic() + self.startup_seconds
        while not self._ready:
            with contextlib.suppress(httpx.TransportError):
                self._ready = httpx.get(f"{self.base}/health", timeout=2).status_code == 200
            if not self._ready:
                if self.popen.poll() is not None:
                    raise self.failed(f"exited with {self.popen.returncode} before answering /health")
                if time.monotonic() > deadline:
                    raise self.failed(f"did not answer /health within {self.startup_seconds:g} s")
                time.sleep(0.2)
        return self.base


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
