"""Run an ASGI app under uvicorn in a thread on a free loopback port, for the tests that need a real socket."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from agent_env.server._serve import uvicorn_options


@contextlib.contextmanager
def running(
    app: Any, *, port: int = 0, start_timeout: float = 10.0, protocol: Any = None, **options: Any
) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 (a free port unless given) until the block ends, as `agent-env serve` does
    (`uvicorn_options`, with `header_timeout`, `http` (the parser) and `loop` among `options`; `protocol`, when
    given, is the HTTP protocol class in place of `serve`'s); yields the base URL."""
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
