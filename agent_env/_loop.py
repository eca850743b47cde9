"""One background event loop per process, for running an async tool from synchronous code."""

from __future__ import annotations

import _thread
import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = new_loop()
            threading.Thread(target=_loop.run_forever, name="agent-env-async-tools", daemon=True).start()
        return _loop


_uvloop_preferred = False


def prefer_uvloop() -> None:
    """Make the background loop uvloop's where uvloop is installed, if the loop has not started yet.

    The MCP room asks before its first server starts: its calls make the hottest hop (every synchronous call of an MCP
    tool, TRL's), it needs the `server` extra, which installs uvloop, and a thread's hop to uvloop's loop and back
    costs 44-51 us against 67-70 us on asyncio's, for a child process that answers after 0.7 ms
    (`bench/mcp_episodes.py`, `hop_cost`). Nothing else asks, so a process that uses the loop only for an LLM client
    or its own async tools imports nothing its extra does not declare; and a loop that already runs stays as it is
    (asyncio's serves MCP as well, a little slower)."""
    global _uvloop_preferred
    _uvloop_preferred = True


def new_loop() -> asyncio.AbstractEventLoop:
    """A new event loop for the background thread: uvloop's when preferred (`prefer_uvloop`) and installed,
    asyncio's otherwise."""
    if _uvloop_preferred:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to completion on the background loop and return its result, from any thread but that one.

    Every async tool of the process runs on the same loop, so resources an environment opens on it (clients,
    connections) stay usable from one call to the next.

    This is the hop every synchronous call of an async tool makes (TRL's call of an MCP tool on Python 3.11), so it
    is kept to what it needs (`Started`). Interrupted while it waits (Ctrl-C), the caller stops waiting and the
    coroutine runs on, as it would under `submit`.
    """
    started = start(coroutine)
    started.wait(None)
    return started.result()


class Started(Generic[T]):
    """A coroutine started on the background loop (`start`), for a thread that waits for it.

    The loop runs it as a task whose end releases a lock the waiting thread blocks on: the least a hop can do.
    `asyncio.run_coroutine_threadsafe` would also chain a `concurrent.futures.Future` to the task, under its
    condition variable, both ways: 14-29 us more a call, in this process's CPU and in the caller's wait
    (`bench/mcp_episodes.py`, `hop_cost`).
    """

    __slots__ = ("_done", "_loop", "_task")

    def __init__(self, loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T]) -> None:
        self._loop = loop
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._task: asyncio.Task[T] | None = None

        def begin() -> None:  # runs in the caller's context, copied by call_soon_threadsafe, as a task does
            self._task = loop.create_task(coroutine)
            self._task.add_done_callback(self._ended)

        loop.call_soon_threadsafe(begin)

    def _ended(self, _: asyncio.Task[T]) -> None:
        self._done.release()

    def wait(self, timeout: float | None) -> bool:
        """Wait until the coroutine has ended, no longer than `timeout` seconds (None: as long as it takes); whether
        it has. Interruptible (Ctrl-C)."""
        if self._done.acquire(timeout=-1 if timeout is None else timeout):
            self._done.release()  # ended stays ended: another wait returns at once
            return True
        return False

    def result(self) -> T:
        """What the coroutine returned, or raise what it raised; only once `wait` has said it ended."""
        assert self._task is not None and self._task.done(), "result() only after wait() said it ended"
        return self._task.result()

    def cancel(self) -> None:
        """Cancel the coroutine (it stops at its next `await`), without waiting for that."""
        self._loop.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:  # after `begin`, which call_soon_threadsafe ran first
        if self._task is not None:
            self._task.cancel()


def start(coroutine: Coroutine[Any, Any, T]) -> Started[T]:
    """Start `coroutine` on the background loop, from any thread but that one, for this thread to wait on."""
    loop = _background_loop()
    _refuse_on_the_loop(coroutine)
    return Started(loop, coroutine)


def submit(coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Start `coroutine` on the background loop and return its future, from any thread but that one's (where
    waiting on it would never end)."""
    loop = _background_loop()
    _refuse_on_the_loop(coroutine)
    return asyncio.run_coroutine_threadsafe(coroutine, loop)


def _refuse_on_the_loop(coroutine: Coroutine[Any, Any, Any]) -> None:
    if threading.current_thread().name == "agent-env-async-tools":
        coroutine.close()
        raise RuntimeError(
            "an async tool was called synchronously from inside another async tool; await it instead"
        )


async def on_background_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Await `coroutine` on the background loop from any event loop (directly when already on it), so that what it
    uses (clients, streams bound to that loop) works whoever awaits it."""
    loop = _background_loop()
    if asyncio.get_running_loop() is loop:
        return await coroutine
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, loop))


_held: set[asyncio.Task[Any]] = set()


def spawn(coroutine: Coroutine[Any, Any, Any]) -> None:
    """Run `coroutine` on the running loop without waiting for it, holding its task until it ends (asyncio keeps
    only a weak reference to a task, so one nobody holds may be collected before it finishes)."""
    task = asyncio.get_running_loop().create_task(coroutine)
    _held.add(task)
    task.add_done_callback(_held.discard)


def background_loop() -> asyncio.AbstractEventLoop:
    """The background loop itself (started if it is not yet), for scheduling work on it from any thread."""
    return _background_loop()


async def off_loop(function: Callable[..., T], *arguments: Any) -> T:
    """`function(*arguments)` in the running loop's default executor, off the loop; in this thread instead once the
    interpreter is exiting, when that executor takes no more work ("cannot schedule new futures after interpreter
    shutdown"), so that what must still happen then (a connection's clean-up, run by a finalizer) does, and no
    task fails at exit with a traceback. An error `function` raises is raised as it is."""
    loop = asyncio.get_running_loop()
    try:
        pending = loop.run_in_executor(None, functools.partial(function, *arguments))
    except RuntimeError:  # the executor was shut down: only submitting failed, nothing of `function` ran
        return function(*arguments)
    return await pending
