"""`agent-env serve` on host B with a token, `AgentEnv.connect` from the trainer on host A, and the faults between.

B cut off and healed, a slow and lossy link, the server killed and restarted mid-run, and the loopback-only default:
a server bound to loopback on B cannot be reached from A at B's address. The trainer's client timeout is 5 s (under
the server's 20 s call timeout, as docs/server.md advises), so a silent server is noticed in 5 s.
"""

from __future__ import annotations

import secrets
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tst.hosts.figures import percentiles, seconds, spread, took
from tst.hosts.processes import Started

AGENT_ENV = str(Path(sys.executable).parent / "agent-env")
TOKEN = secrets.token_hex(16)
PORT, LOOPBACK_PORT = 8000, 8001
CLIENT_TIMEOUT = 5.0
BOUND = 60.0
"""What "nothing hangs" means here: generous, for a shared 2-core machine."""


class Server:
    """`agent-env serve tst.hosts.envs:MarkedDesk` on host B, bound to B's address with a token; killed and started
    again by the tests."""

    def __init__(self, hosts: Any) -> None:
        self.hosts = hosts
        self.url = f"http://{hosts.network.address('b')}:{PORT}"
        self.started: Started | None = None

    def start(self) -> None:
        argv = [AGENT_ENV, "serve", "tst.hosts.envs:MarkedDesk", "--host", self.hosts.network.address("b"),
                "--port", str(PORT), "--token", TOKEN]  # fmt: skip
        self.started = self.hosts.processes.start("b", "serve", argv)
        self.started.wait_for("Uvicorn running on", 60)

    def alive(self) -> bool:
        return self.started is not None and self.started.alive()

    def stop(self, sig: int) -> None:
        assert self.started is not None
        self.hosts.processes.stop(self.started, sig)


@pytest.fixture(scope="module")
def served(hosts: Any) -> Iterator[Server]:
    server = Server(hosts)
    server.start()
    yield server
    if server.alive():
        server.stop(signal.SIGTERM)


@pytest.fixture
def server(served: Server) -> Server:
    """The server on B, started again if an earlier test stopped it."""
    if not served.alive():
        served.start()
    return served


@pytest.fixture(scope="module")
def trainer(hosts: Any) -> Iterator[Any]:
    agent = hosts.agent("a", "trainer-served")
    yield agent
    agent.close()


@pytest.fixture(scope="module")
def loopback_only(hosts: Any) -> Iterator[str]:
    """`agent-env serve` on B with its defaults (loopback, no token) on another port; a client on B reaches it."""
    argv = [AGENT_ENV, "serve", "tst.hosts.envs:MarkedDesk", "--port", str(LOOPBACK_PORT)]
    started = hosts.processes.start("b", "serve-loopback", argv)
    started.wait_for("Uvicorn running on", 60)
    yield f"http://127.0.0.1:{LOOPBACK_PORT}"
    hosts.processes.stop(started)


def connect(trainer: Any, name: str, server: Server) -> None:
    assert (
        trainer.call("served", name=name, url=server.url, token=TOKEN, timeout=CLIENT_TIMEOUT) == "MarkedDesk"
    )


def test_a_server_bound_to_loopback_on_b_cannot_be_reached_from_a_at_bs_address(hosts, loopback_only):
    neighbour = hosts.agent("b", "neighbour")  # a client on B itself
    trainer = hosts.agent("a", "trainer-loopback")
    try:
        assert neighbour.call("reach", url=loopback_only, token=None) == "MarkedDesk"
        url = f"http://{hosts.network.address('b')}:{LOOPBACK_PORT}"
        assert trainer.call("reach", url=url, token=None) == (
            f"ServerUnavailableError: listing the tools: cannot reach the agent_env server at {url} ([Errno 111] "
            "Connection refused); is `agent-env serve` running there?"
        )
    finally:
        neighbour.close()
        trainer.close()


def test_calls_cross_the_link_from_a_and_stay_on_b_for_a_client_on_b(
    hosts, server, trainer, loopback_only, figures
):
    neighbour = hosts.agent("b", "neighbour-rate")
    try:
        neighbour.call("served", name="near", url=loopback_only, token=None, timeout=CLIENT_TIMEOUT)
        near = neighbour.call("call_rate", name="near", seconds=3.0)["rate"]
    finally:
        neighbour.close()
    connect(trainer, "far", server)
    far = trainer.call("call_rate", name="far", seconds=3.0)["rate"]
    section = "served: one session's calls, one after another"
    figures.add(section, "client on B, server on B's loopback", f"{near:.0f} calls/s")
    figures.add(section, "client on A, server on B (across the link)", f"{far:.0f} calls/s")


