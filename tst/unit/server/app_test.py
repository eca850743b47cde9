"""`build_app` as a whole: what it serves, what it refuses to build, and that a served process stops cleanly."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_env.server._serve import GRACEFUL_SHUTDOWN
from agent_env.server.app import build_app

from .toy import ToyDesk

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]


async def test_an_environment_is_served_by_name_with_its_config():
    app = build_app(f"{ToyDesk.__module__}:ToyDesk", scale=0.5)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            episode = (await client.post("/episodes", json={"seed": 4})).json()["episode_id"]
            assert (await client.post(f"/episodes/{episode}/reward")).json() == {"reward": 2.0}


@pytest.mark.parametrize(
    ("environment", "options", "error", "message"),
    [
        (
            dict,
            {},
            TypeError,
            "build_app serves an Environment subclass, an MCPEnvironment or a name, not <class 'dict'>",
        ),
        ("no-such-env", {}, LookupError, "unknown environment 'no-such-env'"),
        (
            ToyDesk,
            {"max_body_bytes": 0},
            ValueError,
            "max_body_bytes must be a positive number of bytes, not 0",
        ),
        (ToyDesk, {"max_episodes": -1}, ValueError, "max_episodes must be positive (or None for no limit)"),
        (
            ToyDesk,
            {"idle_timeout": float("inf")},
            ValueError,
            "idle_timeout must be a positive, finite number",
        ),
        (ToyDesk, {"call_timeout": 0}, ValueError, "call_timeout must be a positive, finite number"),
        (ToyDesk, {"token": ""}, ValueError, "token must be a non-empty string"),
        (
            ToyDesk,
            {"token": " s3cret"},
            ValueError,
            "the token starts with whitespace (' '), which no client can send",
        ),
        (
            ToyDesk,
            {"token": "s3cret\n"},
            ValueError,
            "the token ends with whitespace ('\\n'), which no client can send (HTTP trims it from header "
            "values): remove it (a trailing newline often comes from a file or `echo`)",
        ),
        (
            ToyDesk,
            {"token": "s3c\x00ret"},
            ValueError,
            "the token holds a control character ('\\x00'), which cannot travel in an HTTP header",
        ),
    ],
)
def test_what_cannot_be_served_is_refused_when_the_app_is_built(environment, options, error, message):
    with pytest.raises(error, match=re.escape(message)):
        build_app(environment, **options)


@contextlib.contextmanager
def agent_env_serve(http: str = "auto", loop: str = "auto") -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`agent-env serve` of the toy in a process of its own on a free port, on the HTTP parser and event loop given:
    the process (its stderr piped) and its URL; killed on the way out if it is still running."""
    environment = {**os.environ, "PYTHONPATH": f"{ROOT / 'tst' / 'unit'}{os.pathsep}{ROOT}"}
    command = [sys.executable, "-m", "agent_env.cli", "serve", f"{ToyDesk.__module__}:ToyDesk", "--port", "0"]
    command += ["--http", http, "--loop", loop]
    server = subprocess.Popen(command, env=environment, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        assert server.stderr is not None
        for line in server.stderr:
            found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
            if found:
                url = found.group(1)
                break
        assert url, "the server did not start"
        yield server, url
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_a_served_process_stops_on_sigint_within_seconds_even_with_a_hung_tool():
    with agent_env_serve() as (server, url):
        with httpx.Client(base_url=url, timeout=30) as client:
            episode = client.post("/episodes", json={}).json()["episode_id"]
            outcome: dict[str, object] = {}

            def hang() -> None:
                try:
                    outcome["answer"] = client.post(f"/episodes/{episode}/tools/hang", json={"seconds": 600})
                except httpx.HTTPError as error:
                    outcome["error"] = error

            caller = threading.Thread(target=hang)
            caller.start()
            time.sleep(0.5)
            stopping = time.monotonic()
            server.send_signal(signal.SIGINT)
            server.wait(timeout=20)
            caller.join(timeout=5)
        assert time.monotonic() - stopping < 12
        assert server.returncode == 0
        assert "error" in outcome or outcome["answer"].status_code >= 500


def test_sigterm_with_a_slow_body_in_flight_stops_within_the_grace_time_and_answers_it_503_cleanly(stack):
    if stack.get("server") == "granian":
        pytest.skip(
            "agent-env serve runs uvicorn; under granian's embedded server a body still arriving when it stops gets "
            "no answer, and holds the stop until its body timeout (docs/scaling.md)"
        )
    with agent_env_serve(**stack) as (server, url):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=20) as slow:
            slow.sendall(  # a body that will not all arrive: 9 of its 100 bytes
                b"POST /episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b'Content-Length: 100\r\n\r\n{"seed": '
            )
            time.sleep(0.5)  # the guard is waiting for the rest
            stopping = time.monotonic()
            server.send_signal(signal.SIGTERM)
            answer = b""
            while chunk := slow.recv(65536):
                answer += chunk
            server.wait(timeout=20)
        took = time.monotonic() - stopping
        assert server.stderr is not None
        log = server.stderr.read()
    assert took < GRACEFUL_SHUTDOWN, log  # nothing of it ran, so nothing waits for it
    assert server.returncode in (0, -signal.SIGTERM)  # uvicorn >= 0.29 raises the signal again once stopped
    assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1]) == {
        "error": {
            "code": "server_unavailable",
            "message": "the server is shutting down: its request body had not all arrived, so nothing of it ran; "
            "send it again",
        }
    }
    assert "Traceback" not in log and "CancelledError" not in log and "ERROR" not in log, log


