"""An environment served by uvicorn in a subprocess on a free loopback port (run as `agent-env serve` runs it), for the
benchmarks that measure a server."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil

_SERVER = """
import json, sys, uvicorn
from agent_env.server import build_app
from agent_env.server._serve import uvicorn_options
settings = json.loads(sys.argv[2])
if "openenv_prefix" in settings:  # JSON cannot carry a surface; a checkout from before OpenEnv's surface left
    try:                           # agent_env/server/ takes the prefix itself
        from agent_env.openenv import OpenEnvSurface
        settings["surfaces"] = [OpenEnvSurface(settings.pop("openenv_prefix"))]
    except ImportError:
        pass
if settings.pop("ors", False):  # the ORS surface at the root
    from agent_env.ors import ORSSurface
    settings["surfaces"] = [*settings.get("surfaces", []), ORSSurface()]
app = build_app(sys.argv[1], **settings)
if sys.argv[4] == "granian":
    from testbed.granian import run_granian
    run_granian(app, int(sys.argv[3]))
else:
    options = uvicorn_options()
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[3]), log_level="warning", access_log=False, **options)
"""
STACKS = ("uvicorn", "granian")
"""The servers an app can run under here: `agent-env serve`'s uvicorn stack, and granian (`testbed/granian.py`)."""


@contextlib.contextmanager
def served(
    environment: str,
    *,
    source: Path | None = None,
    floor: bool = False,
    stack: str = "uvicorn",
    **settings: Any,
) -> Iterator[tuple[str, psutil.Process]]:
    """Serve `environment` with `build_app(environment, **settings)`: yields (base URL, the server's process).
    `openenv_prefix=` in `settings` serves OpenEnv's surface there (`surfaces=[OpenEnvSurface(prefix)]`), and
    `ors=True` the ORS surface at the root (`ORSSurface()`).
    `floor=True` serves it with `bench/_floor.py`'s bare app instead (no settings). `stack` is the server under the
    app: `agent-env serve`'s uvicorn stack, or granian (one of `STACKS`).

    `source`, when given, is a checkout of agent_env whose code serves instead of this one (`baseline` makes one),
    so that two versions are measured in one run. The server is stopped on exit (terminated, then killed if it has
    not gone within 15 s).
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    if floor:
        if source is not None or settings:
            raise ValueError("the floor's bare app serves this checkout, with no settings")
        command = [sys.executable, str(Path(__file__).with_name("_floor.py")), environment, str(port), stack]
    else:
        command = [sys.executable, "-c", _SERVER, environment, json.dumps(settings), str(port), stack]
    if stack not in STACKS:
        raise ValueError(f"stack must be one of {STACKS}, not {stack!r}")
    environ = os.environ.copy()
    root = str(Path(__file__).resolve().parents[1])  # the repository, for testbed.granian
    environ["PYTHONPATH"] = os.pathsep.join(
        [*([str(source)] if source is not None else []), environ.get("PYTHONPATH", ""), root]
    )
    process = subprocess.Popen(command, env=environ, cwd=source)  # `-c` puts the working folder first
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


@contextlib.contextmanager
def baseline(revision: str | None) -> Iterator[Path | None]:
    """A checkout of agent_env at git `revision` in a temporary folder (`git archive`, so no worktree is made), for
    `served(source=...)`; None when `revision` is None. Beside it is the revision's own testbed/ (the test
    environments, `testbed.toy:ToyDesk`), or for a revision from before testbed/ existed its tst/data/ under that
    name: this checkout's testbed/ may use what an older agent_env does not have (its toy imports
    `InfrastructureFailedError`)."""
    if revision is None:
        yield None
        return
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="agent-env-baseline-") as folder:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-tree", "--name-only", revision, "testbed"],
            capture_output=True,
            check=True,
            text=True,
        ).stdout
        testbed = "testbed" if listed.strip() else "tst/data"
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", revision, "agent_env", testbed],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        if testbed != "testbed":
            (Path(folder) / testbed).rename(Path(folder) / "testbed")
        yield Path(folder)


NGINX = """
worker_processes 1;
daemon off;
pid {folder}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    upstream episodes {{
        hash $http_x_agent_env_route consistent;  # a session's every request reaches the server of its episode
{servers}
        keepalive 512;
    }}
    upstream mcp {{ server {first}; }}  # MCP sessions are the SDK's, named by the server: one server holds them
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        client_max_body_size 5m;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_read_timeout 300s;
        location / {{ proxy_pass http://episodes; }}
        location = /mcp {{ proxy_pass http://mcp; }}
    }}
}}
"""
"""nginx in front of several `agent-env serve` processes as one address (docs/scaling.md has the same recipe)."""


@contextlib.contextmanager
def served_behind_one_address(
    environment: str, servers: int, **settings: Any
) -> Iterator[tuple[str, list[psutil.Process]]]:
    """`servers` servers of `environment` behind nginx on one loopback port: yields (its URL, the servers'
    processes). Needs nginx on PATH."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        raise RuntimeError(
            "nginx is not installed (apt-get install nginx-light): it is what serves them as one"
        )
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="agent-env-nginx-") as folder:
        backends = [stack.enter_context(served(environment, **settings)) for _ in range(servers)]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        addresses = [url.removeprefix("http://") for url, _ in backends]
        config = Path(folder) / "nginx.conf"
        config.write_text(
            NGINX.format(
                folder=folder,
                servers="\n".join(f"        server {address};" for address in addresses),
                first=addresses[0],
                port=port,
            )
        )
        proxy = subprocess.Popen([nginx, "-c", str(config), "-p", folder])
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                        break
                if proxy.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("nginx did not start")
                time.sleep(0.1)
            yield url, [process for _, process in backends]
        finally:
            proxy.terminate()
            proxy.wait(timeout=15)
