"""A Ray cluster across the tier's hosts: the head on host A, a worker node on host B, both with Ray's auth token.

Each node is `ray start --block` in its host's namespace, bound to the host's address, with its own temp dir (so
nothing it writes is shared with another node, or with a Ray cluster anyone else runs on this machine's loopback).
Nodes offer custom resources that place actors: `env_slots` on both (2 each), `host_a` on A and `host_b` on B.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from tst.hosts.processes import Processes, Started, processes_named

RAY = str(Path(sys.executable).parent / "ray")
"""Ray's command line, from the venv running the tests."""
HEAD_PORT = 6379
START_TIMEOUT = 180.0
NODE_RESOURCES = {"a": {"env_slots": 2, "host_a": 8}, "b": {"env_slots": 2, "host_b": 8}}


def ray_start(
    processes: Processes,
    host: str,
    name: str,
    scratch: Path,
    *,
    head: str | None = None,
    resources: Mapping[str, float] | None = None,
    environment: Mapping[str, str] | None = None,
) -> Started:
    """`ray start --block` on `host`: a head when `head` is None, else a node joining the head at `head`."""
    network = processes.network
    argv = [
        RAY, "start", "--block", f"--node-ip-address={network.address(host)}", "--num-cpus=1",
        f"--temp-dir={scratch / f'ray-{name}'}", "--object-store-memory=100000000", "--disable-usage-stats",
        f"--resources={json.dumps(dict(resources or {}))}",
    ]  # fmt: skip
    if head is None:
        argv += ["--head", f"--port={HEAD_PORT}", "--include-dashboard=false"]
    else:
        argv += [f"--address={head}"]
    return processes.start(host, name, argv, environment)


class RayHosts:
    """The head on A and the worker node on B; B's node can be killed (its raylet) and started again.

    Args:
        processes: Where the nodes are started.
        scratch: Where their temp dirs go.
    """

    def __init__(self, processes: Processes, scratch: Path) -> None:
        self.processes = processes
        self.scratch = scratch
        self.address = f"{processes.network.address('a')}:{HEAD_PORT}"
        self.head: Started | None = None
        self.worker: Started | None = None
        self._workers = 0

    def start(self) -> None:
        self.head = ray_start(self.processes, "a", "ray-a", self.scratch, resources=NODE_RESOURCES["a"])
        self.head.wait_for("Ray runtime started", START_TIMEOUT)
        self.start_worker()

    def start_worker(self) -> None:
        """Start B's node (again), after killing whatever is left of the last one."""
        if self.worker is not None:
            self.processes.stop(self.worker, signal.SIGKILL)
        self._workers += 1
        self.worker = ray_start(
            self.processes, "b", f"ray-b{self._workers}", self.scratch, head=self.address,
            resources=NODE_RESOURCES["b"],
        )  # fmt: skip
        self.worker.wait_for("Ray runtime started", START_TIMEOUT)

    def worker_alive(self) -> bool:
        return bool(processes_named(self.processes.network, "b", "raylet"))

    def kill_raylet(self, host: str = "b") -> float:
        """SIGKILL the raylet of `host`'s node, as a crash would; return when (`time.monotonic()`)."""
        raylets = processes_named(self.processes.network, host, "raylet")
        assert len(raylets) == 1, f"expected one raylet on {host}, found {raylets}"
        killed = time.monotonic()
        os.kill(raylets[0], signal.SIGKILL)
        return killed

    def stop(self) -> None:
        for started in (self.worker, self.head):
            if started is not None:
                self.processes.stop(started, signal.SIGTERM, timeout=20)
