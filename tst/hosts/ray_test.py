"""`AgentEnv.ray` across hosts: a head on host A, a worker node on host B, the trainer on A, Ray's token on all.

A real GRPO step runs on actors placed on B; then each fault a cluster meets: B's node lost, B cut off and healed,
a slow and lossy link to B, and a node or a driver without the token. Pools that span both hosts hold 4 actors, 2
on each (by the `env_slots` resource), so "only B's episodes fail" can be seen next to A's that go on.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent_env.training._render_check import expected_rendering, tojson
from testbed.toy import ToyDesk
from tst.hosts.cluster import START_TIMEOUT, RayHosts, ray_start
from tst.hosts.figures import percentiles, seconds, spread, took
from tst.hosts.processes import network_namespace_of

SPREAD = {"env_slots": 1}
"""Placement on both hosts: each node offers 2 slots, so a pool of 4 actors has 2 on A and 2 on B."""
DETECT_BOUND = 60.0
"""What "within a bounded time" and "nothing hangs" mean here: generous, for a shared 2-core machine."""


@pytest.fixture(scope="module")
def cluster(hosts: Any) -> Iterator[RayHosts]:
    cluster = RayHosts(hosts.processes, hosts.network.scratch)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def trainer(hosts: Any, cluster: RayHosts) -> Iterator[Any]:
    """The trainer process on host A."""
    agent = hosts.agent("a", "trainer-ray")
    yield agent
    agent.close()


@pytest.fixture
def node_b(cluster: RayHosts, trainer: Any) -> RayHosts:
    """The cluster with B's node up: started again if an earlier test lost it."""
    if not cluster.worker_alive():
        cluster.start_worker()
    deadline = time.monotonic() + 60
    while trainer.call("alive_nodes", address=cluster.address) != ["10.231.1.2", "10.231.2.2"]:
        assert time.monotonic() < deadline, f"B's node did not join: {trainer.call('alive_nodes')}"
        time.sleep(0.5)
    return cluster


def hosts_of(hosts: Any, pids: dict[int, int]) -> dict[int, str]:
    """Which host each actor (by slot) runs on, from its process's network namespace."""
    by_namespace = {hosts.namespace_id(host): host for host in hosts.network.hosts}
    return {slot: by_namespace[network_namespace_of(pid)] for slot, pid in pids.items()}


def slot(outcome: dict[str, Any], key: str = "episode") -> int:
    """The actor slot an episode id names (`pool/slot/hex`)."""
    return int(outcome[key].split("/")[1])


def test_a_grpo_step_on_host_a_runs_its_episodes_on_actors_placed_on_host_b(hosts, node_b, trainer):
    result = trainer.call("grpo_step", address=node_b.address, resources={"host_b": 1}, within=900)
    try:
        assert set(hosts_of(hosts, result["actors"]).values()) == {"b"}
        assert sorted(episode.split("/")[1] for episode in result["episodes"]) == ["0", "1"]
        for published in ToyDesk.tools.published:  # the prompt shows the in-process schemas, exactly
            assert tojson(expected_rendering(published)) in result["first_prompt"]
        assert result["logged"]["rewards/ToyDesk/mean"] == pytest.approx(0.15)  # (3/10 + 0) / 2, from B
        assert result["logged"]["tools/failure_frequency"] == pytest.approx(
            0.5
        )  # the malformed call, refused on B
        assert any("accepted 3 curves and 1 AS offers" in text for text in result["responses"])
    finally:
        trainer.call("shutdown", name="grpo")


def test_calls_cross_the_link_to_actors_on_b_and_stay_on_a_for_actors_on_a(hosts, node_b, trainer, figures):
    rates = {}
    for host in ("a", "b"):
        pool = f"rate-{host}"
        pids = trainer.call(
            "ray_pool", name=pool, address=node_b.address, actors=1, resources={f"host_{host}": 1}
        )
        try:
            assert hosts_of(hosts, pids) == {0: host}
            rates[host] = trainer.call("call_rate", name=pool, seconds=3.0)["rate"]
        finally:
            trainer.call("shutdown", name=pool)
    section = "Ray: one session's calls, one after another, from the trainer on A"
    figures.add(section, "actor on A (same host)", f"{rates['a']:.0f} calls/s")
    figures.add(section, "actor on B (across the link)", f"{rates['b']:.0f} calls/s")


