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


async def test_jobs_that_block_run_side_by_side_up_to_the_pool_size():
    pool = WorkerPool(4)
    release = threading.Event()
    try:
        started = threading.Barrier(4, timeout=5)  # each of four blocking jobs waits for the other three

        def blocks() -> str:
            started.wait()
            release.wait(5)
            return threading.current_thread().name

        running = [asyncio.ensure_future(pool.run(blocks, 5)) for _ in range(4)]
        queued = asyncio.ensure_future(pool.run(lambda: "after one of them", 5))
        await asyncio.sleep(0.05)
        assert not queued.done()  # all four workers are busy: it waits in the backlog
        release.set()
        names = await asyncio.gather(*running)
        assert len(set(names)) == 4
        assert await queued == "after one of them"
    finally:
        release.set()
        pool.shutdown()


async def test_a_job_wakes_one_idle_worker_not_all_of_them():
    pool = WorkerPool(8)
    try:
        # Every worker has started and gone idle: one that starts late (its thread slow to get a core on a loaded
        # machine) goes idle last, and rightly takes the next job.
        for _ in range(500):
            with pool._lock:
                if len(pool._idle) == 8:
                    break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the pool's 8 workers did not all go idle within 5 s")
        await pool.run(lambda: None, 5)
        ran_in: set[str] = set()
        for _ in range(50):  # one call after another: the worker that went idle last takes each
            await pool.run(lambda: ran_in.add(threading.current_thread().name), 5)
        assert len(ran_in) <= 2
    finally:
        pool.shutdown()


async def test_a_backlog_longer_than_the_pool_is_worked_off_in_order():
    pool = WorkerPool(2)
    try:
        done: list[int] = []
        lock = threading.Lock()

        def job(index: int) -> int:
            with lock:
                done.append(index)
            return index

        results = await asyncio.gather(*(pool.run(lambda i=i: job(i), 5) for i in range(200)))
        assert results == list(range(200))
        assert sorted(done) == list(range(200))
    finally:
        pool.shutdown()


async def test_shutdown_stops_idle_workers_and_busy_ones_once_their_job_ends():
    pool = WorkerPool(3, name="agent-env-shutdown-test")
    release = threading.Event()
    try:
        busy = asyncio.ensure_future(pool.run(release.wait, 5))
        await asyncio.sleep(0.02)
        pool.shutdown()
        release.set()
        assert await busy is True
        for _ in range(100):
            if not [t for t in threading.enumerate() if t.name.startswith("agent-env-shutdown-test")]:
                break
            await asyncio.sleep(0.01)
        assert not [t for t in threading.enumerate() if t.name.startswith("agent-env-shutdown-test")]
    finally:
        release.set()
