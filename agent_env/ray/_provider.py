"""`RayProvider` and `RaySession`: sessions whose episodes live on a pool of Ray actors, routed by episode id.

A new episode goes to the least-loaded actor of the pool and stays there for life; its id names that actor
(`pool/index/hex`), so any process connected to the pool can route a call from the id alone. Nothing is validated
here: the actor's `LocalSession` checks every call, so a call fails on the pool exactly as it fails in process,
with the same error class and message. Failures mirror the served path (`agent_env.server.client`): an episode lost
with its actor raises `EpisodeNotFoundError`, a call past its timeout `CallTimeoutError` (and ends the episode,
unscored), and either lets the episode go, so the next `reset` starts afresh on a live actor. A tool call is never
retried. A pool whose every actor is full is asked again within `capacity_wait`.
"""

from __future__ import annotations

import logging
import math
import random
import uuid
from collections.abc import Mapping
from typing import Any

import ray
from ray.exceptions import ActorDiedError, GetTimeoutError, RayActorError, RayError, RayTaskError

from agent_env._deadline import DEFAULT_EPISODE_BUDGET, check_limit
from agent_env._rows import dataset_rows
from agent_env.environment import Environment, EnvironmentReference, EnvironmentSource, source_of
from agent_env.envs import load_environment
from agent_env.errors import AgentEnvError, SessionClosedError
from agent_env.ray._host import HostSettings
from agent_env.ray._pool import RESERVED_OPTIONS, Pool, PoolSettings
from agent_env.schema import fingerprint
from agent_env.server.capacity import DEFAULT_CAPACITY_WAIT, check_wait, with_room
from agent_env.server.errors import (
    CallTimeoutError,
    EpisodeNotFoundError,
    RemoteError,
    ServerError,
    ServerUnavailableError,
    TooManyEpisodesError,
    error_class,
)
from agent_env.session import (
    LOST_ENDING,
    REWARD_ENDS,
    EpisodeState,
    Score,
    Session,
    episode_label,
    lost_episode,
    require_running,
    timed_out_ending,
    timed_out_episode,
)

logger = logging.getLogger("agent_env.ray")

LOAD_TIMEOUT = 10.0
"""Seconds an actor may take to say how loaded it is before `open` passes it over (it may be restarting)."""
TIMEOUT_GRACE = 5.0
"""Seconds past the pool's call timeout before the caller gives up on an actor that does not answer at all."""