def test_node_loss_fails_only_b_episodes_with_the_documented_error_and_new_episodes_land_on_live_actors(
    hosts, node_b, trainer, figures
):
    pids = trainer.call("ray_pool", name="lost", address=node_b.address, actors=4, resources=SPREAD)
    try:
        where = hosts_of(hosts, pids)
        assert sorted(where.values()) == ["a", "a", "b", "b"]
        opened = trainer.call("open_sessions", name="lost", count=8)
        assert sorted(slot(outcome, "after") for outcome in opened) == [0, 0, 1, 1, 2, 2, 3, 3]

        hosts.clear_marks()
        in_flight = trainer.start("call_each", name="lost", tool="hang", arguments={"seconds": 5})
        hosts.wait_for_marks(8)  # every call has reached its actor
        killed = node_b.kill_raylet()
        outcomes = in_flight.result(timeout=DETECT_BOUND + 30)
        on_b = [outcome for outcome in outcomes if where[slot(outcome)] == "b"]
        assert [outcome["value"] for outcome in outcomes if where[slot(outcome)] == "a"] == ["done"] * 4
        for outcome in on_b:
            assert outcome["error"] == "EpisodeNotFoundError"
            assert outcome["message"].startswith(
                f"tool 'hang': episode {outcome['episode']!r} was lost with Ray actor 'lost/{slot(outcome)}', "
                "which died or could not be reached ("
            )
            assert outcome["message"].endswith("call reset(...) to start a new episode")
            assert outcome["after"] is None  # the session let the lost episode go
        detected = [outcome["ended"] - killed for outcome in on_b]
        assert max(detected) < DETECT_BOUND

        resets = trainer.call("reset_each", name="lost", within=DETECT_BOUND * 4)
        assert all(outcome["ok"] for outcome in resets)
        assert {where[slot(outcome, "after")] for outcome in resets} == {"a"}  # new episodes: on live actors
        placing = [outcome["ended"] - outcome["started"] for outcome in resets if outcome["episode"] is None]
        section = "Ray: B's raylet killed (node loss), 8 episodes in flight, 4 on B"
        figures.add(
            section, "episodes failed / in flight", f"{len(on_b)} / {len(outcomes)} (B's; A's finished)"
        )
        figures.add(section, "time to detect (in-flight calls fail)", spread(detected))
        figures.add(
            section, "placing a new episode: first / later", f"{placing[0]:.2f} s / {max(placing[1:]):.2f} s"
        )

        node_b.start_worker()  # B comes back: Ray restarts its actors there, empty
        deadline = time.monotonic() + DETECT_BOUND
        while sorted(trainer.call("loads", name="lost")) != [0, 1, 2, 3]:
            assert time.monotonic() < deadline, "B's actors did not come back"
            time.sleep(1)
        back = hosts_of(hosts, trainer.call("actor_pids", name="lost"))
        assert sorted(back.values()) == ["a", "a", "b", "b"]
    finally:
        trainer.call("shutdown", name="lost", within=120)


def test_a_partition_longer_than_the_call_timeout_times_out_calls_in_flight_and_after_healing_episodes_work(
    hosts, node_b, trainer, figures
):
    pids = trainer.call(
        "ray_pool", name="cut", address=node_b.address, actors=4, resources=SPREAD, call_timeout=3.0
    )
    try:
        where = hosts_of(hosts, pids)
        opened = trainer.call("open_sessions", name="cut", count=8)
        host_of_session = [where[slot(outcome, "after")] for outcome in opened]
        idle = host_of_session.index(
            "b"
        )  # one session on B has no call in flight: the next reset meets the cut
        busy = [index for index in range(8) if index != idle]
        hosts.clear_marks()
        in_flight = trainer.start(
            "call_each", name="cut", tool="hang", arguments={"seconds": 2}, indexes=busy
        )
        hosts.wait_for_marks(7)
        hosts.network.partition("b")
        cut = time.monotonic()
        try:
            outcomes = in_flight.result(timeout=DETECT_BOUND)
            on_b = [outcome for outcome in outcomes if where[slot(outcome)] == "b"]
            assert [outcome["value"] for outcome in outcomes if where[slot(outcome)] == "a"] == ["done"] * 4
            for outcome in on_b:
                assert outcome["error"] == "CallTimeoutError"
                assert outcome["message"] == (
                    f"tool 'hang': no answer from Ray actor 'cut/{slot(outcome)}' within 8 s; episode "
                    f"{outcome['episode']!r} was closed because its state is unknown: call reset(...) to start a "
                    "new one"
                )  # call_timeout 3 s and 5 s of grace
                assert outcome["after"] is None
            detected = [outcome["ended"] - cut for outcome in on_b]
            assert all(6 < value < DETECT_BOUND for value in detected)

            resets = trainer.call("reset_each", name="cut", within=DETECT_BOUND * 2)
            cut_off = resets.pop(idle)  # the idle episode's reset goes to its actor on B: no answer
            # a reset out of time is an episode that could not start (unscored, None under TRL)
            assert cut_off["error"] == "TimedOutEpisodeError" and "could not start" in cut_off["message"]
            assert f"reset: no answer from Ray actor 'cut/{slot(cut_off)}' within 8 s" in cut_off["message"]
            assert all(outcome["ok"] for outcome in resets)
            assert {where[slot(outcome, "after")] for outcome in resets} == {"a"}  # placed on live actors
            placing = [
                outcome["ended"] - outcome["started"] for outcome in resets if outcome["episode"] is None
            ]
            time.sleep(max(0.0, cut + 20 - time.monotonic()))  # cut off for 20 s: past the call timeout, well
            # short of the minute after which Ray's control store declares a silent node dead
        finally:
            hosts.network.heal("b")
        healed = time.monotonic()
        deadline = healed + DETECT_BOUND
        while sorted(trainer.call("loads", name="cut")) != [0, 1, 2, 3]:  # B's actors answer again
            assert time.monotonic() < deadline, "B's actors did not answer after healing"
            time.sleep(0.5)
        answering = time.monotonic() - healed
        assert node_b.worker_alive()
        trainer.call("close_all", name="cut")
        reopened = trainer.call("open_sessions", name="cut", count=8)
        assert all(outcome["ok"] for outcome in reopened)
        assert {where[slot(outcome, "after")] for outcome in reopened} == {"a", "b"}  # B takes new episodes
        added = trainer.call("call_each", name="cut", tool="add", arguments={"amount": 1})
        assert [outcome["value"] for outcome in added] == [f"total {index + 1}" for index in range(8)]

        section = "Ray: B cut off for 20 s (partition), call_timeout 3 s, 7 episodes in flight, 3 on B"
        figures.add(
            section, "episodes failed / in flight", f"{len(on_b)} / {len(outcomes)} (B's; A's finished)"
        )
        figures.add(section, "time to detect (in-flight calls fail)", spread(detected))
        figures.add(section, "reset of an idle episode on B", f"{cut_off['error']} after {took(cut_off)}")
        figures.add(
            section, "placing a new episode: first / later", f"{placing[0]:.2f} s / {max(placing[1:]):.2f} s"
        )
        figures.add(section, "B's actors answer again after healing", f"{answering:.2f} s")
    finally:
        trainer.call("shutdown", name="cut", within=120)


