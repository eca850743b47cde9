"""uvicorn's protocols, mended where a hostile or unlucky client would get past them.

HTTP/1.1 is parsed by httptools where it is installed (in C: a served call costs less) and by h11 otherwise; both
are held to the same limits (`_serve.with_header_timeout` chooses; `_httptools_protocol.py` holds httptools to
them).

HTTP/1.1 gets a deadline for request headers, which uvicorn itself does not have: uvicorn closes a keep-alive
connection that sends nothing, but a connection that sends its request line and headers a byte at a time (or opens
and sends nothing at all) is held for ever, and enough of them use up the server's sockets. Bodies are timed by the
request guard (`Limits.body_timeout`); headers arrive before any ASGI app runs, so they are timed here.

At shutdown uvicorn gives requests in flight its graceful time, then cancels them; a request whose body is still
arriving has not run yet, but it held the shutdown that long and then logged a `CancelledError` traceback. It is
answered 503 at once instead (the client sends it again once the server is back), so a slow body never holds up
a shutdown.

WebSocket handshakes the guard refuses (401, 403, 421) are answered with a denial response; uvicorn's sans-I/O
websockets protocol (0.35 and later) sends it but then logs "ASGI callable returned without completing handshake."
at ERROR for every one, so anyone could fill the log with ERROR lines. `websocket_protocol` gives uvicorn that
protocol with the denial counted as the end of the handshake, as its wsproto protocol already counts it.
"""

from __future__ import annotations

import asyncio
import json
from functools import cache
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from agent_env.server._writes import OneWritePerTurn
from agent_env.server.errors import ServerUnavailableError

SHUTTING_DOWN = (
    "the server is shutting down: its request body had not all arrived, so nothing of it ran; send it again"
)
"""The message of the 503 a request whose body is still arriving gets at shutdown."""

HEADER_BYTES = 16 * 1024
"""The most bytes a request's line and headers may take: h11's own limit (its `max_incomplete_event_size`), which
`_httptools_protocol` holds httptools to as well. Past it, 400 and the connection is closed."""


def shutting_down_answer() -> bytes:
    """The whole 503 response a request whose body is still arriving gets at shutdown, closing the connection."""
    error = {"error": {"code": ServerUnavailableError.code, "message": SHUTTING_DOWN}}
    body = json.dumps(error, separators=(",", ":")).encode()
    head = (
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
    )
    return head + body


class HeaderDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers are not all in within `header_timeout`
    seconds of the connection being made or of the request's first byte, and answering 503 at shutdown to a
    request whose body is still arriving."""

    header_timeout: float = 10.0
    parser_name = "h11"
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(
            OneWritePerTurn(transport, self.loop)
        )  # a response's head and body: one write
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:  # these bytes start (or go on with) a request's headers
            self._arm()
        super().data_received(data)
        if (
            self.conn.their_state is not h11.IDLE
        ):  # the headers are in: the app (and the body's timeout) takes over
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        cycle = self.cycle
        if cycle is None or cycle.response_started or self.conn.their_state is not h11.SEND_BODY:
            super().shutdown()  # idle: closed now; a request that has run (or is running): its graceful time
            return
        self.conn.send(h11.Response(status_code=503, headers=[(b"connection", b"close")]))  # h11's states
        self.transport.write(shutting_down_answer())
        cycle.response_started = cycle.response_complete = True
        cycle.disconnected = True  # the app reads http.disconnect, and runs nothing
        cycle.message_event.set()
        self.logger.info("agent_env: answered 503 to a request whose body was still arriving at shutdown")
        self.transport.close()

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_too_slow(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.logger.info(
                "agent_env: closed a connection whose request headers took over %g s", self.header_timeout
            )
            self.transport.close()


@cache
def websocket_protocol() -> type[asyncio.Protocol] | str:
    """The WebSocket protocol to give uvicorn (`ws=`): its own choice ("auto"), mended where that is the sans-I/O
    websockets protocol, whose denial responses end the handshake without an ERROR line."""
    from uvicorn.protocols.websockets.auto import AutoWebSocketsProtocol

    try:
        from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
    except ImportError:  # uvicorn < 0.35: its websockets protocol ends a denied handshake itself
        return "auto"
    if AutoWebSocketsProtocol is not WebSocketsSansIOProtocol:
        return "auto"

    async def send(self: Any, message: Any) -> None:
        await WebSocketsSansIOProtocol.send(self, message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            # the denial is sent and the connection closed: the handshake is over
            self.handshake_complete = True

    return type("DenialEndsHandshakeProtocol", (WebSocketsSansIOProtocol,), {"send": send})
