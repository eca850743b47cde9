"""One write per turn of the loop (`_writes.py`): what a connection writes in one turn leaves as one write, in order,
and a close sends it first while an abort drops it. Over real sockets on both parsers, `protocol_test.py`'s
pipelined, refused and timed-out requests run through it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_env.server._writes import OneWritePerTurn

pytestmark = pytest.mark.anyio


class Recording(asyncio.Transport):
    """A transport that records what reaches it."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Any] = []
        self.closing = False

    def write(self, data: Any) -> None:
        self.events.append(bytes(data))

    def close(self) -> None:
        self.closing = True
        self.events.append("close")

    def abort(self) -> None:
        self.closing = True
        self.events.append("abort")

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5555)}.get(name, default)

    def get_write_buffer_size(self) -> int:
        return 0


async def test_the_writes_of_one_turn_leave_as_one_write_in_their_order():
    inner = Recording()
    transport = OneWritePerTurn(inner, asyncio.get_running_loop())
    transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    transport.write(bytearray(b"{}"))
    assert inner.events == []  # nothing has left yet
    await asyncio.sleep(0)
    assert inner.events == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
    transport.write(b"next")
    await asyncio.sleep(0)
    assert inner.events[1:] == [b"next"]


async def test_a_bytearray_written_and_then_changed_leaves_as_it_was_written():
    inner = Recording()
    transport = OneWritePerTurn(inner, asyncio.get_running_loop())
    buffer = bytearray(b"first")
    transport.write(buffer)
    buffer[:] = b"later"
    await asyncio.sleep(0)
    assert inner.events == [b"first"]


async def test_a_close_sends_what_is_pending_first_and_an_abort_drops_it():
    inner = Recording()
    transport = OneWritePerTurn(inner, asyncio.get_running_loop())
    transport.write(b"a 400 answer")
    transport.close()
    await asyncio.sleep(0)  # the turn's end finds nothing left to send
    assert inner.events == [b"a 400 answer", "close"]

    inner = Recording()
    transport = OneWritePerTurn(inner, asyncio.get_running_loop())
    transport.write(b"never sent")
    transport.abort()
    await asyncio.sleep(0)
    assert inner.events == ["abort"]


async def test_writes_to_a_transport_that_closed_meanwhile_are_dropped():
    inner = Recording()
    transport = OneWritePerTurn(inner, asyncio.get_running_loop())
    transport.write(b"too late")
    inner.closing = True  # the peer went: the transport is closing under the wrapper
    await asyncio.sleep(0)
    assert inner.events == []
    assert transport.is_closing()


async def test_everything_else_is_the_wrapped_transports():
    inner = Recording()
    transport = OneWritePerTurn(inner, asyncio.get_running_loop())
    assert transport.get_extra_info("peername") == ("127.0.0.1", 5555)
    transport.write(b"12345")
    assert transport.get_write_buffer_size() == 5  # pending here, none yet in the transport
