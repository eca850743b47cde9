"""The body of one pool actor: many live episodes of one environment, each a `LocalSession`, under the pool's limits.

Plain Python, no Ray: the pool makes it an async Ray actor. Every episode is a `LocalSession` on its own environment
instance, so every call is validated and run exactly as in process. Environment code runs on the episode's own
daemon thread (async tools on the actor's event loop), one call at a time per episode, under the call timeout and
what is left of the episode's time budget. A call that times out leaves its episode in a state nobody knows (its
thread may still be running), so the episode is closed and its id becomes unknown, as on the served path.

Answers cross to the caller as tuples: `("ok", value)`, or `("error", code, status, message)` for an agent_env
error, which the caller raises again as the same class with the same message (the served path's wire table,
`agent_env.server.errors`, maps the code back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any, TypeVar

from agent_env._deadline import Deadline
from agent_env.environment import EnvironmentSource
from agent_env.envs import load_environment
from agent_env.errors import AgentEnvError, EpisodeStateError, InfrastructureFailedError, UnscoredEpisodeError
from agent_env.schema import fingerprint
from agent_env.server.errors import (
    CallTimeoutError,
    EpisodeNotFoundError,
    RemoteError,
    ServerError,
    TooManyEpisodesError,
    http_status,
    reset_error,
)
from agent_env.session import LocalSession, refused_row

T = TypeVar("T")
logger = logging.getLogger("agent_env.ray")

Outcome = tuple[Any, ...]
"""`("ok", value)` or `("error", code, status, message, ended)` (`ended`: `AgentEnvError.ended`)."""


@dataclass(frozen=True)
class HostSettings:
    """What every actor of a pool runs, and under which limits; equal settings, interchangeable actors.

    Attributes:
        environment: The environment, as `package.module:Class`, a built-in name, or an `EnvironmentSource`.
        config: Keyword arguments for the environment's constructor.
        episodes_per_actor: The most live episodes one actor holds.
        call_timeout: Seconds one reset, tool call or reward may run; None lets calls run as long as they take.
        idle_timeout: Seconds without a call after which an episode may be freed; None keeps them.
        episode_budget: Seconds all of one episode's calls may run together; None: no limit.
    """

    environment: str | EnvironmentSource
    config: Mapping[str, Any]
    episodes_per_actor: int
    call_timeout: float | None
    idle_timeout: float | None
    episode_budget: float | None = None

    def comparable(self) -> dict[str, Any]:
        """The settings as processes compare them: a source by its label (its functions and rows cannot be
        compared across processes; the tool-set fingerprint, compared beside it, covers its tools)."""
        settings = {field.name: getattr(self, field.name) for field in fields(self)}
        settings["config"] = dict(self.config)
        if not isinstance(self.environment, str):
            settings["environment"] = self.environment.label()
        return settings


class _Overran(Exception):
    """A call ran past the call timeout (not a `TimeoutError` the environment raised itself)."""


class EpisodeWorker:
    """One daemon thread that runs one episode's calls, in order, started on its first call.

    A thread per episode, not a shared pool: a call that never returns holds only its own episode's thread (and
    that episode is closed when the call times out, so nothing waits behind it), never a worker that another
    episode needs; a daemon thread does not keep the actor's process from exiting.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], asyncio.Future[Any]] | None] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self.running = False
        """Whether a call is running on the thread (one given up on included)."""

    async def run(self, function: Callable[[], T], timeout: float | None) -> T:
        """Run `function` on this episode's thread and await its result; past `timeout`, give up on it.

        Raises:
            _Overran: It ran longer than `timeout` (it runs on; its result is thrown away).
            Whatever `function` raised.
        """
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="agent-env-episode", daemon=True)
            self._thread.start()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put((function, future))
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            if not future.cancelled():
                raise
            raise _Overran from None

    def stop(self) -> None:
        """Let the thread end once the call it is running (if any) returns."""
        self._jobs.put(None)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            function, future = job
            self.running = True
            try:
                outcome: tuple[Any, BaseException | None] = (function(), None)
            except BaseException as error:
                outcome = (None, error)
            self.running = False
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                future.get_loop().call_soon_threadsafe(_settle, future, *outcome)


@dataclass(eq=False)
class HostedEpisode:
    """One live episode: its session, the lock that keeps its calls one at a time, when it was last used, and its
    deadline (the call timeout, and what is left of its time budget)."""

    id: str
    deadline: Deadline
    session: LocalSession | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    worker: EpisodeWorker = field(default_factory=EpisodeWorker)
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 1
    closed: bool = False


