"""The processes the tier starts on its hosts: each in its own process group, its output in a log file, all killed at
the end however the tests went."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tst.hosts.network import Network

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: every process runs there, with it on PYTHONPATH, so `tst.*` imports in Ray workers and servers."""


@dataclass(eq=False)
class Started:
    """One process started on a host."""

    name: str
    host: str
    process: subprocess.Popen[bytes]
    log: Path
    offset: int = 0
    """Where its output starts in the log (a log may hold an earlier process's output under the same name)."""

    def alive(self) -> bool:
        return self.process.poll() is None

    def output(self, last: int = 4000) -> str:
        """The end of its log, for messages."""
        try:
            with self.log.open("rb") as log:
                log.seek(self.offset)
                return log.read().decode(errors="replace")[-last:]
        except OSError:
            return ""

    def wait_for(self, text: str, timeout: float) -> None:
        """Wait until its log shows `text`; raise with the log's end if it exits or the time runs out first."""
        deadline = time.monotonic() + timeout
        while text not in self.output(last=1 << 20):
            if not self.alive():
                raise RuntimeError(
                    f"{self.name} on {self.host} exited ({self.process.returncode}):\n{self.output()}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{self.name} on {self.host} did not say {text!r} within {timeout:g} s:\n{self.output()}"
                )
            time.sleep(0.1)


class Processes:
    """Starts processes on the hosts of a `Network` and ends them all.

    Args:
        network: Where the hosts are.
        logs: The directory for their logs.
        environment: The environment variables every process gets (on top of which `start` adds its own).
    """

    def __init__(self, network: Network, logs: Path, environment: Mapping[str, str]) -> None:
        self.network = network
        self.logs = logs
        self.environment = dict(environment)
        self.started: list[Started] = []

    def start(
        self, host: str, name: str, argv: Sequence[str], environment: Mapping[str, str | None] | None = None
    ) -> Started:
        """Start `argv` on `host` in a new process group, its stdout and stderr in `<logs>/<name>.log`; `environment`
        adds variables to the shared ones (None removes one)."""
        log = self.logs / f"{name}.log"
        with log.open("ab") as output:
            offset = output.tell()
            process = subprocess.Popen(
                self.network.exec_argv(host, argv),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env=self.environment_with(environment or {}),
                start_new_session=True,
            )
        started = Started(name, host, process, log, offset)
        self.started.append(started)
        return started

    def environment_with(self, changes: Mapping[str, str | None]) -> dict[str, str]:
        """The shared environment with `changes` made (a None value removes its variable)."""
        environment = {**self.environment, **changes}
        return {key: value for key, value in environment.items() if value is not None}

    def stop(self, started: Started, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:
        """Send `sig` to its process group, then SIGKILL what is left after `timeout` seconds."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(started.process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            started.process.wait(timeout=timeout)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(started.process.pid, signal.SIGKILL)
        started.process.wait(timeout=timeout)

    def stop_all(self) -> None:
        """Stop every process started here, newest first."""
        for started in reversed(self.started):
            self.stop(started, timeout=5.0)
        self.started.clear()


def processes_named(network: Network, host: str, name: str) -> list[int]:
    """The pids on `host` whose command name is `name` (`raylet`, `gcs_server`, ...)."""
    from tst.hosts.network import run

    pids = [
        int(pid) for pid in run("ip", "netns", "pids", network.namespace(host), check=False).stdout.split()
    ]
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == name:
                found.append(pid)
    return found


def network_namespace_of(pid: int) -> str:
    """The network namespace a process runs in, as `net:[inode]`."""
    return os.readlink(f"/proc/{pid}/ns/net")
