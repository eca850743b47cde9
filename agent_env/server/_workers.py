"""Daemon worker threads that run environment code off the event loop; a worker stuck past its timeout is replaced.

Not `concurrent.futures.ThreadPoolExecutor`: its threads are joined when the interpreter exits, so one tool that
never returns would keep a stopped server from exiting. These threads are daemons, and a worker whose job timed
out is written off: a fresh one takes its place, and the stuck one leaves the pool if it ever finishes.

A job is handed to one idle worker, the one that went idle last, by releasing a lock only that worker sleeps on;
with no worker idle it waits in a backlog that each worker drains before it sleeps again. All idle workers waiting
on one shared queue (`queue.SimpleQueue`) woke two threads for every job, and each woken thread takes the GIL in
turn: the hop cost about twice the thread switches it needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_QUEUED, _RUNNING, _DONE, _DROPPED = range(4)


class JobTimeoutError(Exception):
    """A job ran, or waited for a worker, longer than its timeout; its result will be ignored."""


class _Job(Generic[T]):
    __slots__ = ("function", "future", "loop", "state")

    def __init__(self, function: Callable[[], T], loop: asyncio.AbstractEventLoop) -> None:
        self.function: Callable[[], T] | None = function
        self.loop = loop
        self.future: asyncio.Future[T] = loop.create_future()
        self.state = _QUEUED


class _Worker:
    """One worker thread's bell: the lock it sleeps on while idle, released to wake it."""

    __slots__ = ("wake",)

    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()


class WorkerPool:
    """`size` daemon threads running jobs, each handed to one idle worker; `run` awaits a job with a timeout."""

    def __init__(self, size: int, name: str = "agent-env-worker") -> None:
        self._lock = threading.Lock()
        """Guards the idle workers, the backlog, the jobs' states and the counts."""
        self._idle: list[_Worker] = []
        self._backlog: deque[_Job[Any]] = deque()
        self._name = name
        self._surplus = 0
        self._started = 0
        self._stopping = False
        self._waking = False
        """Whether a worker has been woken and has not yet looked at the backlog."""
        self._threads: set[threading.Thread] = set()
        with self._lock:
            for _ in range(size):
                self._start_worker_locked()

    async def run(self, function: Callable[[], T], timeout: float | None) -> T:
        """Run `function` in a worker and return its result.

        Raises:
            JobTimeoutError: It ran (or waited for a worker) longer than `timeout`.
            Whatever `function` raised (a `TimeoutError` of its own included).
        """
        loop = asyncio.get_running_loop()
        job = _Job(function, loop)
        self._submit(job)
        # A timer on the job's own future, not `asyncio.wait_for`, whose extra future and task cost as much again
        # as the rest of the hop.
        timer = loop.call_later(timeout, _expire, job.future) if timeout is not None else None
        try:
            return await job.future
        except BaseException:
            self._drop(job)
            raise
        finally:
            if timer is not None:
                timer.cancel()

    def stuck(self) -> int:
        """How many workers are still running a job that was given up on."""
        with self._lock:
            return self._surplus

    def shutdown(self) -> None:
        """Stop every idle worker, and every busy one once its job ends; a stuck one is a daemon and dies with the
        process."""
        with self._lock:
            self._stopping = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.wake.release()  # it finds the pool stopping, and leaves

    def _submit(self, job: _Job[Any]) -> None:
        with self._lock:
            self._backlog.append(job)
            worker = self._wake_locked()
        if worker is not None:
            worker.wake.release()

    def _wake_locked(self) -> _Worker | None:
        """The idle worker to wake for the backlog, if one should be: the one that went idle last, unless one woken
        already has not yet taken its job (it wakes the next, if more wait then; and a busy worker takes the next job
        as it finishes, so that waking each job's own worker would cost thread switches for nothing)."""
        if self._waking or not self._idle or not self._backlog:
            return None
        self._waking = True
        return self._idle.pop()

    def _drop(self, job: _Job[Any]) -> None:
        with self._lock:
            if job.state == _QUEUED:
                job.state = _DROPPED
            elif job.state == _RUNNING:
                job.state = _DROPPED
                self._surplus += 1
                self._start_worker_locked()

    def _start_worker_locked(self) -> None:
        self._started += 1
        thread = threading.Thread(
            target=self._work, args=(_Worker(),), name=f"{self._name}-{self._started}", daemon=True
        )
        self._threads.add(thread)
        thread.start()

    def _work(self, worker: _Worker) -> None:
        job, idle = self._next(worker, woken=False)
        while job is not None or idle:
            if job is None:
                worker.wake.acquire()  # sleeps until the backlog has a job, or `shutdown` stops it
                job, idle = self._next(worker, woken=True)
                continue
            result, error, leave, dropped = self._run(job)
            done = job
            # The next job (or idle) before the outcome goes to the loop: the loop, woken by it, then finds the GIL
            # free as soon as this thread sleeps, rather than waiting for it.
            job, idle = (None, False) if leave else self._next(worker, woken=False)
            if not dropped:
                _settle_threadsafe(done, result, error)
            del done, result, error  # an idle worker keeps nothing of its last job
        with self._lock:
            self._threads.discard(threading.current_thread())

    def _next(self, worker: _Worker, *, woken: bool) -> tuple[_Job[Any] | None, bool]:
        """The next job from the backlog, or none and whether the worker is now idle (else it must leave: the pool
        is stopping). A worker just woken wakes the next idle one when more jobs wait."""
        other = None
        with self._lock:
            if woken:
                self._waking = False
            if self._stopping:
                return None, False
            if not self._backlog:
                self._idle.append(worker)
                return None, True
            job = self._backlog.popleft()
            if woken:
                other = self._wake_locked()
        if other is not None:
            other.wake.release()
        return job, False

    def _run(self, job: _Job[Any]) -> tuple[Any, BaseException | None, bool, bool]:
        """Run one job: its result, its error, whether this worker was written off and must leave, and whether the
        job was dropped (its outcome is then thrown away, and a job dropped before it ran does not run)."""
        with self._lock:
            if job.state == _DROPPED:
                return None, None, False, True
            job.state = _RUNNING
        function, job.function = job.function, None
        assert function is not None, "a job runs once"
        result: Any = None
        error: BaseException | None = None
        try:
            result = function()
        except BaseException as raised:
            error = raised
        with self._lock:
            dropped = job.state == _DROPPED
            job.state = _DONE
            leave = dropped and self._surplus > 0
            if leave:
                self._surplus -= 1
        # An error's traceback keeps this frame, and so whatever it still names: name nothing of the job.
        del job, function
        return result, error, leave, dropped


def _settle_threadsafe(job: _Job[Any], result: Any, error: BaseException | None) -> None:
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
        job.loop.call_soon_threadsafe(_settle, job.future, result, error)


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(JobTimeoutError())


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
