"""`agent_env._deadline`: an episode's clock (its call timeout and what is left of its budget), and running a call in
this process no longer than its timeout: a synchronous one on a worker thread (given up on, counted, never stopped),
an async one cancelled."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agent_env._deadline import (
    Deadline,
    Overran,
    abandoned_calls,
    await_bounded,
    check_limit,
    run_bounded,
    run_coroutine_bounded,
)
from agent_env.errors import CallTimeoutError, EpisodeBudgetError


def test_the_next_call_may_run_its_timeout_or_what_is_left_of_the_budget_whichever_is_shorter():
    deadline = Deadline(call_timeout=2.0, episode_budget=5.0)
    assert deadline.timeout() == 2.0 and not deadline.bounded_by_budget
    deadline.charge(2.0)
    deadline.charge(1.5)
    assert deadline.timeout() == 1.5 and deadline.bounded_by_budget
    deadline.charge(4.0)
    assert deadline.timeout() == 0.0  # spent: the next call gets no time at all
    deadline.begin()  # a new episode
    assert deadline.timeout() == 2.0
    assert Deadline(None, None).timeout() is None
    assert Deadline(None, 3.0).timeout() == 3.0 and Deadline(4.0, None).timeout() == 4.0


def test_a_call_past_its_timeout_or_the_budget_is_named_by_what_it_ran_past():
    deadline = Deadline(call_timeout=2.0, episode_budget=3.0)
    deadline.timeout()
    late = deadline.expired("tool 'hang'", whose="its", then="the episode has ended")
    assert type(late) is CallTimeoutError
    assert str(late) == "tool 'hang' did not finish within its call timeout of 2 s; the episode has ended"
    deadline.charge(2.0)
    deadline.timeout()
    spent = deadline.expired("tool 'nap'", whose="its", then="the episode has ended")
    assert type(spent) is EpisodeBudgetError and isinstance(spent, CallTimeoutError)
    assert str(spent) == (
        "tool 'nap' was still running when the episode's time budget of 3 s (what all its calls may take "
        "together) ran out; the episode has ended"
    )


@pytest.mark.parametrize("value", [0, -1, float("inf"), float("nan"), True, "5"])
def test_a_limit_that_is_no_positive_finite_number_of_seconds_is_refused(value):
    with pytest.raises(ValueError, match="call_timeout must be a positive, finite number of seconds"):
        check_limit("call_timeout", value)


def test_a_call_within_its_timeout_returns_what_it_returned_or_raises_what_it_raised():
    assert run_bounded(lambda: 42, 5.0) == 42
    with pytest.raises(ZeroDivisionError):
        run_bounded(lambda: 1 / 0, 5.0)
    where: list[str] = []
    run_bounded(lambda: where.append(threading.current_thread().name), None)
    assert where[0].startswith("agent-env-call-")  # not the caller's thread, which must be free to give up


def test_a_call_past_its_timeout_is_given_up_on_counted_while_it_runs_and_told_when_it_ends():
    release = threading.Event()
    ended: list[str] = []
    before = abandoned_calls()
    started = time.monotonic()
    with pytest.raises(Overran) as overran:
        run_bounded(release.wait, 0.2)
    assert 0.2 <= time.monotonic() - started < 1
    assert abandoned_calls() == before + 1  # a thread cannot be stopped: it is counted until it returns
    overran.value.after(lambda: ended.append(threading.current_thread().name))
    assert ended == []
    release.set()
    assert _eventually(lambda: abandoned_calls() == before)
    assert _eventually(lambda: len(ended) == 1)  # in the thread that ended it
    late: list[str] = []
    overran.value.after(lambda: late.append("now"))  # once it has ended, at once
    assert late == ["now"]


def test_a_worker_freed_by_a_call_given_up_on_takes_calls_again():
    release = threading.Event()
    with pytest.raises(Overran):
        run_bounded(release.wait, 0.05)
    release.set()
    assert _eventually(lambda: abandoned_calls() == 0)
    assert [run_bounded(lambda index=index: index, 5.0) for index in range(50)] == list(range(50))


def test_an_async_call_past_its_timeout_is_cancelled_from_sync_code():
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(Overran):
        run_coroutine_bounded(forever(), 0.2)
    assert cancelled.wait(2)  # nothing is left running
    assert _eventually(lambda: abandoned_calls() == 0)


def test_an_async_calls_own_timeout_error_is_its_own_not_an_overrun():
    async def refuses() -> None:
        raise TimeoutError("the service it asks timed out")

    with pytest.raises(TimeoutError, match="the service it asks timed out"):
        run_coroutine_bounded(refuses(), 5.0)
    with pytest.raises(TimeoutError, match="the service it asks timed out"):
        asyncio.run(await_bounded(refuses(), 5.0))


def test_an_awaited_call_past_its_timeout_is_cancelled_on_the_callers_loop():
    cancelled: list[bool] = []

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def main() -> None:
        with pytest.raises(Overran):
            await await_bounded(forever(), 0.1)
        await asyncio.sleep(0.05)

    asyncio.run(main())
    assert cancelled == [True]
    assert asyncio.run(await_bounded(asyncio.sleep(0, result="done"), 1.0)) == "done"


def _eventually(condition, timeout: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
