"""The tier's network does what the Ray and served tests rely on: hosts reach each other only through the router;
the delay holds every packet both ways, the loss drops a share of them in the kernel, a partition drops a host's
packets without a word (a connection attempt times out, nothing refuses it), and healing brings the host back."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tst.hosts.figures import milliseconds
from tst.hosts.network import run

PORT = 9000


@pytest.fixture(scope="module")
def echo(hosts: Any) -> Iterator[str]:
    """An echo server on host B; its address."""
    address = hosts.network.address("b")
    server = hosts.processes.start(
        "b", "echo", [sys.executable, "-m", "tst.hosts.echo", "serve", address, str(PORT)]
    )
    server.wait_for("ready", 30)
    yield address
    hosts.processes.stop(server)


def from_a(hosts: Any, *arguments: str) -> dict[str, Any]:
    """Run `python -m tst.hosts.echo ARGUMENTS` on host A and read its JSON line."""
    argv = hosts.network.exec_argv("a", [sys.executable, "-m", "tst.hosts.echo", *arguments])
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, cwd=hosts.processes.environment["PYTHONPATH"]
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_traffic_between_hosts_crosses_the_router(hosts, echo):
    route = run("ip", "netns", "exec", hosts.network.namespace("a"), "ip", "route", "get", echo).stdout
    assert f"{echo} via 10.231.1.1 dev eth0" in route
    probe = from_a(hosts, "probe", echo, str(PORT), "100")
    assert len(probe["round_trips"]) == 100
    assert statistics.median(probe["round_trips"]) < 0.05


def test_delay_holds_every_packet_both_ways_and_loss_drops_a_share_in_the_kernel(hosts, echo, figures):
    with hosts.network.impaired("b", round_trip_delay=0.2, loss=0.05):
        probe = from_a(hosts, "probe", echo, str(PORT), "400")
    round_trips = probe["round_trips"]
    lost = 1 - len(round_trips) / probe["sent"]
    assert min(round_trips) >= 0.2  # no datagram skipped the queue, either way
    assert 0.02 < lost < 0.2  # 5% each way: 9.75% of round trips expected (400 of them: 39 +- 6)
    figures.add(
        "network (UDP echo, A to B)",
        "round trip p50, 200 ms delay",
        milliseconds(statistics.median(round_trips)),
    )
    figures.add("network (UDP echo, A to B)", "round trips lost, 5% loss each way", f"{lost:.1%} of 400")
    after = from_a(hosts, "probe", echo, str(PORT), "50")
    assert (
        len(after["round_trips"]) == 50 and max(after["round_trips"]) < 0.1
    )  # the impairment ended with the block


def test_a_partition_drops_a_hosts_packets_silently_and_healing_brings_it_back(hosts, echo):
    hosts.network.partition("b")
    try:
        cut_off = from_a(hosts, "connect", echo, str(PORT), "2")
    finally:
        hosts.network.heal("b")
    assert (
        cut_off["outcome"] == "TimeoutError" and cut_off["seconds"] >= 2
    )  # no refusal, no ICMP error: silence
    assert from_a(hosts, "connect", echo, str(PORT), "5")["outcome"] == "connected"
