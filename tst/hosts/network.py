"""Hosts on one machine: network namespaces joined through a router namespace by veth pairs, and the faults of a link.

Each host (`aenv-a`, `aenv-b`, ...) is a network namespace with one interface, `eth0`, at `10.231.<n>.2/24`, and a
default route through the router (`aenv-net`, `10.231.<n>.1` on its port `r<host>`), which forwards between them.
Traffic between hosts crosses two veth pairs and the router's forwarding path, never the machine's loopback. The
faults act on the router's port to a host, as a failing switch or link would:

- a partition sets the port down (`ip link set r<host> down`); the router then drops the host's packets silently (a
  blackhole route, so no ICMP error tells anyone early): the host looks frozen, the worst case;
- delay holds every packet to and from the host in a netfilter queue (`tst.hosts.delay`, since this kernel has no
  `netem`), half of the round trip's delay each way;
- loss drops packets to and from the host at random in the kernel (`iptables -m statistic --mode random`), each way.

Everything is named with `PREFIX`, so `sweep()` can remove what a killed run left behind; `Network.remove()` removes
what one run made, processes in its namespaces included.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

PREFIX = "aenv-"
"""Every namespace this tier makes starts with it; nothing else on the machine should."""
ROUTER = f"{PREFIX}net"
DELAY_QUEUE = 7
"""The netfilter queue the router's delay process holds packets in."""


class HostsUnavailableError(RuntimeError):
    """This machine cannot make the tier's hosts (not root, no iproute2 or iptables, or no network namespaces)."""


def run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command, and say what failed (with its stderr) when it does."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if check and done.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` failed ({done.returncode}): {done.stderr.strip()}")
    return done


def namespaces() -> list[str]:
    """Every network namespace `ip netns` knows, by name."""
    return [line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines() if line.strip()]