def test_a_partition_longer_than_the_client_timeout_times_out_calls_in_flight_and_after_healing_episodes_work(
    hosts, server, trainer, figures
):
    connect(trainer, "cut", server)
    trainer.call("open_sessions", name="cut", count=4)
    hosts.clear_marks()
    in_flight = trainer.start("call_each", name="cut", tool="hang", arguments={"seconds": 2})
    hosts.wait_for_marks(4)  # every call has reached the server
    hosts.network.partition("b")
    cut = time.monotonic()
    try:
        outcomes = in_flight.result(timeout=BOUND)
        for outcome in outcomes:
            assert outcome["error"] == "CallTimeoutError"
            assert (
                outcome["message"]
                == f"tool 'hang': no answer from the agent_env server at {server.url} within 5 s"
            )
            assert outcome["after"] is None  # the session let the episode go
        detected = [outcome["ended"] - cut for outcome in outcomes]
        assert all(3 < value < CLIENT_TIMEOUT + 3 for value in detected)  # one client timeout, not two
        [reset] = trainer.call("reset_each", name="cut", count=1, within=BOUND)
        assert reset["error"] == "ServerUnavailableError"
        assert reset["message"] == (
            f"reset: cannot reach the agent_env server at {server.url} (timed out); is `agent-env serve` running there?"
        )
        time.sleep(max(0.0, cut + 15 - time.monotonic()))  # cut off for 15 s, three client timeouts
    finally:
        hosts.network.heal("b")
    resets = trainer.call("reset_each", name="cut", within=BOUND)
    assert all(outcome["ok"] for outcome in resets)
    assert {outcome["after"] for outcome in resets}.isdisjoint(outcome["episode"] for outcome in outcomes)
    added = trainer.call("call_each", name="cut", tool="add", arguments={"amount": 1})
    assert [outcome["value"] for outcome in added] == [f"total {index + 1}" for index in range(4)]
    section = "served: B cut off for 15 s (partition), client timeout 5 s, 4 episodes in flight"
    figures.add(section, "episodes failed / in flight", f"{len(outcomes)} / {len(outcomes)}")
    figures.add(section, "time to detect (in-flight calls fail)", spread(detected))
    figures.add(section, "a reset while cut off", f"ServerUnavailableError after {took(reset)}")
    trainer.call("close_all", name="cut")


def test_200_ms_delay_and_5_percent_loss_slow_episodes_but_change_no_reward(hosts, server, trainer, figures):
    connect(trainer, "slow", server)
    clear = trainer.call("play", name="slow", episodes=20, calls=5)
    with hosts.network.impaired("b", round_trip_delay=0.2, loss=0.05):
        slow = trainer.call("play", name="slow", episodes=20, calls=5, within=600)
    assert slow["rewards"] == clear["rewards"] == [float(10 + episode) for episode in range(20)]
    assert max(slow["episode_seconds"]) < BOUND
    section = "served: 20 episodes on B, each a reset, 5 calls and the reward"
    for label, played in (("clear link", clear), ("200 ms delay, 5% loss", slow)):
        p50, p99 = percentiles(played["episode_seconds"])
        call_p50, call_p99 = percentiles(played["call_seconds"])
        figures.add(section, f"{label}: episode p50 / p99", f"{seconds(p50)} / {seconds(p99)}")
        figures.add(section, f"{label}: call p50 / p99", f"{call_p50 * 1000:.1f} / {call_p99 * 1000:.1f} ms")


def test_a_server_killed_mid_run_fails_its_episodes_cleanly_and_after_a_restart_new_ones_start(
    hosts, server, trainer, figures
):
    connect(trainer, "restart", server)
    trainer.call("open_sessions", name="restart", count=4)
    hosts.clear_marks()
    in_flight = trainer.start("call_each", name="restart", tool="hang", arguments={"seconds": 3})
    hosts.wait_for_marks(4)
    killed = time.monotonic()
    server.stop(signal.SIGKILL)
    outcomes = in_flight.result(timeout=BOUND)
    for outcome in outcomes:
        assert outcome["error"] == "ServerUnavailableError"
        assert outcome["message"] == (
            f"tool 'hang': the connection to the agent_env server at {server.url} failed: RemoteProtocolError: "
            "Server disconnected without sending a response."
        )
    detected = [outcome["ended"] - killed for outcome in outcomes]
    assert max(detected) < BOUND
    while_down = trainer.call("call_each", name="restart", tool="add", arguments={"amount": 1})
    assert {outcome["message"] for outcome in while_down} == {
        f"tool 'add': cannot reach the agent_env server at {server.url} ([Errno 111] Connection refused); is "
        "`agent-env serve` running there?"
    }
    server.start()
    restarted = time.monotonic() - killed
    forgotten = trainer.call("call_each", name="restart", tool="add", arguments={"amount": 1})
    for outcome in forgotten:  # the restarted server never heard of them; the session lets each go
        assert outcome["error"] == "EpisodeNotFoundError"
        assert outcome["message"].startswith(
            f"episode {outcome['episode']!r} expired or unknown: it was closed, "
        )
        assert outcome["after"] is None
    resets = trainer.call("reset_each", name="restart")
    assert [outcome["value"] for outcome in resets] == [f"counter starts at {index}" for index in range(4)]
    added = trainer.call("call_each", name="restart", tool="add", arguments={"amount": 1})
    assert [outcome["value"] for outcome in added] == [f"total {index + 1}" for index in range(4)]
    section = "served: server killed (SIGKILL) mid-call, then started again, 4 episodes in flight"
    figures.add(section, "episodes failed / in flight", f"{len(outcomes)} / {len(outcomes)}")
    figures.add(section, "time to detect (in-flight calls fail)", spread(detected))
    figures.add(section, "server back (kill to listening)", seconds(restarted))

    hosts.clear_marks()
    in_flight = trainer.start("call_each", name="restart", tool="hang", arguments={"seconds": 2})
    hosts.wait_for_marks(4)
    server.stop(signal.SIGTERM)  # a graceful stop lets calls in flight finish (5 s at most), then exits
    assert [outcome["value"] for outcome in in_flight.result(timeout=BOUND)] == ["done"] * 4
    trainer.call("close_all", name="restart")