class RayProvider:
    """Opens sessions of one environment whose episodes run on a pool of Ray actors; picklable, so it can travel.

    Its state is the environment's reference, its configuration and the pool's settings; it joins the cluster and
    finds (or makes) the pool's actors on first use in each process. `tools()` and `dataset_rows()` come from the
    environment class in this process, with no Ray, so the factory's render check stays in the trainer's process;
    on joining, every actor must serve the same tool set, or `PoolMismatchError`.

    Args:
        environment: A built-in name (`gridsim-desk`), `package.module:Class`, a class importable by that name, or
            an `MCPEnvironment` (each actor starts its own servers).
        actors: How many actors the pool has.
        episodes_per_actor: The most live episodes one actor holds; past `actors * episodes_per_actor`, `open`
            raises `TooManyEpisodesError`.
        pool: The pool's name (default: the environment class's name); processes using one name share the pool.
        namespace: The Ray namespace the pool's actors are named in.
        address: The Ray cluster to join (`auto`, `host:6379`, `ray://host:10001`); None joins the cluster this
            process already runs in, or starts a local one.
        actor_options: Passed to each actor's `.options(...)`: `num_cpus`, `memory`, `resources`,
            `scheduling_strategy`, `max_restarts` (default -1: a dead actor comes back empty), ...
        call_timeout: Seconds one reset, tool call or reward may run; past it the call raises `CallTimeoutError`
            and its episode is closed. None lets calls run as long as they take.
        episode_budget: Seconds all of one episode's calls may run together; past it the call running raises
            `EpisodeBudgetError` and the episode is closed. None: no limit.
        capacity_wait: Seconds a new episode waits for room when every actor is full before its reset fails as an
            `InfrastructureFailedError`.
        idle_timeout: Seconds without a call after which an episode may be freed; None keeps them.
        detached: Whether the actors outlive the process that made them (end them with `shutdown()`).
        connect_timeout: Seconds to wait for the pool's actors to start when joining.
        **config: Passed to the environment's constructor on the actors.

    Raises:
        ValueError: A setting is out of range, or the environment class cannot be imported by name.
        LookupError: No environment by that name.
    """

    def __init__(
        self,
        environment: EnvironmentReference,
        *,
        actors: int = 2,
        episodes_per_actor: int = 128,
        pool: str | None = None,
        namespace: str = "agent_env",
        address: str | None = None,
        actor_options: Mapping[str, Any] | None = None,
        call_timeout: float | None = 20.0,
        episode_budget: float | None = DEFAULT_EPISODE_BUDGET,
        capacity_wait: float = DEFAULT_CAPACITY_WAIT,
        idle_timeout: float | None = 600.0,
        detached: bool = False,
        connect_timeout: float = 120.0,
        **config: Any,
    ) -> None:
        self.environment, reference = resolve_environment(environment)
        self.name = self.environment.__name__
        self.config = config
        self.call_timeout = call_timeout
        self.episode_budget = episode_budget
        self.capacity_wait = capacity_wait
        _check_settings(
            actors, episodes_per_actor, call_timeout, idle_timeout, connect_timeout, actor_options
        )
        check_limit("episode_budget", episode_budget)
        check_wait(capacity_wait)
        host = HostSettings(
            reference, dict(config), episodes_per_actor, call_timeout, idle_timeout, episode_budget
        )
        settings = PoolSettings(
            pool if pool is not None else self.name,
            namespace,
            actors,
            address,
            dict(actor_options or {}),
            detached,
            connect_timeout,
        )
        _check_pool_name(settings.pool)
        self.pool = Pool(settings, host, fingerprint(self.tools()))
        self.environment.shutdown()  # this process runs no episodes: free what listing the tools started (servers)

    def tools(self) -> list[dict[str, Any]]:
        """The environment's published tools, from its class in this process; the pool serves the same."""
        return self.environment.tools.published

    def open(self) -> RaySession:
        """A new session; its episode is placed on the least-loaded actor by the first `reset`."""
        return RaySession(self)

    def attach(self, episode_id: str) -> RaySession:
        """A session on a live episode of this pool, opened by any process: the id says which actor holds it."""
        self._slot(episode_id)
        session = RaySession(self)
        session.episode_id = episode_id
        return session

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The rows of a dataset split, each one a valid `reset(**row)` (computed in this process)."""
        return dataset_rows(self.environment, self.config, split)

    def loads(self) -> dict[int, int]:
        """How many live episodes each actor that answers in time holds, by slot.

        An actor that leaves the question unanswered for `LOAD_TIMEOUT` (cut off, frozen) or cannot take it
        (restarting) is passed over, and so is it by later calls, without waiting again, until it answers: a lost
        node or a partition costs one wait, not one per new episode.
        """
        handles = self.pool.handles()
        unanswered = self.pool.unanswered
        questions: dict[int, Any] = {}
        for index, handle in handles.items():
            earlier = unanswered.get(index)
            if earlier is not None:
                if not ray.wait([earlier], timeout=0)[0]:
                    continue  # still silent
                unanswered.pop(index, None)
                if self._answer(index, handles[index], earlier) is None:
                    continue  # still restarting (asked again), or dead
            questions[index] = handle.load.remote()
        ready, _ = ray.wait(list(questions.values()), num_returns=len(questions), timeout=LOAD_TIMEOUT)
        loads: dict[int, int] = {}
        for index, reference in questions.items():
            if reference not in ready:
                unanswered[index] = reference
            elif (load := self._answer(index, handles[index], reference)) is not None:
                loads[index] = load
        return loads

    def stuck_calls(self) -> int:
        """How many calls ran past their timeout and are still running on the pool's actors (a Python thread cannot
        be stopped: each holds its episode's thread until it returns), over the actors that answer within
        `LOAD_TIMEOUT`."""
        questions: list[Any] = [handle.describe.remote() for handle in self.pool.handles().values()]
        ready, _ = ray.wait(questions, num_returns=len(questions), timeout=LOAD_TIMEOUT)
        stuck = 0
        for reference in ready:
            try:
                stuck += int(ray.get(reference).get("stuck_calls", 0))
            except RayError:
                continue
        return stuck

    def _answer(self, index: int, handle: Any, reference: Any) -> int | None:
        """An actor's answer to a load question; None when it could not answer: a restarting actor is asked again
        (passed over until it answers), one dead for good is forgotten (made again on next use)."""
        try:
            load: int = ray.get(reference)
        except ActorDiedError:
            self.pool.forget(index, handle)
            return None
        except RayActorError:
            self.pool.unanswered[index] = handle.load.remote()
            return None
        return load

    def place(self, row: Mapping[str, Any] | None, action: str) -> tuple[str, str | None]:
        """Open an episode on the least-loaded actor that takes it; return its id and first observation.

        Raises:
            TooManyEpisodesError: Every actor is full.
            ServerUnavailableError: No actor answered.
        """
        loads = self.loads()
        if not loads:
            raise ServerUnavailableError(
                f"{action}: no actor of Ray pool {self.pool.settings.pool!r} answers: each left the question of "
                f"its load unanswered for {LOAD_TIMEOUT:g} s, or is restarting; are the cluster's nodes alive and "
                "reachable (`ray status`)?"
            )
        capacity = self.pool.host.episodes_per_actor
        for index in sorted(loads, key=lambda slot: (loads[slot], random.random())):
            if loads[index] >= capacity:
                break
            episode_id = f"{self.pool.settings.actor_name(index)}/{uuid.uuid4().hex}"
            try:
                observation = self.request(
                    episode_id, "open", dict(row) if row is not None else None, action=action, calls=2
                )
            except TooManyEpisodesError:  # filled since it was asked: try the next
                continue
            except EpisodeNotFoundError:  # it died since it was asked: try the next
                continue
            return episode_id, observation
        settings = self.pool.settings
        raise TooManyEpisodesError(
            f"{action}: Ray pool {settings.pool!r} is full: its {settings.actors} actors hold {capacity} live "
            "episodes each (episodes_per_actor); close finished sessions, wait for idle ones to expire, or make "
            "the pool bigger (actors=, episodes_per_actor=)"
        )

    def request(self, episode_id: str, method: str, *args: Any, action: str, calls: int = 1) -> Any:
        """Send one request about an episode to the actor that holds it, and return its answer.

        Raises:
            The error the actor answered with, as its own class (`ToolArgumentError`, `EpisodeNotFoundError`, ...);
            `EpisodeNotFoundError` when the actor died or restarted, `CallTimeoutError` when it does not answer
            within `calls` call timeouts (and a grace).
        """
        index = self._slot(episode_id)
        handle = self.pool.handle(index)
        name = self.pool.settings.actor_name(index)
        limits = [limit for limit in (self.call_timeout, self.episode_budget) if limit is not None]
        timeout = calls * min(limits) + TIMEOUT_GRACE if limits else None
        reference = getattr(handle, method).remote(episode_id, *args)
        try:
            outcome = ray.get(reference, timeout=timeout)
        except GetTimeoutError:
            handle.close.remote(episode_id)
            raise CallTimeoutError(
                f"{action}: no answer from Ray actor {name!r} within {timeout:g} s; episode {episode_id!r} was "
                "closed because its state is unknown: call reset(...) to start a new one"
            ) from None
        except RayActorError as error:
            handle.close.remote(episode_id)
            if isinstance(error, ActorDiedError):  # for good: the next use makes the slot's actor again
                self.pool.forget(index, handle)
            raise EpisodeNotFoundError(
                f"{action}: episode {episode_id!r} was lost with Ray actor {name!r}, which died or could not be "
                f"reached ({type(error).__name__}); the call was not retried and the episode's state is gone: "
                "call reset(...) to start a new episode"
            ) from None
        except RayTaskError as error:
            raise ServerError(f"{action} failed on Ray actor {name!r}: {error}") from None
        if outcome[0] == "ok":
            return outcome[1]
        _, code, status, message, ended = outcome
        raised = error_class(code, status)(message)
        raised.ended = ended
        raise raised

    def close_episode(self, episode_id: str) -> None:
        """Close an episode on its actor and wait (a little) until it is freed; never raises: it may be gone."""
        try:
            ray.get(self.pool.handle(self._slot(episode_id)).close.remote(episode_id), timeout=LOAD_TIMEOUT)
        except (RayError, RemoteError) as error:
            logger.debug("agent_env: closing episode %s: %s", episode_id, error)

    def close(self) -> None:
        """Nothing to free in this process: the pool's actors live on (`shutdown` ends them), and each session
        closes its own episode."""

    def shutdown(self) -> None:
        """End the pool's actors (detached ones too); every episode on them is gone."""
        self.pool.shutdown()

    def _slot(self, episode_id: str) -> int:
        pool, _, rest = episode_id.rpartition("/")[0].rpartition("/")
        settings = self.pool.settings
        if pool != settings.pool or not rest.isdigit() or int(rest) >= settings.actors:
            raise EpisodeNotFoundError(
                f"episode {episode_id[:96]!r} is not an episode of Ray pool {settings.pool!r} "
                f"({settings.actors} actors): its id names another pool or actor"
            )
        return int(rest)

    def __getstate__(self) -> dict[str, Any]:
        settings, host = self.pool.settings, self.pool.host
        return {
            "environment": host.environment,
            "actors": settings.actors,
            "episodes_per_actor": host.episodes_per_actor,
            "pool": settings.pool,
            "namespace": settings.namespace,
            # A process that started a local cluster sends its address, so its children join that cluster.
            "address": self.pool.address,
            "actor_options": dict(settings.actor_options),
            "call_timeout": host.call_timeout,
            "episode_budget": host.episode_budget,
            "capacity_wait": self.capacity_wait,
            "idle_timeout": host.idle_timeout,
            "detached": settings.detached,
            "connect_timeout": settings.connect_timeout,
            "config": dict(host.config),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        environment, config = state.pop("environment"), state.pop("config")
        self.__init__(environment, **state, **config)  # type: ignore[misc]

    def __repr__(self) -> str:
        settings = self.pool.settings
        return (
            f"RayProvider({self.name!r}, pool={settings.pool!r}, namespace={settings.namespace!r}, "
            f"actors={settings.actors})"
        )


class RaySession(Session):
    """A session whose episode lives on one actor of a Ray pool, reset again and again there.

    The first `reset` places the episode on the least-loaded actor (waiting for room while every actor is full,
    within the provider's `capacity_wait`); later ones start the next episode in the same environment instance on
    that actor, as `LocalSession` does in process (or a fresh one, anywhere, if the actor has lost it). A call or
    reward before any `reset` opens the episode without starting it, so the actor answers with the very error a
    `LocalSession` raises. When the episode is lost (its actor died or restarted, or idled it out), the call that
    finds it gone raises `EpisodeNotFoundError` and this session lets go of it: the episode has ended, later calls
    are refused, and its reward raises `InfrastructureFailedError` (unscored, left out by a trainer); the next
    `reset` starts a new one. A call that does not finish in time ends the episode as in process: later calls are
    refused, and its reward raises `TimedOutEpisodeError`.
    """

    def __init__(self, provider: RayProvider) -> None:
        self.provider = provider
        self.episode_id: str | None = None
        self.episode = f"(on Ray pool {provider.pool.settings.pool!r})"
        """How messages name the current episode: its row's id (or the row) and where it runs."""
        self._closed = False
        self._ended: str | None = None
        self._timed_out: CallTimeoutError | None = None
        """The call that did not finish in time and ended the episode, if one did."""
        self._lost: EpisodeNotFoundError | None = None
        """Why the pool no longer holds the episode, once a request found it gone."""

    def tools(self) -> list[dict[str, Any]]:
        return self.provider.tools()

    def reset(self, **row: Any) -> str | None:
        self._require_open()
        self._ended, self._timed_out, self._lost = None, None, None
        self.episode = episode_label(row, f"on Ray pool {self.provider.pool.settings.pool!r}")
        try:
            return self._reset(row)
        except CallTimeoutError as error:  # the episode never started, and what the reset did is unknown
            raise timed_out_episode(
                error, environment=self.provider.name, episode=self.episode, starting=True
            ) from error

    def _reset(self, row: dict[str, Any]) -> str | None:
        if self.episode_id is not None:
            try:
                observation: str | None = self.provider.request(self.episode_id, "reset", row, action="reset")
                return observation
            except EpisodeNotFoundError:
                self.episode_id = None  # lost with its actor or idled out: a reset starts afresh
            except CallTimeoutError:
                self._drop()  # closed on its actor; the reset is not run again elsewhere
                raise
        self.episode_id, observation = with_room(
            lambda: self.provider.place(row, "reset"),
            wait=self.provider.capacity_wait,
            environment=self.provider.name,
            episode=self.episode,
        )
        return observation

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        if self._timed_out is not None or self._lost is not None:  # ended here: its actor no longer holds it
            require_running(EpisodeState.ENDED, name, ended_by=self._ended or "")
        body = (
            dict(arguments) if isinstance(arguments, Mapping) else arguments
        )  # the actor's session judges it
        try:
            result, self._ended = self._episode_request("call", name, body, action=f"tool '{name}'")
        except CallTimeoutError as error:
            self._time_out(error, f"tool '{name}'")
            raise
        except AgentEnvError as error:
            self._ended = self._ended or error.ended
            raise
        return str(result)

    def reward(self) -> float:
        return self._scored("reward").reward

    def score(self) -> Score:
        return self._scored("score")

    def _scored(self, method: str) -> Score:
        """The episode's reward (`reward`) or its score (`score`), read once: the episode then ends."""
        if self._timed_out is None and self._lost is None:
            try:
                answer = self._episode_request(method, action="reward()")
            except CallTimeoutError as error:
                self._time_out(error, "reward()")
            except EpisodeNotFoundError:
                pass  # lost: `_episode_request` has ended it
            else:
                self._ended = self._ended or REWARD_ENDS
                return Score(float(answer)) if method == "reward" else Score(float(answer[0]), answer[1])
        if self._timed_out is not None:
            raise timed_out_episode(self._timed_out, environment=self.provider.name, episode=self.episode)
        assert self._lost is not None
        raise lost_episode(self._lost, environment=self.provider.name, episode=self.episode)

    def _time_out(self, error: CallTimeoutError, action: str) -> None:
        """End the episode on `action`, a call that did not finish in time (the session has let go of it)."""
        self._timed_out = error
        self._ended = error.ended = timed_out_ending(error, action)

    def ended(self) -> str | None:
        return self._ended

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._let_go()

    def _episode_request(self, method: str, *args: Any, action: str) -> Any:
        self._require_open()
        if self.episode_id is None:
            self.episode_id, _ = self.provider.place(None, action)
        try:
            return self.provider.request(self.episode_id, method, *args, action=action)
        except CallTimeoutError:
            self._drop()
            raise
        except EpisodeNotFoundError as error:
            self._drop()
            self._lost, self._ended = error, LOST_ENDING
            raise

    def _let_go(self) -> None:
        episode_id, self.episode_id = self.episode_id, None
        if episode_id is not None:
            self.provider.close_episode(episode_id)

    def _drop(self) -> None:
        """Forget the episode: it timed out or was lost, and the provider has already asked its actor to close it."""
        self.episode_id = None

    def _require_open(self) -> None:
        if self._closed:
            raise SessionClosedError()


def resolve_environment(
    environment: EnvironmentReference,
) -> tuple[type[Environment], str | EnvironmentSource]:
    """The environment class and the reference every actor loads it by (`package.module:Class`, a built-in name,
    or the source a class is built from).

    Raises:
        ValueError: A class that cannot be imported by its name (defined in a function, or in `__main__`).
    """
    if isinstance(environment, str):
        return load_environment(environment), environment
    if not isinstance(environment, type):
        return load_environment(environment), environment
    source = source_of(environment)
    if source is not None:
        return environment, source
    reference = f"{environment.__module__}:{environment.__qualname__}"
    if environment.__module__ == "__main__" or "<locals>" in environment.__qualname__:
        raise ValueError(
            f"{environment.__qualname__} cannot run on Ray actors: they import it by name, and {reference!r} "
            "cannot be imported there; define it at the top level of a module and pass 'package.module:Class'"
        )
    try:
        found = load_environment(reference)
    except (ImportError, LookupError) as error:
        raise ValueError(
            f"{reference!r} cannot be imported by name, so Ray actors cannot load it: {error}"
        ) from None
    if found is not environment:
        raise ValueError(
            f"{reference!r} names another class than {environment!r}; pass 'package.module:Class'"
        )
    return environment, reference


def _check_settings(
    actors: int,
    episodes_per_actor: int,
    call_timeout: float | None,
    idle_timeout: float | None,
    connect_timeout: float,
    actor_options: Mapping[str, Any] | None,
) -> None:
    for name, count in (("actors", actors), ("episodes_per_actor", episodes_per_actor)):
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            raise ValueError(f"{name} must be a positive whole number, not {count!r}")
    for name, seconds in (
        ("call_timeout", call_timeout),
        ("idle_timeout", idle_timeout),
        ("connect_timeout", connect_timeout),
    ):
        if seconds is not None and not (
            isinstance(seconds, int | float) and math.isfinite(seconds) and seconds > 0
        ):
            raise ValueError(f"{name} must be a positive, finite number of seconds, not {seconds!r}")
    reserved = sorted(set(actor_options or {}) & set(RESERVED_OPTIONS))
    if reserved:
        raise ValueError(
            f"actor_options may not set {', '.join(reserved)}: the pool names its actors (pool=, namespace=), "
            "reuses them (get_if_exists), sets their lifetime (detached=) and never retries a call "
            "(max_task_retries=0)"
        )


def _check_pool_name(pool: str) -> None:
    if not pool or "/" in pool:
        raise ValueError(f"pool must be a non-empty name without '/', not {pool!r}")
