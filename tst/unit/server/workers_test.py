"""The worker pool (`_workers.py`): jobs run off the loop, a stuck worker is replaced, and nothing joins it."""

from __future__ import annotations

import asyncio
import threading

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
