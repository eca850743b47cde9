"""The header deadline (`_protocol.py`) and the body timeout (`_guard.py`) over a real socket: a client that sends
its request slowly is cut off, and the server goes on serving others."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from agent_env.server.app import build_app

from .running import running
from .toy import ToyDesk


@pytest.fixture(scope="module")
def slow_limits() -> Iterator[str]:
    """A toy server that gives request headers 0.5 s and bodies 0.5 s."""
    with running(build_app(ToyDesk, body_timeout=0.5), header_timeout=0.5) as url:
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
    assert httpx.get(f"{slow_limits}/health").json() == {"status": "ok", "episodes": 0}


def test_a_keep_alive_connection_serves_requests_that_arrive_in_time(slow_limits):
    with httpx.Client(base_url=slow_limits) as client:
        for _ in range(3):
            assert client.get("/health").status_code == 200
            time.sleep(
                0.3
            )  # idle between requests is the keep-alive timeout's business, not the header deadline's
        episode = client.post("/episodes", json={"seed": 3})
    assert episode.status_code == 201
