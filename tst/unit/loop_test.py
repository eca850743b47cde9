"""The background loop and the hop to it (`agent_env._loop`): what a synchronous call of an async tool rests on."""

from __future__ import annotations

import asyncio
import contextvars
import importlib.util
import threading

import pytest

from agent_env._loop import on_background_loop, run_sync, start, submit

caller = contextvars.ContextVar("caller", default="unset")


class Refused(Exception):
    pass


async def answer(value: int) -> int:
    await asyncio.sleep(0)
    return value * 2


async def refuse() -> None:
    await asyncio.sleep(0)
    raise Refused("no")


async def read_caller() -> str:
    return caller.get()


def test_run_sync_returns_the_coroutines_result_and_raises_its_error_as_it_is():
    assert run_sync(answer(21)) == 42
    with pytest.raises(Refused, match="no") as raised:
        run_sync(refuse())
    assert raised.traceback[-1].name == "refuse"  # the coroutine's own frame, not a wrapper's


def test_run_sync_runs_the_coroutine_in_the_callers_context():
    token = caller.set("this thread")
    try:
        assert run_sync(read_caller()) == "this thread"
    finally:
        caller.reset(token)


def test_many_threads_hop_at_once_and_each_gets_its_own_answers():
    wrong: list[tuple[int, int]] = []

    def calls(offset: int) -> None:
        for value in range(offset, offset + 200):
            if (got := run_sync(answer(value))) != value * 2:
                wrong.append((value, got))

    threads = [threading.Thread(target=calls, args=(index * 1000,)) for index in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_a_started_coroutine_is_waited_for_within_a_timeout_and_cancelled_without_waiting():
    # run_coroutine_bounded's way: wait no longer than the call's timeout, then cancel and go on at once.
    entered, cancelled = threading.Event(), threading.Event()

    async def forever() -> None:
        entered.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    started = start(forever())
    assert not started.wait(0.05) and entered.wait(5)
    started.cancel()
    assert cancelled.wait(5) and started.wait(5)
    with pytest.raises(asyncio.CancelledError):
        started.result()
    quick = start(answer(5))
    assert quick.wait(5) and quick.wait(0) and quick.result() == 10  # ended stays ended


def test_a_synchronous_call_from_an_async_tool_on_the_loop_is_refused_naming_the_fix():
    async def nested() -> None:
        run_sync(answer(1))

    with pytest.raises(RuntimeError, match="await it instead"):
        run_sync(nested())
    assert submit(answer(2)).result() == 4  # from any other thread both ways hop
    assert asyncio.run(on_background_loop(answer(3))) == 6  # and another loop awaits it there


def test_the_loop_is_uvloops_once_preferred_where_uvloop_is_installed_and_asyncios_otherwise(monkeypatch):
    import agent_env._loop as loops

    monkeypatch.setattr(loops, "_uvloop_preferred", False)
    plain = loops.new_loop()
    assert type(plain).__module__.startswith("asyncio")  # an LLM client's or a user's async tools: no uvloop
    plain.close()
    loops.prefer_uvloop()  # as the MCP room does before its first server starts
    preferred = loops.new_loop()
    installed = importlib.util.find_spec("uvloop") is not None
    assert type(preferred).__module__.startswith("uvloop" if installed else "asyncio")
    preferred.close()
