"""The hosts tier's fixtures: the hosts (network namespaces behind a router), the processes on them, and the trainer.

The tier needs root, iproute2 and iptables (`make hosts-test` installs the last two where missing). Where it cannot
make its hosts it fails, saying why; only `AGENT_ENV_SKIP_HOSTS=1` turns that into a skip. One run at a time holds
`LOCK`; the holder first sweeps away what a killed run left (namespaces named `aenv-*`, their processes, the scratch
directory), and at the end removes everything it made, whatever the tests did, and checks nothing is left.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tst.hosts.agent import AUTHKEY_ENVIRONMENT, Agent
from tst.hosts.envs import MARKS_VARIABLE, wait_for_marks
from tst.hosts.figures import FIGURES
from tst.hosts.network import PREFIX, HostsUnavailableError, Network, namespaces, preflight, sweep
from tst.hosts.processes import ROOT, Processes

SKIP_VARIABLE = "AGENT_ENV_SKIP_HOSTS"
"""Set to 1 to skip the tier on a machine that cannot make network namespaces (it fails there otherwise)."""
SCRATCH = Path("/tmp/aenv-hosts")
"""Ray's temp dirs (kept short: Ray's socket paths must fit in 107 bytes), its nodes' home, the agents' sockets."""
LOCK = Path("/tmp/aenv-hosts.lock")
HOSTS = ("a", "b", "c")


class Hosts:
    """What the tier made: the network, the processes on it, the environment they get, and where logs go."""

    def __init__(self, network: Network, processes: Processes, logs: Path) -> None:
        self.network = network
        self.processes = processes
        self.logs = logs
        self.marks = Path(processes.environment[MARKS_VARIABLE])

    def clear_marks(self) -> None:
        """Forget the calls of `hang` that began so far (`tst.hosts.envs`)."""
        for mark in self.marks.iterdir():
            mark.unlink()

    def wait_for_marks(self, count: int) -> None:
        """Wait until `count` calls of `hang` have begun since the last `clear_marks`, and clear their marks."""
        wait_for_marks(self.marks, count)

    def agent(self, host: str, name: str, environment: dict[str, str] | None = None) -> Agent:
        """A `tst.hosts.agent` process on `host`, connected and ready for jobs."""
        socket_path = SCRATCH / f"{name}.sock"
        socket_path.unlink(missing_ok=True)
        agent = Agent(socket_path)
        argv = [sys.executable, "-m", "tst.hosts.agent", agent.address]
        self.processes.start(host, name, argv, {AUTHKEY_ENVIRONMENT: agent.key, **(environment or {})})
        agent.accept(timeout=60)
        return agent

    def namespace_id(self, host: str) -> str:
        """The identity of `host`'s network namespace, as `/proc/<pid>/ns/net` reads for a process on it."""
        return f"net:[{os.stat(f'/run/netns/{self.network.namespace(host)}').st_ino}]"


@pytest.fixture(scope="session")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosts]:
    """Hosts a, b and c (10.231.1.2, .2.2, .3.2) behind the router, for the whole run; removed at its end."""
    if os.environ.get(SKIP_VARIABLE) == "1":
        pytest.skip(f"{SKIP_VARIABLE}=1: the hosts tier is skipped")
    try:
        preflight()
    except HostsUnavailableError as error:
        pytest.fail(
            f"the hosts tier cannot run here: {error} (set {SKIP_VARIABLE}=1 to skip it)", pytrace=False
        )
    with _run_lock():
        left = sweep(SCRATCH)
        if left:
            print(f"\nhosts tier: removed what a killed run left: {', '.join(left)}")
        (SCRATCH / "home").mkdir(parents=True)
        (SCRATCH / "marks").mkdir()
        logs = tmp_path_factory.mktemp("hosts-logs")
        network = Network(HOSTS, SCRATCH)
        processes = Processes(network, logs, _environment())
        try:
            network.make()
            yield Hosts(network, processes, logs)
        finally:
            processes.stop_all()
            network.remove()
            sweep(SCRATCH)
            _check_nothing_left()


@pytest.fixture(scope="session")
def figures() -> Any:
    return FIGURES


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = FIGURES.lines()
    if lines:
        terminalreporter.section("hosts tier: figures measured in this run (not asserted)")
        for line in lines:
            terminalreporter.write_line(line)


def _environment() -> dict[str, str]:
    """What every process on the hosts gets: this process's environment with Ray's settings said out loud, a home
    of its own (Ray would read a token from ~/.ray, shared with anyone's local cluster), and the checkout on
    PYTHONPATH (Ray workers and servers import the test environments by name)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}
    environment.update(
        HOME=str(SCRATCH / "home"),
        AENV_MARKS=str(SCRATCH / "marks"),
        PYTHONPATH=str(ROOT),
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN=secrets.token_hex(16),
        RAY_USAGE_STATS_ENABLED="0",
        RAY_ENABLE_UV_RUN_RUNTIME_ENV="0",
        TOKENIZERS_PARALLELISM="false",
        TRL_EXPERIMENTAL_SILENCE="1",
    )
    return environment


@contextlib.contextmanager
def _run_lock(timeout: float = 1800.0) -> Iterator[None]:
    """Hold the tier's lock, waiting for another run to finish: its namespaces have the same names."""
    with LOCK.open("a") as lock:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.fail(f"another hosts-tier run has held {LOCK} for {timeout:g} s", pytrace=False)
                time.sleep(1)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _check_nothing_left() -> None:
    """Fail the run if a namespace or a process of the tier outlived its removal."""
    left = [name for name in namespaces() if name.startswith(PREFIX)]
    processes = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if str(SCRATCH).encode() in (proc / "cmdline").read_bytes():
                    processes.append(int(proc.name))
    assert not left and not processes, f"left behind: namespaces {left}, processes {processes}"
