"""A pool of named episode-host actors in a Ray namespace: join it from any process, make it if missing, and check it.

Every process (each accelerate rank, AsyncGRPO's spawned rollout worker, a later evaluation job) connects on first
use: it joins the Ray cluster, and for each slot asks for the actor `pool/index` with `get_if_exists`, so processes
racing to make the pool get the same actors. Before any episode runs there, each actor must describe itself with
the very environment, configuration and tool set this process publishes; a pool left running from another version
of the environment is refused with `PoolMismatchError`. Nothing here holds an episode: that is the actors' job.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.actor import ActorHandle
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError, RayError

from agent_env.ray._host import EpisodeHost, HostSettings
from agent_env.ray.errors import PoolMismatchError
from agent_env.server.errors import ServerUnavailableError

logger = logging.getLogger("agent_env.ray")

RESERVED_OPTIONS = ("name", "namespace", "get_if_exists", "lifetime", "max_task_retries")
"""Actor options the pool sets itself: a name and namespace per slot, reuse, lifetime, and no retried calls."""


@dataclass(frozen=True)
class PoolSettings:
    """Where a pool lives and how its actors are made.

    Attributes:
        pool: The pool's name; its actors are `pool/0` ... `pool/{actors-1}`.
        namespace: The Ray namespace the actors are named in.
        actors: How many actors.
        address: The Ray cluster to join (`auto`, `host:6379`, `ray://host:10001`); None joins the cluster this
            process already runs in, or starts a local one.
        actor_options: Passed to `.options(...)` of every actor (`num_cpus`, `memory`, `resources`,
            `scheduling_strategy`, `max_restarts`, ...).
        detached: Whether the actors outlive the process that made them (then `shutdown()` ends them).
        connect_timeout: Seconds to wait for the actors to start and describe themselves.
    """

    pool: str
    namespace: str
    actors: int
    address: str | None
    actor_options: Mapping[str, Any] = field(default_factory=dict)
    detached: bool = False
    connect_timeout: float = 120.0

    def actor_name(self, index: int) -> str:
        return f"{self.pool}/{index}"


class Pool:
    """This process's handles on a pool's actors, made on first use (and again in a process of another pid), and the
    load questions its actors have not answered yet (`unanswered`, by slot: see `RayProvider.loads`).

    Args:
        settings: Where the pool lives and how its actors are made.
        host: What every actor runs; an existing actor must run exactly this.
        tool_set: The fingerprint of the tools this process publishes; every actor must serve the same.
    """

    def __init__(self, settings: PoolSettings, host: HostSettings, tool_set: str) -> None:
        self.settings = settings
        self.host = host
        self.tool_set = tool_set
        self._handles: dict[int, ActorHandle] = {}
        self.unanswered: dict[int, Any] = {}
        self._pid = 0
        self._address: str | None = None
        self._lock = threading.Lock()

    @property
    def address(self) -> str | None:
        """The configured cluster address; with none configured, the cluster this process is in (its GCS address),
        so that a process this one starts joins the same cluster rather than starting its own."""
        if self.settings.address is not None:
            return self.settings.address
        if self._address is None and ray.is_initialized():
            return _gcs_address()
        return self._address

    def handle(self, index: int) -> ActorHandle:
        """The actor of slot `index`, joining the cluster and checking the whole pool first if this process has not."""
        with self._lock:
            if self._pid != os.getpid():
                self._connect()
            if index not in self._handles:
                self._handles.update(self._start([index]))
            return self._handles[index]

    def handles(self) -> dict[int, ActorHandle]:
        """Every slot's actor, as `handle` gives them."""
        return {index: self.handle(index) for index in range(self.settings.actors)}

    def forget(self, index: int, handle: ActorHandle) -> None:
        """Drop a handle whose actor died for good; the next `handle(index)` makes the slot's actor again."""
        with self._lock:
            if self._handles.get(index) is handle:
                del self._handles[index]
                self.unanswered.pop(index, None)

    def shutdown(self) -> None:
        """End every actor of the pool (detached ones too), wherever it was made; its episodes are gone."""
        self._join()
        for index in range(self.settings.actors):
            try:
                ray.kill(ray.get_actor(self.settings.actor_name(index), namespace=self.settings.namespace))
            except ValueError:  # no such actor: never made, or ended already
                continue
        with self._lock:
            self._handles.clear()
            self.unanswered.clear()

    def _connect(self) -> None:
        self._join()
        self._handles = {}
        self.unanswered = {}
        self._handles.update(self._start(range(self.settings.actors)))
        self._pid = os.getpid()

    def _join(self) -> None:
        if ray.is_initialized():
            self._address = _gcs_address()
            return
        address = self.settings.address
        try:
            ray.init(address=address, namespace=self.settings.namespace, logging_level=logging.WARNING)
        except (ConnectionError, RayError, RuntimeError, ValueError) as error:
            where = f"at {address}" if address else "(no address given: a local one)"
            raise ServerUnavailableError(
                f"cannot join the Ray cluster {where}: {type(error).__name__}: {error}; is `ray start --head` "
                "running, does this node belong to the cluster (`ray start --address=...`), and does this "
                "process have its auth token (RAY_AUTH_TOKEN, or RAY_AUTH_MODE=disabled on a private network)?"
            ) from None
        self._address = _gcs_address()

    def _start(self, indexes: Any) -> dict[int, ActorHandle]:
        """Get or make the actors of `indexes`, and check each serves what this process publishes."""
        remote: Any = ray.remote(EpisodeHost)
        options = {
            "max_restarts": -1,
            "max_concurrency": max(64, 4 * self.host.episodes_per_actor),
            **self.settings.actor_options,
            "namespace": self.settings.namespace,
            "get_if_exists": True,
            "lifetime": "detached" if self.settings.detached else None,
            "max_task_retries": 0,
        }
        handles: dict[int, ActorHandle] = {}
        for index in indexes:
            name = self.settings.actor_name(index)
            handles[index] = remote.options(name=name, **options).remote(name, self.host)
        descriptions = self._describe(handles)
        for index, description in descriptions.items():
            self._check(self.settings.actor_name(index), description)
        return handles

    def _describe(self, handles: dict[int, ActorHandle]) -> dict[int, dict[str, Any]]:
        deadline = time.monotonic() + self.settings.connect_timeout
        references: dict[int, Any] = {index: handle.describe.remote() for index, handle in handles.items()}
        descriptions: dict[int, dict[str, Any]] = {}
        for index, reference in references.items():
            name = self.settings.actor_name(index)
            try:
                while True:
                    try:
                        descriptions[index] = ray.get(reference, timeout=max(deadline - time.monotonic(), 0))
                        break
                    except ActorUnavailableError:  # restarting: ask again until it is back, or the deadline
                        time.sleep(0.1)
                        reference = handles[index].describe.remote()
            except GetTimeoutError:
                raise ServerUnavailableError(
                    f"Ray actor {name!r} did not start within {self.settings.connect_timeout:g} s: does the "
                    f"cluster have room for {self.settings.actors} actors with {dict(self.settings.actor_options)}? "
                    "(`ray status` shows what is free)"
                ) from None
            except RayActorError as error:
                raise ServerUnavailableError(
                    f"Ray actor {name!r} could not start: {error}; can every node import "
                    f"{self.host.environment!r} (the same agent_env and environment versions everywhere)?"
                ) from None
        return descriptions

    def _check(self, name: str, description: dict[str, Any]) -> None:
        """Refuse an actor that runs another environment, configuration or tool set than this process."""
        where = f"Ray actor {name!r} (namespace {self.settings.namespace!r})"
        if description["tools"] != self.tool_set:
            raise PoolMismatchError(
                f"{where} serves tool set {description['tools']} of {description['settings']['environment']}, but "
                f"this process publishes tool set {self.tool_set}: the pool was started from another version of "
                "the environment. Shut it down (`RayProvider.shutdown()`, or `ray.kill`) or use another pool name"
            )
        expected = self.host.comparable()
        differing = [key for key in expected if description["settings"].get(key) != expected[key]]
        if differing:
            shown = ", ".join(
                f"{key}={description['settings'].get(key)!r} there, {expected[key]!r} here"
                for key in differing
            )
            raise PoolMismatchError(
                f"{where} runs with other settings than this process ({shown}). Shut it down "
                "(`RayProvider.shutdown()`, or `ray.kill`) or use another pool name"
            )


def _gcs_address() -> str | None:
    try:
        address: str | None = ray.get_runtime_context().gcs_address
    except Exception:  # Ray Client connections do not expose it
        return None
    return address