def desk_or_skip():
    try:
        from agent_env.envs.gridsim.desk import GridSimDesk
    except ImportError as error:  # the desk is optional here: it is written and tested elsewhere
        pytest.skip(f"agent_env.envs.gridsim.desk does not import: {error}")
    return GridSimDesk


async def test_the_desk_is_served_with_its_schemas_and_errors_as_in_process():
    from mcp import Client

    from agent_env.errors import ToolArgumentError
    from agent_env.session import LocalSession

    from .running import running

    desk = desk_or_skip()
    bad = {"curves": [{"hours": "HE07", "points": [[0, 10], [100]]}], "as_offers": [{"product": "spin"}]}
    local = LocalSession(desk())
    local.reset(seed=3)
    with pytest.raises(ToolArgumentError) as caught:
        local.call_tool("submit_dam_offers", bad)
    good = {"curves": [{"hours": "HE02-HE05", "points": [[-50, 20], [0, 21]]}], "as_offers": []}
    with running(build_app("gridsim-desk", mcp_row={"seed": 3})) as url:
        async with Client(f"{url}/mcp") as client:
            listed = (await client.list_tools()).tools
            refused = await client.call_tool("submit_dam_offers", bad)
            booked = await client.call_tool("submit_dam_offers", good)
        async with httpx.AsyncClient(base_url=url) as control:
            tools = (await control.get("/tools")).json()
            row = (await control.get("/datasets/train")).json()["rows"][0]
            opened = await control.post("/episodes", json=row)
            traversal = await control.post("/episodes", json={"task_id": "../../etc/passwd"})
    assert [json.dumps(tool.input_schema) for tool in listed] == [
        json.dumps(tool["inputSchema"]) for tool in desk.tools.published
    ]
    assert json.dumps(tools["tools"]) == json.dumps(desk.tools.published)
    assert (refused.is_error, refused.content[0].text) == (True, str(caught.value))
    assert (booked.is_error, booked.content[0].text) == (False, local.call_tool("submit_dam_offers", good))
    assert opened.status_code == 201
    assert opened.json()["observation"].startswith("You are the day-ahead trader")
    assert traversal.status_code == 400  # the environment refused the row: not a server bug
    assert traversal.json()["error"]["code"] == "reset_failed"
    assert "unknown task id '../../etc/passwd'" in traversal.json()["error"]["message"]