def kill_namespace_processes(namespace: str, timeout: float = 10.0) -> list[int]:
    """SIGKILL every process in a namespace and wait until they are gone; return the pids that were there."""
    pids = [int(pid) for pid in run("ip", "netns", "pids", namespace, check=False).stdout.split()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while any(Path(f"/proc/{pid}").exists() and not _zombie(pid) for pid in pids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes of namespace {namespace} outlived SIGKILL: {pids}")
        time.sleep(0.05)
    return pids


def sweep(scratch: Path) -> list[str]:
    """Remove what a killed run left behind: namespaces named with `PREFIX` (their processes and links first) and the
    scratch directory. Returns the namespaces removed."""
    left = [name for name in namespaces() if name.startswith(PREFIX)]
    for name in left:
        kill_namespace_processes(name)
        run("ip", "netns", "delete", name)
    shutil.rmtree(scratch, ignore_errors=True)
    return left


def preflight() -> None:
    """Check this machine can make the hosts, or raise `HostsUnavailableError` saying why and how to fix it."""
    if os.geteuid() != 0:
        raise HostsUnavailableError(
            "the hosts tier makes network namespaces, which needs root; run `make hosts-test` as root (CI does)"
        )
    for tool, package in (("ip", "iproute2"), ("iptables", "iptables")):
        if shutil.which(tool) is None:
            raise HostsUnavailableError(
                f"`{tool}` is not installed; `make hosts-test` installs it (apt-get install -y {package})"
            )
    probe = f"{PREFIX}probe"
    made = run("ip", "netns", "add", probe, check=False)
    if made.returncode != 0:
        raise HostsUnavailableError(
            f"this machine cannot make network namespaces (`ip netns add` said: {made.stderr.strip()}); in a "
            "container, give it CAP_SYS_ADMIN, or run on a VM"
        )
    try:
        veth = run("ip", "-n", probe, "link", "add", "v0", "type", "veth", "peer", "name", "v1", check=False)
        if veth.returncode != 0:
            raise HostsUnavailableError(f"this kernel cannot make veth pairs: {veth.stderr.strip()}")
        rule = [
            "ip",
            "netns",
            "exec",
            probe,
            "iptables",
            "-A",
            "INPUT",
            "-m",
            "statistic",
            "--mode",
            "random",
        ]
        statistic = run(*rule, "--probability", "0.05", "-j", "DROP", check=False)
        if statistic.returncode != 0:
            raise HostsUnavailableError(
                f"iptables cannot drop packets at random here (`-m statistic`): {statistic.stderr.strip()}"
            )
    finally:
        run("ip", "netns", "delete", probe, check=False)


class Network:
    """The hosts of one run, their router, and the faults on their links.

    Args:
        hosts: The hosts' short names (`a`, `b`, ...); host number n (from 1) gets `10.231.<n>.2`.
        scratch: A directory for the delay process's log.
    """

    def __init__(self, hosts: Sequence[str], scratch: Path) -> None:
        self.hosts = list(hosts)
        self.scratch = scratch
        self._delay: subprocess.Popen[bytes] | None = None

    def namespace(self, host: str) -> str:
        return f"{PREFIX}{host}"

    def address(self, host: str) -> str:
        return f"10.231.{self.hosts.index(host) + 1}.2"

    def exec_argv(self, host: str, argv: Sequence[str]) -> list[str]:
        """A command line that runs `argv` on `host`."""
        return ["ip", "netns", "exec", self.namespace(host), *argv]

    def make(self) -> None:
        """Make the router and every host, each with its link up and its address set."""
        run("ip", "netns", "add", ROUTER)
        run("ip", "-n", ROUTER, "link", "set", "lo", "up")
        run("ip", "netns", "exec", ROUTER, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        # Traffic to a host whose port is down falls to this route: dropped without a word, as a dead link does.
        run("ip", "-n", ROUTER, "route", "add", "blackhole", "10.231.0.0/16", "metric", "1000")
        for number, host in enumerate(self.hosts, start=1):
            namespace, port = self.namespace(host), f"r{host}"
            run("ip", "netns", "add", namespace)
            run(
                "ip",
                "link",
                "add",
                "eth0",
                "netns",
                namespace,
                "type",
                "veth",
                "peer",
                "name",
                port,
                "netns",
                ROUTER,
            )
            run("ip", "-n", namespace, "addr", "add", f"10.231.{number}.2/24", "dev", "eth0")
            run("ip", "-n", ROUTER, "addr", "add", f"10.231.{number}.1/24", "dev", port)
            for name, device in ((namespace, "lo"), (namespace, "eth0"), (ROUTER, port)):
                run("ip", "-n", name, "link", "set", device, "up")
            run("ip", "-n", namespace, "route", "add", "default", "via", f"10.231.{number}.1")

    def remove(self) -> None:
        """Stop the delay process, kill every process on the hosts, and delete the namespaces (links go with them)."""
        self._stop_delay()
        for name in [*(self.namespace(host) for host in self.hosts), ROUTER]:
            if name in namespaces():
                kill_namespace_processes(name)
                run("ip", "netns", "delete", name)

    def partition(self, host: str) -> None:
        """Cut `host` off: its router port goes down, and its packets vanish."""
        run("ip", "-n", ROUTER, "link", "set", f"r{host}", "down")

    def heal(self, host: str) -> None:
        """Bring `host`'s router port back up, and wait until the router routes to it again."""
        run("ip", "-n", ROUTER, "link", "set", f"r{host}", "up")
        subnet = self.address(host).rsplit(".", 1)[0] + ".0/24"
        deadline = time.monotonic() + 10
        while subnet not in run("ip", "-n", ROUTER, "route").stdout:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the router has no route to {subnet} 10 s after the port came up")
            time.sleep(0.05)

    @contextlib.contextmanager
    def impaired(self, host: str, *, round_trip_delay: float, loss: float) -> Iterator[None]:
        """Delay and lose packets to and from `host` for the block: `round_trip_delay / 2` seconds each way, and each
        packet dropped with probability `loss` each way."""
        port = f"r{host}"
        rules = []
        for direction in ("-i", "-o"):
            if loss:
                rules.append(
                    [
                        direction,
                        port,
                        "-m",
                        "statistic",
                        "--mode",
                        "random",
                        "--probability",
                        str(loss),
                        "-j",
                        "DROP",
                    ]
                )
            if round_trip_delay:
                rules.append([direction, port, "-j", "NFQUEUE", "--queue-num", str(DELAY_QUEUE)])
        if round_trip_delay:
            self._start_delay(round_trip_delay / 2)
        try:
            for rule in rules:
                run("ip", "netns", "exec", ROUTER, "iptables", "-A", "FORWARD", *rule)
            yield
        finally:
            run("ip", "netns", "exec", ROUTER, "iptables", "-F", "FORWARD")
            time.sleep(round_trip_delay)  # let the packets still held go on before their holder stops
            self._stop_delay()

    def _start_delay(self, seconds: float) -> None:
        log = (self.scratch / "delay.log").open("ab")
        argv = [sys.executable, "-m", "tst.hosts.delay", str(DELAY_QUEUE), str(seconds)]
        self._delay = subprocess.Popen(
            ["ip", "netns", "exec", ROUTER, *argv],
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=Path(__file__).resolve().parents[2],
            start_new_session=True,
        )
        assert self._delay.stdout is not None
        if self._delay.stdout.readline().strip() != b"ready":
            self._stop_delay()
            raise RuntimeError(f"the delay process did not start; see {self.scratch / 'delay.log'}")

    def _stop_delay(self) -> None:
        delay, self._delay = self._delay, None
        if delay is not None and delay.poll() is None:
            delay.terminate()
            try:
                delay.wait(timeout=5)
            except subprocess.TimeoutExpired:
                delay.kill()
                delay.wait()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True
