"""The live episodes of one served environment: open, reset, call, score and close them, and free the idle ones.

Every episode is one `LocalSession` on its own environment instance, so every call is validated and run exactly as
in process. Environment code runs in worker threads under the call timeout and what is left of the episode's time
budget (async tools on the event loop, under the same deadline), one call at a time per episode. A call that times
out leaves its episode in a state nobody knows (the thread may still be running it), so the episode is closed: its
id is then unknown, like an idled-out one. Everything here runs on the event loop's thread; nothing else touches the
registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from agent_env._deadline import Deadline
from agent_env._rows import dataset_rows
from agent_env.environment import Environment
from agent_env.errors import AgentEnvError, EpisodeStateError, InfrastructureFailedError, UnscoredEpisodeError
from agent_env.schema._describe import short
from agent_env.server._row_references import row_digest
from agent_env.server._workers import JobTimeoutError, WorkerPool
from agent_env.server.errors import (
    CallTimeoutError,
    DatasetNotFoundError,
    EpisodeNotFoundError,
    RemoteError,
    RowNotFoundError,
    ServerError,
    ServerUnavailableError,
    TooManyEpisodesError,
    reset_error,
)
from agent_env.server.limits import RETRY_AFTER, Limits
from agent_env.session import EpisodeState, LocalSession, Score, refused_row

logger = logging.getLogger("agent_env.server")

T = TypeVar("T")

WORKERS = 16
"""Worker threads per server: enough that slow tools on some episodes do not hold up the others."""


@dataclass(frozen=True)
class ClientAdvice:
    """What the clients of one wire surface do to start an episode and to make room for one, in the words every
    message to them uses, so that none names a call they cannot make."""

    start_hint: str
    """How a client starts an episode on the same session (a `LocalSession`'s "call reset(...)")."""
    start_again: str
    """How a client starts afresh once its episode is gone (closed, idled out, timed out)."""
    make_room: str
    """What frees room for another episode when the server holds its limit."""


CONTROL = ClientAdvice(
    start_hint="call reset(...)",
    start_again="start a new episode (POST /episodes)",
    make_room="close finished ones (DELETE /episodes/{id})",
)
"""The control API's clients: `AgentEnv.connect` (whose sessions have `reset`) and plain HTTP."""


@dataclass(eq=False)
class Episode:
    """One live episode: its session, the lock that keeps its calls one at a time, when it was last used, and its
    deadline (the call timeout, and what is left of its time budget)."""

    id: str
    deadline: Deadline
    surface: ClientAdvice = CONTROL
    session: LocalSession | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0
    closed: bool = False


class EpisodeRegistry:
    """The live episodes of one environment class and configuration, under one server's limits."""

    def __init__(self, environment: type[Environment], config: Mapping[str, Any], limits: Limits) -> None:
        self.environment = environment
        self.config = dict(config)
        self.limits = limits
        self._episodes: dict[str, Episode] = {}
        self._datasets: dict[str, list[dict[str, Any]]] = {}
        self._served_rows: dict[str, dict[str, Any]] = {}
        """Every row of the splits served so far, by its digest (`_row_references`)."""
        self._workers: WorkerPool | None = None
        self._reaper: asyncio.Task[None] | None = None

    def tools(self) -> list[dict[str, Any]]:
        """The environment's published tools, exactly as in process."""
        return self.environment.tools.published

    def count(self) -> int:
        """How many episodes are live."""
        return len(self._episodes)

    def stuck_workers(self) -> int:
        """How many worker threads are still running a call that timed out."""
        return self._workers.stuck() if self._workers else 0

    def health(self) -> dict[str, Any]:
        """What `GET /health` reports beside its status: the live episodes, the most the server holds (null for no
        limit), and the worker threads still running a call that timed out (a thread cannot be stopped)."""
        return {
            "episodes": self.count(),
            "max_episodes": self.limits.max_episodes,
            "stuck_calls": self.stuck_workers(),
        }

    async def start(self) -> None:
        """Start the workers and the idle reaper; the server's lifespan calls this."""
        _collector_passes_over_startup(True)
        self._workers = WorkerPool(WORKERS)
        if self.limits.idle_timeout is not None:
            self._reaper = asyncio.create_task(self._reap_forever(self.limits.idle_timeout))

    async def stop(self) -> None:
        """Close every episode and stop the workers; nothing waits for a stuck call."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        for episode in list(self._episodes.values()):
            self._discard(episode)
        if self._workers is not None:
            self._workers.shutdown()
            self._workers = None
            _collector_passes_over_startup(False)

    async def open(
        self, row: Mapping[str, Any] | None, surface: ClientAdvice = CONTROL
    ) -> tuple[str, str | None]:
        """A new episode on a fresh environment instance, reset from `row` (None: not reset, no episode running).

        Args:
            row: The dataset row to reset from.
            surface: Whose episode it is: its messages tell that surface's clients what to do.

        Returns:
            The episode id and the first observation.
        """
        episode = self._admit(surface)
        try:
            async with episode.lock:
                episode.session = await self._build(episode)
                observation = None
                if row is not None:
                    observation = await self._reset(episode, row)
        except BaseException:
            self._discard(episode)
            raise
        finally:
            episode.busy -= 1
            episode.last_used = time.monotonic()
        return episode.id, observation

    async def reset(
        self, episode_id: str, row: Mapping[str, Any], surface: ClientAdvice = CONTROL
    ) -> str | None:
        """Start the next episode on the same environment instance; return its first observation."""
        async with self._use(episode_id, surface) as episode:
            return await self._reset(episode, row)

    async def call(self, episode_id: str, name: str, arguments: Any, surface: ClientAdvice = CONTROL) -> str:
        """Validate and run one tool call, as `LocalSession.call_tool` does; return its text."""
        async with self._use(episode_id, surface) as episode:
            return await self._call(episode, name, arguments)

    async def call_and_score(
        self, episode_id: str, name: str, arguments: Any, surface: ClientAdvice = CONTROL
    ) -> tuple[str, float | None]:
        """`call`, and the episode's reward if that call ended it (`end_turn`), read in the same turn.

        Returns:
            The call's text, and the reward or None while the episode runs.
        """
        async with self._use(episode_id, surface) as episode:
            text = await self._call(episode, name, arguments)
            session = _session(episode)
            if session.state is not EpisodeState.ENDED:
                return text, None
            with _failures_reported("reward()", episode):
                return text, await self._run(episode, session.reward, "reward()")

    async def reward(self, episode_id: str, surface: ClientAdvice = CONTROL) -> float:
        """The episode's reward, ending it first if it is still running."""
        async with self._use(episode_id, surface) as episode:
            with _failures_reported("reward()", episode):
                return await self._run(episode, _session(episode).reward, "reward()")

    async def score(self, episode_id: str, surface: ClientAdvice = CONTROL) -> Score:
        """The episode's reward and its breakdown, ending it first if it is still running."""
        async with self._use(episode_id, surface) as episode:
            with _failures_reported("reward()", episode):
                return await self._run(episode, _session(episode).score, "reward()")

    def ended(self, episode_id: str, surface: ClientAdvice = CONTROL) -> str | None:
        """Why the episode has ended, or None while it runs (`LocalSession.ended`) or once it is closed."""
        episode = self._episodes.get(episode_id)
        return None if episode is None or episode.session is None else episode.session.ended()

    def close(self, episode_id: str, surface: ClientAdvice = CONTROL) -> None:
        """Close an episode and free it; a call already running on it still answers, and nothing more runs on it."""
        episode = self._episodes.get(episode_id)
        if episode is None:
            raise EpisodeNotFoundError(self._not_found(episode_id, surface))
        self._discard(episode)

    async def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The rows of a dataset split (computed once per split), each one a valid reset row."""
        if split not in self._datasets:
            try:
                rows, by_digest = await self._workers_or_raise().run(
                    partial(self._rows, split), self.limits.call_timeout
                )
            except JobTimeoutError:
                raise CallTimeoutError(
                    f"dataset_rows({split!r}) did not finish within the server's call timeout of "
                    f"{self.limits.call_timeout:g} s"
                ) from None
            except (NotImplementedError, LookupError, ValueError) as error:
                missing = DatasetNotFoundError(f"no dataset split {split!r}: {error}")
                missing.splits = tuple(getattr(error, "splits", ()) or ())
                raise missing from None
            self._datasets[split] = rows
            self._served_rows.update(by_digest)
        return self._datasets[split]

    async def served_row(self, row_digest: str, split: str | None = None) -> dict[str, Any]:
        """A copy of the row of a served split whose digest is `row_digest`; `split`, when given, is read first if it
        has not been (the server may have restarted since the client read it).

        Raises:
            RowNotFoundError: No row of the splits served has that digest.
        """
        if row_digest not in self._served_rows and split is not None and split not in self._datasets:
            with contextlib.suppress(DatasetNotFoundError):
                await self.dataset_rows(split)
        row = self._served_rows.get(row_digest)
        if row is None:
            raise RowNotFoundError(
                f"no row of this server's datasets has digest {short(row_digest)} (the served splits: "
                f"{', '.join(map(repr, self._datasets)) or 'none yet'}): send the row itself"
            )
        # A copy, made off the event loop (and off the environment's workers, which a stuck call may hold): an
        # environment that changes its row must not change the served one.
        return await asyncio.to_thread(_copied, row)

    def touch(self, episode_id: str, surface: ClientAdvice = CONTROL) -> None:
        """Count an episode as used now (a client keeping it alive), so that it does not idle out."""
        self._live(episode_id, surface).last_used = time.monotonic()

    def is_live(self, episode_id: str) -> bool:
        """Whether an episode is open (it may still be idle past the timeout, until someone asks for it)."""
        return episode_id in self._episodes

    def reap(self) -> None:
        """Close every episode idle past the idle timeout."""
        now = time.monotonic()
        for episode in list(self._episodes.values()):
            if self._expired(episode, now):
                logger.info("agent_env: episode %s idled out", episode.id)
                self._discard(episode)

    async def _call(self, episode: Episode, name: str, arguments: Any) -> str:
        session = _session(episode)
        action = f"tool '{name}'"
        with _failures_reported(action, episode):
            if session.is_async(name):
                return await self._await(episode, session.acall_tool(name, arguments), action)
            return await self._run(episode, partial(session.call_tool, name, arguments), action)

    async def _build(self, episode: Episode) -> LocalSession:
        def build() -> LocalSession:
            return LocalSession(
                self.environment(**self.config),
                start_hint=episode.surface.start_hint,
                where=f"in served episode {episode.id}",
            )

        try:
            return await self._run(episode, build, f"building {self.environment.__name__}")
        except AgentEnvError:
            raise
        except Exception as error:
            logger.exception("agent_env: building %s failed", self.environment.__name__)
            raise ServerError(
                f"the server could not build {self.environment.__name__}: {type(error).__name__}: {error}"
            ) from error

    def _rows(self, split: str) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
        rows = dataset_rows(self.environment, self.config, split)
        by_digest = {found: row for row in rows if (found := row_digest(row)) is not None}
        return rows, by_digest

    async def _reset(self, episode: Episode, row: Mapping[str, Any]) -> str | None:
        session = _session(episode)
        episode.deadline.begin()
        try:
            return await self._run(episode, partial(session.reset, **row), "reset")
        except (
            EpisodeStateError,
            RemoteError,
            InfrastructureFailedError,
        ):  # the session's state, the limits, a service
            raise
        except Exception as error:  # the environment refused the row (an unknown task id, a missing key, ...)
            _log_unscored("reset", episode.id, error)
            raise reset_error(self.environment.__name__, error) from error

    async def _run(self, episode: Episode, function: Callable[[], T], action: str) -> T:
        workers = self._workers_or_raise()
        deadline = episode.deadline
        started = time.monotonic()
        try:
            return await workers.run(function, deadline.timeout())
        except JobTimeoutError:
            self._discard(episode)
            logger.warning(
                "agent_env: %s timed out in episode %s; %d worker threads are stuck in timed-out calls",
                action,
                episode.id,
                workers.stuck(),
            )
            raise self._timed_out(action, episode) from None
        except asyncio.CancelledError:
            self._discard(episode)
            raise
        finally:
            deadline.charge(time.monotonic() - started)

    async def _await(self, episode: Episode, call: Awaitable[T], action: str) -> T:
        task = asyncio.ensure_future(call)
        deadline = episode.deadline
        started = time.monotonic()
        try:
            return await asyncio.wait_for(task, deadline.timeout())
        except TimeoutError:
            if not task.cancelled():
                raise
            self._discard(episode)
            raise self._timed_out(action, episode) from None
        except asyncio.CancelledError:
            self._discard(episode)
            raise
        finally:
            deadline.charge(time.monotonic() - started)

    def _use(self, episode_id: str, surface: ClientAdvice) -> _InUse:
        """`async with self._use(id, surface) as episode:` the live episode, its calls one at a time (its lock held),
        counted busy (never idle) meanwhile."""
        return _InUse(self, self._live(episode_id, surface), surface)

    def _live(self, episode_id: str, surface: ClientAdvice) -> Episode:
        episode = self._episodes.get(episode_id)
        if episode is not None and self._expired(episode, time.monotonic()):
            self._discard(episode)
            episode = None
        if episode is None:
            raise EpisodeNotFoundError(self._not_found(episode_id, surface))
        return episode

    def _admit(self, surface: ClientAdvice) -> Episode:
        limit = self.limits.max_episodes
        if limit is not None and len(self._episodes) >= limit:
            self.reap()
            if len(self._episodes) >= limit:
                full = TooManyEpisodesError(
                    f"the server already holds {limit} live episodes, its limit: {surface.make_room}, wait for "
                    "idle ones to expire, or start the server with a higher max_episodes"
                )
                full.retry_after = RETRY_AFTER
                raise full
        self._workers_or_raise()
        deadline = Deadline(self.limits.call_timeout, self.limits.episode_budget)
        episode = Episode(uuid.uuid4().hex, deadline, surface, busy=1)
        self._episodes[episode.id] = episode
        return episode

    def _expired(self, episode: Episode, now: float) -> bool:
        idle = self.limits.idle_timeout
        return idle is not None and episode.busy == 0 and now - episode.last_used > idle

    def _discard(self, episode: Episode) -> None:
        episode.closed = True
        self._episodes.pop(episode.id, None)
        if episode.session is not None:
            episode.session.close()

    def _workers_or_raise(self) -> WorkerPool:
        if self._workers is None:
            raise ServerUnavailableError(
                "the server is not started: its lifespan has not run (under httpx.ASGITransport, enter "
                "`app.router.lifespan_context(app)` first)"
            )
        return self._workers

    def _not_found(self, episode_id: str, surface: ClientAdvice) -> str:
        idle = self.limits.idle_timeout
        idled = f"idled out after {idle:g} s, " if idle is not None else ""
        return (
            f"episode {episode_id[:64]!r} expired or unknown: it was closed, {idled}closed after a call timed out, "
            f"or the server restarted; {surface.start_again}"
        )

    def _timed_out(self, action: str, episode: Episode) -> CallTimeoutError:
        return episode.deadline.expired(
            action,
            whose="the server's",
            then=f"episode {episode.id!r} was closed because its state is unknown: {episode.surface.start_again}",
        )

    async def _reap_forever(self, idle_timeout: float) -> None:
        interval = min(max(idle_timeout / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            self.reap()


class _InUse:
    """An episode in use: busy (so never idle), its lock held; a class rather than a generator-based context manager,
    which costs several times as much on every call."""

    __slots__ = ("episode", "registry", "surface")

    def __init__(self, registry: EpisodeRegistry, episode: Episode, surface: ClientAdvice) -> None:
        self.registry = registry
        self.episode = episode
        self.surface = surface
        episode.busy += 1

    async def __aenter__(self) -> Episode:
        episode = self.episode
        try:
            await episode.lock.acquire()
        except BaseException:
            self._done()
            raise
        if episode.closed:
            episode.lock.release()
            self._done()
            raise EpisodeNotFoundError(self.registry._not_found(episode.id, self.surface))
        return episode

    async def __aexit__(self, *exception: object) -> None:
        self.episode.lock.release()
        self._done()

    def _done(self) -> None:
        self.episode.busy -= 1
        self.episode.last_used = time.monotonic()


@contextlib.contextmanager
def _failures_reported(action: str, episode: Episode) -> Iterator[None]:
    """Let agent_env errors through (an `UnscoredEpisodeError` logged with its traceback first, which only this
    process has); turn anything else the environment raised (a bug) into a `ServerError`."""
    try:
        yield
    except UnscoredEpisodeError as error:
        _log_unscored(action, episode.id, error)
        raise
    except AgentEnvError:
        raise
    except Exception as error:
        logger.exception("agent_env: %s failed in episode %s", action, episode.id)
        raise ServerError(f"{action} failed on the server: {type(error).__name__}: {error}") from error


def _log_unscored(action: str, episode_id: str, error: Exception) -> None:
    """Log an episode the environment could not score with its traceback, which only this process has (the client
    gets the message, and a trainer's adapter warns once more there); a row its reset refused (an unknown task id,
    from any client) in one line, its traceback at DEBUG."""
    if not isinstance(error, UnscoredEpisodeError):
        return
    if refused_row(error):
        logger.warning("agent_env: %s of served episode %s: %s", action, episode_id, error)
        logger.debug("agent_env: where the refusal of that row was raised", exc_info=error.cause)
        return
    logger.warning("agent_env: %s of served episode %s: %s", action, episode_id, error, exc_info=error.cause)


_serving = 0
"""How many registries of this process are started and not stopped."""
_serving_lock = threading.Lock()


def _collector_passes_over_startup(starting: bool) -> None:
    """While a registry serves, the objects alive when it started (the modules, the environment's class and data:
    nearly all a server's objects) are frozen out of the cyclic garbage collector's passes (`gc.freeze`).

    A full pass visits every object. With 64 episodes calling at once, the objects of the calls in flight outlive
    the young passes and count toward the next full one, which then comes every thousand or so calls: on the desk
    it cost 80-110 us a call (about a quarter of the server's CPU), 15-25 us with these objects frozen. Reference
    counting frees frozen objects as ever; only garbage cycles among them wait, until the last registry stops and
    they are unfrozen.
    """
    global _serving
    with _serving_lock:
        _serving += 1 if starting else -1
        if starting:
            gc.freeze()
        elif _serving == 0:
            gc.unfreeze()


def _copied(row: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(row))
    return copied


def _session(episode: Episode) -> LocalSession:
    assert episode.session is not None, "an episode's session is set before anyone can use it"
    return episode.session
