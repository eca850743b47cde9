"""Run an ASGI app under uvicorn in a thread on a free loopback port, for the tests that need a real socket."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from agent_env.server._serve import uvicorn_options
from agent_env.server.limits import DEFAULT_HEADER_TIMEOUT


@contextlib.contextmanager
def running(
    app: Any,
    *,
    port: int = 0,
    start_timeout: float = 10.0,
    protocol: Any = None,
    server: str = "uvicorn",
    **options: Any,
) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 (a free port unless given) until the block ends, as `agent-env serve` does
    (`uvicorn_options`, with `header_timeout`, `http` (the parser) and `loop` among `options`; `protocol`, when
    given, is the HTTP protocol class in place of `serve`'s); yields the base URL. `server="granian"` runs it under
    granian instead, as the benchmarks do (`testbed/granian.py`), with `header_timeout` alone of the options."""
    if server == "granian":
        with running_granian(app, port=port, start_timeout=start_timeout, **options) as url:
            yield url
        return
    settings = uvicorn_options(**options)
    if protocol is not None:
        settings["http"] = protocol
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **settings)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        if thread.is_alive():
            raise RuntimeError("uvicorn did not stop within 15 s")


@contextlib.contextmanager
def running_granian(
    app: Any, *, port: int = 0, start_timeout: float = 10.0, header_timeout: float = DEFAULT_HEADER_TIMEOUT
) -> Iterator[str]:
    """`running` under granian's embedded server, on its own uvloop loop in a thread."""
    import asyncio

    import uvloop

    from testbed.granian import granian_server

    if port == 0:  # granian takes a port, not a socket: a free one, found by binding it
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    server = granian_server(app, port, header_timeout=header_timeout)
    loop = uvloop.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), name="granian-test")
    thread.daemon = True
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + start_timeout
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            break
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("granian did not start")
        time.sleep(0.01)
    try:
        yield url
    finally:
        loop.call_soon_threadsafe(server.stop)
        thread.join(timeout=15)
        if thread.is_alive():
            raise RuntimeError("granian did not stop within 15 s")
        asyncio.set_event_loop(None)
        loop.close()