def test_200_ms_delay_and_5_percent_loss_slow_episodes_but_change_no_reward(hosts, node_b, trainer, figures):
    trainer.call("ray_pool", name="slow", address=node_b.address, actors=2, resources={"host_b": 1})
    try:
        clear = trainer.call("play", name="slow", episodes=20, calls=5)
        with hosts.network.impaired("b", round_trip_delay=0.2, loss=0.05):
            slow = trainer.call("play", name="slow", episodes=20, calls=5, within=600)
        assert slow["rewards"] == clear["rewards"] == [float(10 + episode) for episode in range(20)]
        assert max(slow["episode_seconds"]) < DETECT_BOUND
        section = "Ray: 20 episodes on B, each a reset, 5 calls and the reward"
        for label, played in (("clear link", clear), ("200 ms delay, 5% loss", slow)):
            p50, p99 = percentiles(played["episode_seconds"])
            call_p50, call_p99 = percentiles(played["call_seconds"])
            figures.add(section, f"{label}: episode p50 / p99", f"{seconds(p50)} / {seconds(p99)}")
            figures.add(
                section, f"{label}: call p50 / p99", f"{call_p50 * 1000:.1f} / {call_p99 * 1000:.1f} ms"
            )
    finally:
        trainer.call("shutdown", name="slow")


def test_a_node_or_a_driver_without_the_token_can_neither_join_nor_call(hosts, node_b, trainer):
    intruders = {
        "wrong-token": {"RAY_AUTH_TOKEN": "f" * 32},
        "no-token": {"RAY_AUTH_TOKEN": None},
        "auth-unset": {"RAY_AUTH_TOKEN": None, "RAY_AUTH_MODE": None},
    }
    nodes = {
        name: ray_start(
            hosts.processes,
            "c",
            f"intruder-{name}",
            hosts.network.scratch,
            head=node_b.address,
            environment=environment,
        )
        for name, environment in intruders.items()
    }
    driver = subprocess.Popen(  # a driver on A (which has a node) with the wrong token
        hosts.network.exec_argv(
            "a",
            [
                sys.executable,
                "-c",
                f"from tst.hosts.trainer import join_ray; print(join_ray({node_b.address!r}))",
            ],
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**hosts.processes.environment, "RAY_AUTH_TOKEN": "f" * 32},
        cwd=hosts.processes.environment["PYTHONPATH"],
    )
    said, _ = driver.communicate(timeout=START_TIMEOUT)
    for node in nodes.values():
        node.process.wait(timeout=START_TIMEOUT)
    assert (
        "AuthenticationError" in nodes["no-token"].output()
        and "no authentication token was found" in nodes["no-token"].output()
    )
    for name in ("wrong-token", "auth-unset"):
        assert nodes[name].process.returncode != 0
        assert "InvalidAuthToken: Authentication token is missing or incorrect" in nodes[name].output()
    assert "InvalidAuthToken: Authentication token is missing or incorrect" in said  # Ray's log: the token
    assert said.strip().splitlines()[
        -1
    ] == (  # what the trainer's process gets: Ray's error, and what to check
        f"ServerUnavailableError: cannot join the Ray cluster at {node_b.address}: ConnectionError: Failed to "
        f"connect to Ray cluster at {node_b.address}; is `ray start --head` running, does this node belong to the "
        "cluster (`ray start --address=...`), and does this process have its auth token (RAY_AUTH_TOKEN, or "
        "RAY_AUTH_MODE=disabled on a private network)?"
    )
    assert trainer.call("alive_nodes", address=node_b.address) == [
        "10.231.1.2",
        "10.231.2.2",
    ]  # nobody joined
