"""How the OpenEnv client reaches a server: one WebSocket to `/ws` per session, and `/metadata` for the name.

`Transport` and `Connection` are the boundary the client is tested across without a network; `WebSocketTransport`
is the real one (`websockets`' sync client, `httpx`), and maps every failure to agent_env's `RemoteError` classes.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from agent_env.schema._validator import short
from agent_env.server.errors import (
    CallTimeoutError,
    InvalidRequestError,
    RemoteError,
    ServerUnavailableError,
    UnauthorizedError,
)

MAX_MESSAGE_BYTES = 100 * 1024 * 1024
"""The largest message taken from the server; OpenEnv's own clients take as much (observations can be screenshots)."""


class Connection(Protocol):
    """One WebSocket to an OpenEnv server's `/ws`: one session, one environment instance on the server."""

    def send(self, text: str) -> None:
        """Send one message; raise `ServerUnavailableError` if the connection is gone."""

    def recv(self, timeout: float | None = None) -> str:
        """The next message; raise `CallTimeoutError` past `timeout` seconds (the connection's own when None),
        `ServerUnavailableError` if it closed."""

    def close(self) -> None:
        """Close the connection; never raises."""


class Transport(Protocol):
    """How a provider reaches its server: a new `/ws` connection per session, and the environment's name."""

    def connect(self) -> Connection:
        """A new connection to `/ws`; raise a `RemoteError` subclass saying why there is none."""

    def environment_name(self) -> str | None:
        """The name `/metadata` gives, or None when it gives none."""


class WebSocketTransport:
    """The default transport: `websockets`' sync client for `/ws`, `httpx` for `/metadata`; picklable."""

    def __init__(self, url: str, headers: Mapping[str, str], timeout: float) -> None:
        self.url = url
        self.headers = dict(headers)
        self.timeout = timeout

    def connect(self) -> Connection:
        from websockets.exceptions import InvalidStatus, WebSocketException
        from websockets.sync.client import connect

        ws_url = websocket_url(self.url) + "/ws"
        try:
            # entered as `with connect(...)` enters it, in every websockets from 15 on (17.1 warns without it)
            socket = connect(
                ws_url,
                additional_headers=self.headers or None,
                open_timeout=self.timeout,
                max_size=MAX_MESSAGE_BYTES,
                proxy=None if is_loopback(ws_url) else True,
            ).__enter__()
        except InvalidStatus as error:
            raise refused(error.response.status_code, bytes(error.response.body or b""), ws_url) from None
        except (OSError, TimeoutError, WebSocketException) as error:
            raise ServerUnavailableError(
                f"cannot reach the OpenEnv server at {ws_url} ({error or type(error).__name__}); is it running?"
            ) from None
        return WebSocketConnection(socket, self.timeout, ws_url)

    def environment_name(self) -> str | None:
        import httpx

        try:
            response = httpx.get(f"{http_url(self.url)}/metadata", headers=self.headers, timeout=self.timeout)
            name = response.json().get("name") if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        return name if isinstance(name, str) and name else None


class WebSocketConnection:
    """A `websockets` sync connection as a `Connection`."""

    def __init__(self, socket: Any, timeout: float, url: str) -> None:
        self.socket = socket
        self.timeout = timeout
        self.url = url

    def send(self, text: str) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            self.socket.send(text)
        except ConnectionClosed as error:
            raise ServerUnavailableError(
                f"the OpenEnv server at {self.url} closed the connection ({error})"
            ) from None

    def recv(self, timeout: float | None = None) -> str:
        from websockets.exceptions import ConnectionClosed

        wait = self.timeout if timeout is None else timeout
        try:
            message = self.socket.recv(timeout=wait)
        except TimeoutError:
            raise CallTimeoutError(
                f"no answer from the OpenEnv server at {self.url} within {wait:g} s"
            ) from None
        except ConnectionClosed as error:
            raise ServerUnavailableError(
                f"the OpenEnv server at {self.url} closed the connection ({error})"
            ) from None
        return message if isinstance(message, str) else bytes(message).decode("utf-8", "replace")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.socket.close()


def refused(status: int, body: bytes, url: str) -> RemoteError:
    """The error for a refused WebSocket handshake: the server's own message when it sent agent_env's error form."""
    try:
        message = str(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        message = f"HTTP {status} {short(body.decode('utf-8', 'replace'))}"
    text = f"the OpenEnv server at {url} refused the connection: {message}"
    if status in (401, 403):
        return UnauthorizedError(text)
    if status in (400, 421):
        return InvalidRequestError(text)
    return ServerUnavailableError(text)


def base_url(url: str) -> str:
    """The server's base URL: no trailing slash, no `/ws`."""
    url = url.rstrip("/")
    url = url.removesuffix("/ws") if url.endswith("/ws") else url
    if urlsplit(url).scheme not in ("http", "https", "ws", "wss"):
        raise ValueError(
            f"an OpenEnv server's URL starts with http://, https://, ws:// or wss://, not {url!r}"
        )
    return url


def websocket_url(url: str) -> str:
    """`http(s)://` as `ws(s)://`."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme={"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)))


def http_url(url: str) -> str:
    """`ws(s)://` as `http(s)://`."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme={"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)))


def is_loopback(url: str) -> bool:
    """Whether the URL's host is this machine (no proxy then, as OpenEnv's client does)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
