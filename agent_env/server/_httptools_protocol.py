"""uvicorn's httptools protocol, held to what `_protocol.HeaderDeadlineProtocol` holds its h11 protocol to.

httptools parses in C (llhttp), which makes a served call cheaper than h11 does, but uvicorn's protocol on it has
neither of the two limits its h11 protocol leans on or that agent_env adds there:

- **A deadline for request headers.** As with h11, a connection whose request line and headers are not all in
  within `header_timeout` seconds of the connection being made, or of the request's first byte, is closed.
- **A cap on their size.** h11 refuses a request whose line and headers pass 16 KiB before they end (its
  `max_incomplete_event_size`; uvicorn answers 400 and closes the connection); llhttp has no such cap, and uvicorn
  keeps every header it is given, so one connection could fill the server's memory with headers. The same
  16 KiB is held here, with the same answer.

And at shutdown, as with h11, a request whose body is still arriving is answered 503 at once rather than holding up
the shutdown (nothing of it has run).
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from agent_env.server._protocol import HEADER_BYTES, shutting_down_answer
from agent_env.server._writes import OneWritePerTurn


class HttpToolsDeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline and a size cap for request headers, answering 503 at shutdown to
    a request whose body is still arriving."""

    header_timeout: float = 10.0
    parser_name = "httptools"
    _deadline: asyncio.TimerHandle | None = None
    _awaiting_headers = True
    """Whether the next bytes are a request's line and headers (not a body)."""
    _begun = False
    """Whether some of a request's line and headers have arrived, but not all."""
    _header_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(
            OneWritePerTurn(transport, self.loop)
        )  # a response's head and body: one write
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._awaiting_headers:  # these bytes start (or go on with) a request's headers
            self._arm()
            self._header_bytes += len(data)
        super().data_received(data)
        if self._awaiting_headers and self._begun:  # a request's headers are still arriving
            self._arm()
            if self._header_bytes > HEADER_BYTES and not self.transport.is_closing():
                self.logger.warning("Invalid HTTP request received.")
                self.send_400_response("Invalid HTTP request received.")

    def on_message_begin(self) -> None:
        self._begun = True
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._awaiting_headers = self._begun = False
        self._header_bytes = 0
        self._disarm()  # the headers are in: the app (and the body's timeout) takes over
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._awaiting_headers = True  # the next bytes start the next request

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        cycle = self.cycle
        if cycle is None or cycle.response_started or self._awaiting_headers or not cycle.more_body:
            super().shutdown()  # idle: closed now; a request that has run (or is running): its graceful time
            return
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
        if self._awaiting_headers and not self.transport.is_closing():
            self.logger.info(
                "agent_env: closed a connection whose request headers took over %g s", self.header_timeout
            )
            self.transport.close()
