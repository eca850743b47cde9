"""Deadlines of environment code: how long one call may run, how long an episode's calls may run in all, and running
a call in this process under its timeout.

A synchronous call is bounded by running it on a daemon worker thread and waiting for it no longer than its timeout;
the thread cannot be stopped, so a call given up on runs on, counted by `abandoned_calls()` until it returns. An
async call is cancelled at its timeout (it stops at its next `await`). Workers are daemons, not
`concurrent.futures`' threads, which the interpreter joins at exit: one call that never returns would keep a
trainer's process from exiting. They are shared by the whole process and kept while they have work.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from agent_env._loop import start
from agent_env.errors import CallTimeoutError, EpisodeBudgetError

T = TypeVar("T")

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds one call of an episode in this process may run (`AgentEnv.local(call_timeout=)`): well past a healthy
call, even one that asks a model (a simulated user's reply, a judge's verdict on a loaded endpoint, seconds to tens
of seconds), and short enough that a call that never returns costs a GRPO step (whose tools run one after another)
a minute, not the run."""
DEFAULT_EPISODE_BUDGET = 600.0
"""Seconds all the calls of one episode may run together (its reset, its tool calls, its reward), on every provider:
past the longest real episodes here (a τ² conversation of a hundred turns with a simulated user on a slow endpoint
takes a few minutes of calls), and a bound on an episode whose every call is slow but under its timeout."""
IDLE_WORKER_SECONDS = 30.0
"""Seconds an idle worker thread waits for another call before it leaves."""


class Deadline:
    """One episode's clock: how long its next call may run (its call timeout, or what is left of its budget, whichever
    is shorter), and how much of its budget its calls have taken. None for a limit means none.

    Only the wall-clock time of the calls is counted (`charge`): what happens between them (the model generating,
    a trainer's whole batch generating) is not the episode's environment's time.
    """

    __slots__ = ("_budget_bound", "call_timeout", "episode_budget", "spent")

    def __init__(self, call_timeout: float | None, episode_budget: float | None) -> None:
        self.call_timeout = call_timeout
        self.episode_budget = episode_budget
        self.spent = 0.0
        self._budget_bound = False

    def begin(self) -> None:
        """A new episode starts: its budget is whole again."""
        self.spent = 0.0

    def timeout(self) -> float | None:
        """Seconds the next call may run: None for no limit."""
        budget = self.episode_budget
        if budget is None:
            self._budget_bound = False
            return self.call_timeout
        left = max(budget - self.spent, 0.0)
        self._budget_bound = self.call_timeout is None or left <= self.call_timeout
        return left if self._budget_bound else self.call_timeout

    @property
    def bounded_by_budget(self) -> bool:
        """Whether the last `timeout()` was what was left of the budget (not the call timeout)."""
        return self._budget_bound

    def charge(self, seconds: float) -> None:
        """Count `seconds` of a call against the episode's budget."""
        self.spent += seconds

    def expired(self, action: str, *, whose: str, then: str) -> CallTimeoutError:
        """The error of `action`, a call that ran past the last `timeout()`: an `EpisodeBudgetError` when the budget
        was what bounded it, else a `CallTimeoutError`; `whose` names the call timeout's owner ("its", "the
        server's"), `then` says what became of the episode."""
        if self._budget_bound:
            return EpisodeBudgetError(
                f"{action} was still running when the episode's time budget of {self.episode_budget:g} s (what all "
                f"its calls may take together) ran out; {then}"
            )
        return CallTimeoutError(
            f"{action} did not finish within {whose} call timeout of {self.call_timeout:g} s; {then}"
        )

    def __repr__(self) -> str:
        return f"Deadline(call_timeout={self.call_timeout!r}, episode_budget={self.episode_budget!r}, spent={self.spent:.3f})"


def check_limit(name: str, seconds: float | None) -> None:
    """Refuse a limit that is not a positive, finite number of seconds (None: no limit)."""
    if seconds is None:
        return
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not (0 < seconds < float("inf")):
        raise ValueError(
            f"{name} must be a positive, finite number of seconds (or None for no limit), not {seconds!r}"
        )


class Overran(Exception):
    """A call ran past its timeout and was given up on; `after` runs a callback once it has really ended."""

    def __init__(self, call: _Call) -> None:
        super().__init__("the call ran past its timeout")
        self._call = call

    def after(self, callback: Callable[[], None]) -> None:
        """Run `callback` once the call given up on has ended (at once if it has): in the thread that ends it."""
        self._call.then(callback)


class _Call:
    """One call run under a timeout: whether it has ended, and what to do when one given up on ends."""

    __slots__ = ("abandoned", "callbacks", "ended")

    def __init__(self) -> None:
        self.ended = False
        self.abandoned = False
        self.callbacks: list[Callable[[], None]] = []

    def then(self, callback: Callable[[], None]) -> None:
        with _lock:
            if not self.ended:
                self.callbacks.append(callback)
                return
        callback()

    def give_up(self) -> bool:
        """Give up on the call; whether it was still running (if it had just ended, its outcome stands)."""
        global _abandoned
        with _lock:
            if self.ended:
                return False
            self.abandoned = True
            _abandoned += 1
            return True

    def end(self, *, offload: bool = False) -> None:
        """The call has ended: run what waits for that, here or (`offload`, on an event loop's thread, where a
        callback must not block) on a thread of its own."""
        global _abandoned
        with _lock:
            self.ended = True
            callbacks, self.callbacks = self.callbacks, []
            if self.abandoned:
                _abandoned -= 1
        for callback in callbacks:
            if offload:
                threading.Thread(target=callback, name="agent-env-late-call", daemon=True).start()
            else:
                callback()


