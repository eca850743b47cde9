"""An ASGI app under granian (PyPI's Rust HTTP server), as the benchmarks and the tests run it beside uvicorn: one
process, the app on a uvloop event loop in it, HTTP/1.1 parsed by granian's Rust runtime (hyper) on threads of its own.

Set as `agent-env serve` sets uvicorn where granian has a setting for it: 10 s for a request's headers (the
`header_timeout`), 20 s keep-alive being granian's own (it keeps connections until the client closes them), its
request-header buffer capped near `serve`'s 16 KiB, a backlog of 2,048, and no access log.
"""

from __future__ import annotations

from typing import Any

HEADER_BUFFER = 16 * 1024 + 8192
"""granian's read buffer for a request's line and headers, bytes: `serve`'s 16 KiB of headers, and hyper's
smallest buffer on top (it refuses a buffer smaller than 8,192)."""


def granian_server(app: Any, port: int, *, header_timeout: float = 10.0) -> Any:
    """granian's embedded server for `app` on 127.0.0.1:`port` (`await server.serve()` runs it)."""
    from granian.constants import HTTPModes, Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LogLevels
    from granian.server.embed import Server

    return Server(
        app,
        address="127.0.0.1",
        port=port,
        interface=Interfaces.ASGI,
        http=HTTPModes.http1,
        backlog=2048,
        http1_settings=HTTP1Settings(
            header_read_timeout=int(header_timeout * 1000), max_buffer_size=HEADER_BUFFER
        ),
        log_level=LogLevels.warning,
        log_access=False,
    )


def run_granian(app: Any, port: int, *, header_timeout: float = 10.0) -> None:
    """Serve `app` on 127.0.0.1:`port` under granian until the process is stopped."""
    import uvloop

    uvloop.run(granian_server(app, port, header_timeout=header_timeout).serve())
