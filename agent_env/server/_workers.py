"""Daemon worker threads that run environment code off the event loop; a worker stuck past its timeout is replaced.

Not `concurrent.futures.ThreadPoolExecutor`: its threads are joined when the interpreter exits, so one tool that
never returns would keep a stopped server from exiting. These threads are daemons, and a worker whose job timed
out is written off: a fresh one takes its place, and the stuck one leaves the pool if it ever finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
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


class WorkerPool:
    """`size` daemon threads taking jobs from one queue; `run` awaits a job with a timeout."""

    def __init__(self, size: int, name: str = "agent-env-worker") -> None:
        self._jobs: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._name = name
        self._surplus = 0
        self._started = 0
        self._threads: set[threading.Thread] = set()
        for _ in range(size):
            self._start_worker()

    async def run(self, function: Callable[[], T], timeout: float | None) -> T:
        """Run `function` in a worker and return its result.

        Raises:
            JobTimeoutError: It ran (or waited for a worker) longer than `timeout`.
            Whatever `function` raised (a `TimeoutError` of its own included).
        """
        loop = asyncio.get_running_loop()
        job = _Job(function, loop)
        self._jobs.put(job)
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
        """Stop every idle worker; a stuck one is a daemon and dies with the process."""
        with self._lock:
            count = len(self._threads)
        for _ in range(count):
            self._jobs.put(None)

    def _drop(self, job: _Job[Any]) -> None:
        with self._lock:
            if job.state == _QUEUED:
                job.state = _DROPPED
            elif job.state == _RUNNING:
                job.state = _DROPPED
                self._surplus += 1
                self._start_worker_locked()

    def _start_worker(self) -> None:
        with self._lock:
            self._start_worker_locked()

    def _start_worker_locked(self) -> None:
        self._started += 1
        thread = threading.Thread(target=self._work, name=f"{self._name}-{self._started}", daemon=True)
        self._threads.add(thread)
        thread.start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                break
            leave = self._run(job)
            del job  # an idle worker keeps nothing of its last job: its arguments, result and error can go
            if leave:
                break
        with self._lock:
            self._threads.discard(threading.current_thread())

    def _run(self, job: _Job[Any]) -> bool:
        """Run one job and hand its outcome to the loop; True if this worker was written off and must leave."""
        with self._lock:
            if job.state == _DROPPED:
                return False
            job.state = _RUNNING
        function, job.function = job.function, None
        assert function is not None, "a job runs once"
        try:
            outcome: tuple[Any, BaseException | None] = (function(), None)
        except BaseException as error:
            outcome = (None, error)
        with self._lock:
            dropped = job.state == _DROPPED
            job.state = _DONE
            leave = dropped and self._surplus > 0
            if leave:
                self._surplus -= 1
        if not dropped:
            _settle_threadsafe(job, *outcome)
        # An error's traceback keeps this frame, and so whatever it still names: name nothing of the job.
        del job, function, outcome
        return leave


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