class EpisodeHost:
    """The live episodes of one pool actor.

    Args:
        name: The actor's name in its namespace (`pool/index`), used in messages.
        settings: What the pool runs, and its limits.
    """

    def __init__(self, name: str, settings: HostSettings) -> None:
        self.name = name
        self.settings = settings
        self.environment = load_environment(settings.environment)
        self.tool_set = fingerprint(self.environment.tools.published)
        self.episodes: dict[str, HostedEpisode] = {}
        self._given_up: list[EpisodeWorker] = []
        """The threads of episodes closed on a call that did not finish in time, while it may still be running."""

    async def describe(self) -> dict[str, Any]:
        """Who this actor is: its settings, its tool-set fingerprint, its process, how many episodes it holds, and
        how many of its calls ran past their timeout and are still running (a thread cannot be stopped)."""
        return {
            "name": self.name,
            "settings": self.settings.comparable(),
            "tools": self.tool_set,
            "pid": os.getpid(),
            "episodes": len(self.episodes),
            "stuck_calls": self.stuck_calls(),
        }

    def stuck_calls(self) -> int:
        """How many calls that ran past their timeout are still running on this actor."""
        self._given_up = [worker for worker in self._given_up if worker.running]
        return len(self._given_up)

    async def load(self) -> int:
        """How many episodes are live, after freeing the idle ones."""
        self._reap()
        return len(self.episodes)

    async def open(self, episode_id: str, row: Mapping[str, Any] | None) -> Outcome:
        """A new episode under `episode_id` on a fresh environment instance, reset from `row` (None: not started)."""
        return await _answer(self._open(episode_id, row))

    async def reset(self, episode_id: str, row: Mapping[str, Any]) -> Outcome:
        """Start the next episode on the same environment instance; answer its first observation."""
        return await _answer(self._reset_live(episode_id, row))

    async def call(self, episode_id: str, name: str, arguments: Mapping[str, Any]) -> Outcome:
        """Validate and run one tool call, as `LocalSession.call_tool` does; answer its text, and why the episode
        has ended if it has (`LocalSession.ended`)."""
        return await _answer(self._call(episode_id, name, arguments))

    async def reward(self, episode_id: str) -> Outcome:
        """The episode's reward, ending it first if it is still running."""
        return await _answer(self._reward(episode_id))

    async def score(self, episode_id: str) -> Outcome:
        """The episode's reward and its breakdown (`LocalSession.score`), ending it first if it is still running."""
        return await _answer(self._score(episode_id))

    async def close(self, episode_id: str) -> None:
        """Close an episode and free it; a call still running on it answers, and nothing more runs on it."""
        episode = self.episodes.get(episode_id)
        if episode is not None:
            self._discard(episode)

    async def _open(self, episode_id: str, row: Mapping[str, Any] | None) -> str | None:
        episode = self._admit(episode_id)
        try:
            async with episode.lock:
                episode.session = await self._build(episode)
                return None if row is None else await self._reset(episode, row)
        except BaseException:
            self._discard(episode)
            raise
        finally:
            episode.busy -= 1
            episode.last_used = time.monotonic()

    async def _reset_live(self, episode_id: str, row: Mapping[str, Any]) -> str | None:
        async with self._use(episode_id) as episode:
            return await self._reset(episode, row)

    async def _call(self, episode_id: str, name: str, arguments: Mapping[str, Any]) -> tuple[str, str | None]:
        async with self._use(episode_id) as episode:
            session = _session(episode)
            action = f"tool '{name}'"
            with self._failures_reported(action):
                if session.is_async(name):
                    text = await self._await(episode, session.acall_tool(name, arguments), action)
                else:
                    text = await self._run(episode, partial(session.call_tool, name, arguments), action)
                return text, session.ended()

    async def _reward(self, episode_id: str) -> float:
        async with self._use(episode_id) as episode:
            with self._failures_reported("reward()"):
                return await self._run(episode, _session(episode).reward, "reward()")

    async def _score(self, episode_id: str) -> tuple[float, dict[str, Any] | None]:
        async with self._use(episode_id) as episode:
            with self._failures_reported("reward()"):
                score = await self._run(episode, _session(episode).score, "reward()")
                return score.reward, score.breakdown

    async def _build(self, episode: HostedEpisode) -> LocalSession:
        environment, config = self.environment, self.settings.config
        where = f"in episode {episode.id} on Ray actor {self.name!r}"

        def build() -> LocalSession:
            return LocalSession(environment(**config), where=where)

        try:
            return await self._run(episode, build, f"building {environment.__name__}")
        except AgentEnvError:
            raise
        except Exception as error:
            raise ServerError(
                f"Ray actor {self.name!r} could not build {environment.__name__}: {type(error).__name__}: {error}"
            ) from error

    async def _reset(self, episode: HostedEpisode, row: Mapping[str, Any]) -> str | None:
        session = _session(episode)
        episode.deadline.begin()
        try:
            return await self._run(episode, partial(session.reset, **row), "reset")
        except (EpisodeStateError, RemoteError, InfrastructureFailedError):  # state, the limits, a service
            raise
        except Exception as error:  # the environment refused the row (an unknown task id, a missing key, ...)
            _log_unscored("reset", episode.id, self.name, error)
            raise reset_error(self.environment.__name__, error) from error

    async def _run(self, episode: HostedEpisode, function: Callable[[], T], action: str) -> T:
        started = time.monotonic()
        try:
            return await episode.worker.run(function, episode.deadline.timeout())
        except _Overran:
            self._given_up.append(episode.worker)
            self._discard(episode)
            raise self._timed_out(action, episode) from None
        finally:
            episode.deadline.charge(time.monotonic() - started)

    async def _await(self, episode: HostedEpisode, call: Awaitable[T], action: str) -> T:
        task = asyncio.ensure_future(call)
        started = time.monotonic()
        try:
            return await asyncio.wait_for(task, episode.deadline.timeout())
        except TimeoutError:
            if not task.cancelled():
                raise
            self._discard(episode)
            raise self._timed_out(action, episode) from None
        finally:
            episode.deadline.charge(time.monotonic() - started)

    @contextlib.asynccontextmanager
    async def _use(self, episode_id: str) -> Any:
        episode = self._live(episode_id)
        episode.busy += 1
        try:
            async with episode.lock:
                if episode.closed:
                    raise EpisodeNotFoundError(self._not_found(episode_id))
                yield episode
        finally:
            episode.busy -= 1
            episode.last_used = time.monotonic()

    def _live(self, episode_id: str) -> HostedEpisode:
        episode = self.episodes.get(episode_id)
        if episode is not None and self._expired(episode, time.monotonic()):
            self._discard(episode)
            episode = None
        if episode is None:
            raise EpisodeNotFoundError(self._not_found(episode_id))
        return episode

    def _admit(self, episode_id: str) -> HostedEpisode:
        limit = self.settings.episodes_per_actor
        if len(self.episodes) >= limit:
            self._reap()
            if len(self.episodes) >= limit:
                raise TooManyEpisodesError(
                    f"Ray actor {self.name!r} already holds {limit} live episodes, its limit (episodes_per_actor)"
                )
        if episode_id in self.episodes:
            raise ServerError(f"episode id {episode_id!r} is taken on Ray actor {self.name!r}")
        episode = HostedEpisode(
            episode_id, Deadline(self.settings.call_timeout, self.settings.episode_budget)
        )
        self.episodes[episode_id] = episode
        return episode

    def _reap(self) -> None:
        now = time.monotonic()
        for episode in list(self.episodes.values()):
            if self._expired(episode, now):
                self._discard(episode)

    def _expired(self, episode: HostedEpisode, now: float) -> bool:
        idle = self.settings.idle_timeout
        return idle is not None and episode.busy == 0 and now - episode.last_used > idle

    def _discard(self, episode: HostedEpisode) -> None:
        if not episode.closed:
            episode.worker.stop()
        episode.closed = True
        self.episodes.pop(episode.id, None)
        if episode.session is not None:
            episode.session.close()

    @contextlib.contextmanager
    def _failures_reported(self, action: str) -> Iterator[None]:
        """Let agent_env errors through (an `UnscoredEpisodeError` logged with its traceback first, which only this
        actor has); turn anything else the environment raised (a bug) into a `ServerError`."""
        try:
            yield
        except UnscoredEpisodeError as error:
            _log_unscored(action, "", self.name, error)
            raise
        except AgentEnvError:
            raise
        except Exception as error:
            raise ServerError(
                f"{action} failed on Ray actor {self.name!r}: {type(error).__name__}: {error}"
            ) from error

    def _not_found(self, episode_id: str) -> str:
        idle = self.settings.idle_timeout
        idled = f"idled out after {idle:g} s, " if idle is not None else ""
        return (
            f"episode {episode_id[:96]!r} expired or unknown: it was closed, {idled}closed after a call timed "
            "out, or its Ray actor restarted; call reset(...) to start a new episode"
        )

    def _timed_out(self, action: str, episode: HostedEpisode) -> CallTimeoutError:
        return episode.deadline.expired(
            action,
            whose="the Ray pool's",
            then=f"episode {episode.id!r} was closed because its state is unknown: call reset(...) to start a new one",
        )


def _log_unscored(action: str, episode_id: str, actor: str, error: Exception) -> None:
    """Log an episode the environment could not score with its traceback, which only this actor has (the caller gets
    the message, and a trainer's adapter warns once more there)."""
    if isinstance(error, UnscoredEpisodeError):
        where = f"episode {episode_id} on " if episode_id else ""
        if refused_row(error):  # a row its reset refused: one line, its traceback at DEBUG
            logger.warning("agent_env: %s of %sRay actor %r: %s", action, where, actor, error)
            logger.debug("agent_env: where the refusal of that row was raised", exc_info=error.cause)
            return
        logger.warning(
            "agent_env: %s of %sRay actor %r: %s", action, where, actor, error, exc_info=error.cause
        )


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


async def _answer(work: Awaitable[Any]) -> Outcome:
    try:
        return ("ok", await work)
    except AgentEnvError as error:
        return ("error", error.code, http_status(error), str(error), error.ended)


def _session(episode: HostedEpisode) -> LocalSession:
    assert episode.session is not None, "an episode's session is set before anyone can use it"
    return episode.session