_lock = threading.Lock()
_abandoned = 0


def abandoned_calls() -> int:
    """How many calls of this process ran past their timeout and are still running (a synchronous one keeps its
    thread until it returns, and may never return; an async one until its cancellation lands)."""
    with _lock:
        return _abandoned


class _Job:
    __slots__ = ("call", "done", "error", "function", "result")

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function: Callable[[], Any] | None = function
        self.call = _Call()
        self.done = threading.Lock()
        self.done.acquire()
        self.result: Any = None
        self.error: BaseException | None = None


class _Worker:
    """One daemon thread, woken by releasing `wake` once `job` is set."""

    __slots__ = ("job", "wake")

    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()
        self.job: _Job | None = None


_idle: list[_Worker] = []
_started = 0


def run_bounded(
    function: Callable[[], T],
    timeout: float | None,
    interrupted: Callable[[Overran], None] | None = None,
) -> T:
    """`function()` on a worker thread, waited for no longer than `timeout` seconds (None: as long as it takes).

    Interrupted while it waits (Ctrl-C reaches the waiting thread, never the worker), the caller stops waiting and
    the call runs on, given up on as if out of time: `interrupted` hears of it first (to let go of what the call
    will leave behind once it ends), then the interruption is raised.

    Raises:
        Overran: It ran longer; it runs on (a thread cannot be stopped), counted by `abandoned_calls()`.
        Whatever `function` raised.
    """
    job = _Job(function)
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _start_worker()
    worker.job = job
    worker.wake.release()
    try:
        finished = job.done.acquire(timeout=-1 if timeout is None else timeout)
    except BaseException:
        if job.call.give_up() and interrupted is not None:
            interrupted(Overran(job.call))
        raise
    if not finished:
        if job.call.give_up():
            raise Overran(job.call)
        job.done.acquire()  # it ended just as the wait did: its outcome stands
    error, result = job.error, job.result
    del job
    if error is not None:
        try:
            raise error
        finally:
            del error
    return result


def _start_worker() -> _Worker:
    global _started
    worker = _Worker()
    with _lock:
        _started += 1
        name = f"agent-env-call-{_started}"
    threading.Thread(target=_work, args=(worker,), name=name, daemon=True).start()
    return worker


def _work(worker: _Worker) -> None:
    while True:
        if not worker.wake.acquire(timeout=IDLE_WORKER_SECONDS):
            with _lock:
                if worker in _idle:  # nobody took it meanwhile: leave
                    _idle.remove(worker)
                    return
            worker.wake.acquire()  # taken just as it timed out: its job is coming
        job, worker.job = worker.job, None
        assert job is not None and job.function is not None, "a worker is woken with a job"
        function, job.function = job.function, None
        try:
            job.result = function()
        except BaseException as error:
            job.error = error
        del function
        job.call.end()
        with _lock:  # idle again before the caller hears, so that its next call finds this worker
            _idle.append(worker)
        job.done.release()
        del job


def run_coroutine_bounded(coroutine: Coroutine[Any, Any, T], timeout: float | None) -> T:
    """A coroutine run to its end on the background loop from synchronous code, cancelled past `timeout` seconds.

    Raises:
        Overran: It ran longer and was cancelled (counted by `abandoned_calls()` until the cancellation lands).
        Whatever the coroutine raised.
    """
    call = _Call()
    started = start(_tracked(coroutine, call))
    if not started.wait(timeout):
        if call.give_up():
            started.cancel()
            raise Overran(call)
        started.wait(None)  # it ended just as the wait did: its outcome stands
    return started.result()


async def await_bounded(call: Awaitable[T], timeout: float | None) -> T:
    """`call` awaited on the running loop, cancelled past `timeout` seconds (None: as long as it takes).

    It runs as a task of its own, so that the caller stops waiting at the timeout even if the call is slow to take
    its cancellation (it is counted by `abandoned_calls()` until it does). The caller waits on the task's end or the
    timer, whichever comes first, with one callback on each: `asyncio.wait` would do the same with a set, a waiter of
    its own and a callback per task, about 15 us more a call (server-memory's `read_graph`, awaited, 2026-12-05).

    Raises:
        Overran: It ran longer and was cancelled.
        Whatever it raised.
    """
    if timeout is None:
        return await call
    loop = asyncio.get_running_loop()
    tracker = _Call()
    task = loop.create_task(_tracked(call, tracker))
    woken = loop.create_future()

    def wake(_: object = None) -> None:
        if not woken.done():
            woken.set_result(None)

    task.add_done_callback(wake)
    timer = loop.call_later(timeout, wake)
    try:
        await woken
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        timer.cancel()
        task.remove_done_callback(wake)
    if not task.done() and tracker.give_up():
        task.cancel()
        raise Overran(tracker)
    return await task


async def _tracked(call: Awaitable[T], tracker: _Call) -> T:
    try:
        return await call
    finally:
        tracker.end(offload=True)


__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_EPISODE_BUDGET",
    "Deadline",
    "Overran",
    "abandoned_calls",
    "await_bounded",
    "check_limit",
    "run_bounded",
    "run_coroutine_bounded",
]
