"""The worker pool (`_workers.py`): jobs run off the loop, a stuck worker is replaced, and nothing joins it."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref

import pytest

from agent_env.server._workers import JobTimeoutError, WorkerPool

pytestmark = pytest.mark.anyio


async def test_jobs_run_in_worker_threads_and_return_or_raise():
    pool = WorkerPool(2)
    try:
        assert await pool.run(threading.current_thread, None) is not threading.current_thread()

        def fail() -> None:
            raise TimeoutError("the tool's own timeout")

        with pytest.raises(TimeoutError, match="the tool's own timeout"):
            await pool.run(fail, 5)
    finally:
        pool.shutdown()


async def test_a_stuck_worker_is_replaced_and_leaves_when_it_finishes():
    pool = WorkerPool(1)
    release = threading.Event()
    try:
        with pytest.raises(JobTimeoutError):
            await pool.run(release.wait, 0.05)
        assert pool.stuck() == 1
        assert await pool.run(lambda: "still serving", 1) == "still serving"
        release.set()
        for _ in range(100):
            if pool.stuck() == 0:
                break
            await asyncio.sleep(0.01)
        assert pool.stuck() == 0
    finally:
        release.set()
        pool.shutdown()


async def test_a_job_that_timed_out_waiting_for_a_worker_never_runs():
    pool = WorkerPool(1)
    release = threading.Event()
    ran: list[str] = []
    try:
        busy = asyncio.ensure_future(pool.run(release.wait, 5))
        await asyncio.sleep(0.02)
        with pytest.raises(JobTimeoutError):
            await pool.run(lambda: ran.append("late"), 0.05)
        release.set()
        await busy
        assert await pool.run(lambda: "next", 1) == "next"
        assert ran == []
        assert pool.stuck() == 0
    finally:
        release.set()
        pool.shutdown()


def test_workers_are_daemons_so_a_stuck_one_never_holds_up_exit():
    pool = WorkerPool(3)
    try:
        workers = [thread for thread in threading.enumerate() if thread.name.startswith("agent-env-worker")]
        assert workers and all(thread.daemon for thread in workers)
    finally:
        pool.shutdown()


class Payload:
    """Stands for a job's big arguments and results (a parsed 4 MiB body); a weak reference tells when it is freed."""


@pytest.mark.parametrize("outcome", ["returns", "raises"])
async def test_an_idle_worker_holds_nothing_of_the_jobs_it_ran(outcome):
    pool = WorkerPool(2)
    try:
        arguments, result = Payload(), Payload()
        freed = [weakref.ref(arguments), weakref.ref(result)]

        def job(given: Payload = arguments, answer: Payload = result) -> Payload:
            if outcome == "raises":
                raise ValueError(given)  # an error that quotes its arguments, as tool errors do
            return answer

        if outcome == "raises":
            with pytest.raises(ValueError):
                await pool.run(job, 5)
        else:
            assert await pool.run(job, 5) is result
        del job, arguments, result
        for _ in range(100):  # the worker lets go once it has handed the outcome over
            gc.collect()
            if all(ref() is None for ref in freed):
                break
            await asyncio.sleep(0.01)
        assert [ref() for ref in freed] == [None, None]
    finally:
        pool.shutdown()
