"""A connection pool for many threads: a request holds a connection of its own from the moment it is sent until its
answer is read, so no thread ever closes a connection another thread is using.

Why not httpx's own pool: httpcore 1.0's pool decides under its lock which connections to close (every idle one
once it holds more than `max_keepalive_connections`, and every one past its keep-alive expiry), but closes them
after letting go of the lock. A connection it has just handed to another thread's request is still idle in that
gap; when that thread starts its request before the close lands, the close cuts its socket mid-request and the
request fails with `ReadError: [Errno 9] Bad file descriptor`. With a few hundred threads sharing one client (TRL's
rollout threads sharing one `AgentEnv.connect`), it lost 7 of 1,024 desk episodes in one process, and 770 of 1,024
across four. That pool also closes a connection after nearly every request once it holds more than 20 (so each
call paid a new TCP connection), and matches every queued request against every connection whenever a request
starts or ends, which costs the square of the threads waiting.

Here each connection is a slot: an `httpx.HTTPTransport` limited to one connection, used by one thread at a time,
which reconnects by itself when its connection has expired or broken. A request takes the slot used last (its
connection is the likeliest to be open), or a new one while there are fewer than `max_connections`, or waits its
turn: a slot given back goes straight to the request that has waited longest.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator

import httpx


class _Waiter:
    """A request waiting for a slot; a slot given back is handed to it directly."""

    __slots__ = ("event", "slot")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.slot: httpx.HTTPTransport | None = None


class ConnectionPool(httpx.BaseTransport):
    """An httpx transport for many threads: at most `max_connections` connections, each used by one request at a
    time; requests past that wait, first come first served, within their pool timeout.

    Args:
        max_connections: The most connections open at once.
        keepalive_expiry: Seconds an idle connection is kept for reuse; an older one is closed and replaced when
            its slot is next used.
    """

    def __init__(self, max_connections: int, keepalive_expiry: float) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections!r}")
        self.max_connections = max_connections
        self._limits = httpx.Limits(
            max_connections=1, max_keepalive_connections=1, keepalive_expiry=keepalive_expiry
        )
        self._lock = threading.Lock()
        self._idle: list[httpx.HTTPTransport] = []
        self._waiting: deque[_Waiter] = deque()
        self._made = 0
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        slot = self._take(request.extensions.get("timeout", {}).get("pool"))
        try:
            response = slot.handle_request(request)
        except BaseException:
            self._give_back(slot)
            raise
        assert isinstance(response.stream, httpx.SyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_GivenBackOnClose(response.stream, lambda: self._give_back(slot)),
            extensions=response.extensions,
        )

    def connections(self) -> int:
        """How many slots (connections, open or to be reopened) this pool has made."""
        with self._lock:
            return self._made

    def close(self) -> None:
        """Close the idle connections now, and each one in use when its request is done (or hand it to a request
        already waiting for one)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for slot in idle:
            slot.close()

    def _take(self, timeout: float | None) -> httpx.HTTPTransport:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            if self._made < self.max_connections:
                self._made += 1
                return httpx.HTTPTransport(limits=self._limits)
            waiter = _Waiter()
            self._waiting.append(waiter)
        waiter.event.wait(timeout)
        with self._lock:
            if waiter.slot is None:
                self._waiting.remove(waiter)
                raise httpx.PoolTimeout(
                    f"none of the {self.max_connections} connections this client may open came free within "
                    f"{timeout or 0:g} s"
                )
            return waiter.slot

    def _give_back(self, slot: httpx.HTTPTransport) -> None:
        with self._lock:
            if self._waiting:
                waiter = self._waiting.popleft()
                waiter.slot = slot
                waiter.event.set()
                return
            if not self._closed:
                self._idle.append(slot)
                return
            self._made -= 1
        slot.close()


class _GivenBackOnClose(httpx.SyncByteStream):
    """A response body that gives its connection back once it is closed (httpx closes it once it has read it)."""

    def __init__(self, stream: httpx.SyncByteStream, give_back: Callable[[], None]) -> None:
        self._stream = stream
        self._give_back: Callable[[], None] | None = give_back

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            give_back, self._give_back = self._give_back, None
            if give_back is not None:
                give_back()
