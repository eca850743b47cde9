"""The header deadline and size cap (`_protocol.py`, `_httptools_protocol.py`) and the body timeout (`_guard.py`)
over a real socket, on each HTTP parser `serve` runs: a client that sends its request slowly, or headers without
end, is cut off, and the server goes on serving others; a refused WebSocket handshake is answered without an ERROR
line in the server's log."""

from __future__ import annotations

import contextlib
import logging
import re
import select
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from agent_env.openenv import OpenEnvSurface
from agent_env.server._protocol import HEADER_BYTES
from agent_env.server.app import build_app
from agent_env.server.client import KEEPALIVE_EXPIRY

from .running import running
from .toy import ToyDesk


@pytest.fixture(scope="module")
def slow_limits(stack: dict[str, str]) -> Iterator[str]:
    """A toy server that gives request headers 0.5 s and bodies 0.5 s."""
    with running(build_app(ToyDesk, body_timeout=0.5), header_timeout=0.5, **stack) as url:
        yield url


def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    return sock


def read_all(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    started, received = time.monotonic(), b""
    while chunk := sock.recv(65536):
        received += chunk
    return received, time.monotonic() - started


@pytest.mark.parametrize(
    "sent",
    [b"", b"POST /episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl"],
    ids=["nothing", "half the headers"],
)
def test_a_connection_whose_headers_do_not_arrive_in_time_is_closed(slow_limits, sent):
    with connect(slow_limits) as sock:
        sock.sendall(sent)
        received, took = read_all(sock)
    assert received == b""
    assert 0.4 < took < 5
    assert httpx.get(f"{slow_limits}/health").status_code == 200


def test_headers_sent_slowly_are_cut_off_even_while_bytes_keep_coming(slow_limits):
    request = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100
    with connect(slow_limits) as sock:
        started = time.monotonic()
        with pytest.raises((BrokenPipeError, ConnectionResetError)):  # the server closes mid-send
            for byte in request:
                sock.sendall(bytes([byte]))
                time.sleep(0.05)
        assert time.monotonic() - started < 5


def test_a_body_that_does_not_arrive_in_time_gets_408_and_the_connection_is_closed(slow_limits):
    with connect(slow_limits) as sock:
        sock.sendall(
            b"POST /episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"seed": '
        )
        received, took = read_all(sock)
    assert received.startswith(b"HTTP/1.1 408 ")
    assert received.endswith(
        b'{"error":{"code":"invalid_request","message":"the request body did not arrive within the server\'s body '
        b'timeout of 0.5 s; send it at once"}}'
    )
    assert 0.4 < took < 5
    assert httpx.get(f"{slow_limits}/health").json()["episodes"] == 0


def test_a_keep_alive_connection_serves_requests_that_arrive_in_time(slow_limits):
    with httpx.Client(base_url=slow_limits) as client:
        for _ in range(3):
            assert client.get("/health").status_code == 200
            time.sleep(
                0.3
            )  # idle between requests is the keep-alive timeout's business, not the header deadline's
        episode = client.post("/episodes", json={"seed": 3})
    assert episode.status_code == 201


@contextlib.contextmanager
def uvicorn_log() -> Iterator[list[logging.LogRecord]]:
    """Every record uvicorn's error log gets while the block runs (its logger does not reach the root's)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)


def handshake(url: str, headers: str = "") -> bytes:
    """The server's whole answer to a WebSocket handshake on OpenEnv's /ws."""
    request = (
        "GET /openenv/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" + headers + "\r\n"
    )
    with connect(url) as sock:
        sock.sendall(request.encode())
        return read_all(sock)[0]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ("", b"401"),  # no token
        ("Authorization: Bearer s3cret\r\nOrigin: https://evil.example\r\n", b"403"),
    ],
    ids=["no token", "another site's page"],
)
def test_a_refused_websocket_handshake_is_denied_without_an_error_line(headers, status, stack):
    app = build_app(ToyDesk, token="s3cret", surfaces=[OpenEnvSurface()])
    with running(app, **stack) as url, uvicorn_log() as records:
        answer = handshake(url, headers)
        time.sleep(0.2)  # uvicorn logs once the app has returned
    assert answer.startswith(b"HTTP/1.1 " + status + b" ")
    assert b'{"error":{"code":' in answer  # the guard's own answer, saying why
    assert [record.getMessage() for record in records if record.levelno >= logging.ERROR] == []
    assert app.state.episodes.count() == 0


def test_a_handshake_to_a_host_the_server_does_not_answer_to_is_denied_with_421_without_an_error_line(stack):
    app = build_app(ToyDesk, allowed_hosts=["localhost:*"], surfaces=[OpenEnvSurface()])
    with running(app, **stack) as url, uvicorn_log() as records:
        answer = handshake(url)
        time.sleep(0.2)
    assert answer.startswith(b"HTTP/1.1 421 ")
    assert [record.getMessage() for record in records if record.levelno >= logging.ERROR] == []


def test_a_connection_idle_as_long_as_the_client_keeps_one_is_still_open(stack):
    """The server keeps an idle connection past the time `AgentEnv.connect`'s client reuses one: were they equal
    (uvicorn's 5 s), the server could close it just as the client sends a request on it, and lose the request."""
    request = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with running(build_app(ToyDesk), **stack) as url, connect(url) as sock:
        for pause in (0, KEEPALIVE_EXPIRY + 0.5):
            time.sleep(pause)
            sock.sendall(request)
            answer = b""
            while not answer.endswith(b"}"):  # the health answer's JSON ends the response
                chunk = sock.recv(65536)
                assert chunk, f"the server closed the connection after {pause:g} s idle"
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200 ")


def test_request_headers_past_16_kib_get_400_and_the_connection_is_closed(slow_limits, stack):
    """h11 refuses them itself; httptools would keep every header it is given, so the protocol counts them. granian
    (hyper) refuses them itself too, with 431 and no body, past its buffer (16 KiB and hyper's least, 8 KiB)."""
    within = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (HEADER_BYTES - 200) + b"\r\n\r\n"
    with connect(slow_limits) as sock:
        sock.sendall(within)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
    endless = (
        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-More: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n" * 600
    )
    with connect(slow_limits) as sock:
        # A chunk at a time, stopping once the server has answered: bytes it never read would make its close a
        # reset, which can discard its answer before this side reads it.
        for start in range(0, len(endless), 4096):
            sock.sendall(endless[start : start + 4096])
            if select.select([sock], [], [], 0.05)[0]:
                break
        received, took = read_all(sock)
    if stack.get("server") == "granian":
        assert received.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    else:
        assert received.startswith(b"HTTP/1.1 400 ") and received.endswith(b"Invalid HTTP request received.")
    assert took < 0.4  # cut off at the limit, not by the header deadline
    assert httpx.get(f"{slow_limits}/health").status_code == 200


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"POST /episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        b"POST /episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"GET /health HTTP/1.1\r\nHost : 127.0.0.1\r\n\r\n",
        b"GET /health\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    ],
    ids=["length and chunked", "two lengths", "space before colon", "NUL in the target"],
)
def test_a_request_two_readers_could_read_two_ways_is_refused_and_runs_nothing(
    slow_limits, request_bytes, stack, request
):
    if stack.get("server") == "granian" and b"Transfer-Encoding" in request_bytes:
        # hyper follows RFC 9112: it reads the body by Transfer-Encoding, drops Content-Length before the app sees
        # it (so no guard can tell), runs the request and closes the connection. One reason granian is not
        # adopted (docs/scaling.md); strict, so that a granian which refuses it shows here.
        request.applymarker(pytest.mark.xfail(strict=True, reason="granian runs a request framed two ways"))
    live = httpx.get(f"{slow_limits}/health").json()["episodes"]
    with connect(slow_limits) as sock:
        sock.sendall(request_bytes)
        received, _ = read_all(sock)
    assert received.startswith(b"HTTP/1.1 400 ")
    assert httpx.get(f"{slow_limits}/health").json()["episodes"] == live


def test_pipelined_requests_are_answered_in_order(slow_limits):
    with connect(slow_limits) as sock:
        sock.sendall(
            b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 2
            + b"GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        received, _ = read_all(sock)
    assert re.findall(rb"HTTP/1\.1 (\d{3}) ", received) == [b"200", b"200", b"404"]
