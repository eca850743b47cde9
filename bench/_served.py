"""An environment served by uvicorn in a subprocess on a free loopback port (run as `agent-env serve` runs it), for the
benchmarks that measure a server."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psutil

_SERVER = """
import json, sys, uvicorn
from agent_env.server import build_app
from agent_env.server._serve import uvicorn_options
app = build_app(sys.argv[1], **json.loads(sys.argv[2]))
options = uvicorn_options()
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[3]), log_level="warning", access_log=False, **options)
"""


@contextlib.contextmanager
def served(environment: str, **settings: Any) -> Iterator[tuple[str, psutil.Process]]:
    """Serve `environment` with `build_app(environment, **settings)`: yields (base URL, the server's process).

    The server is stopped on exit (terminated, then killed if it has not gone within 15 s).
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-c", _SERVER, environment, json.dumps(settings), str(port)]
    process = subprocess.Popen(command, env=os.environ.copy())
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server for {environment} did not start")
            time.sleep(0.1)
        yield url, psutil.Process(process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
