"""What every request must pass before any route sees it: an answered Host, the bearer token, the body size limit."""

from __future__ import annotations

import hmac
from collections import deque
from collections.abc import Collection, Sequence

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_env.server._http import error_response
from agent_env.server._limits import Limits
from agent_env.server.errors import InvalidRequestError, RequestTooLargeError, UnauthorizedError

OPEN_PATHS = frozenset({"/health"})
"""Paths answered without the token."""


class RequestGuard:
    """ASGI middleware: 421 for a Host the server does not answer to, 401 without the right bearer token (every
    path but `OPEN_PATHS`), 413 for a body over the limit (read in full before the app runs, so it never sees
    part of one)."""

    def __init__(self, app: ASGIApp, limits: Limits, open_paths: Collection[str] = OPEN_PATHS) -> None:
        self.app = app
        self.limits = limits
        self.open_paths = open_paths
        self._token = limits.token.encode("utf-8") if limits.token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self.limits.allowed_hosts is not None and not host_allowed(
            headers.get("host"), self.limits.allowed_hosts
        ):
            allowed = ", ".join(self.limits.allowed_hosts)
            misdirected = InvalidRequestError(
                f"this server does not answer to Host {headers.get('host')!r}; it answers to {allowed}"
            )
            await error_response(misdirected, status=421)(scope, receive, send)
            return
        if self._token is not None and scope["path"] not in self.open_paths and not self._authorized(scope):
            error = UnauthorizedError(
                "missing or wrong bearer token: send the header 'Authorization: Bearer <token>' with the token "
                "the server was started with"
            )
            await error_response(error, headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        await self._limit_body(scope, receive, send, headers)

    def _authorized(self, scope: Scope) -> bool:
        """Whether the request carries `Authorization: Bearer <token>`, compared as UTF-8 bytes (headers are bytes;
        reading them as Latin-1 text first would match no token outside ASCII)."""
        assert self._token is not None
        value = next((value for name, value in scope["headers"] if name.lower() == b"authorization"), b"")
        scheme, _, given = value.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(b" \t"), self._token)

    async def _limit_body(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        limit = self.limits.max_body_bytes
        too_large = RequestTooLargeError(
            f"the request body is larger than the server's limit of {limit} bytes"
        )
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await error_response(too_large)(scope, receive, send)
            return
        body = bytearray()
        replay: deque[Message] = deque()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                replay.append(message)
                break
            body += message.get("body", b"")
            if len(body) > limit:
                await error_response(too_large)(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        replay.appendleft({"type": "http.request", "body": bytes(body), "more_body": False})

        async def replayed() -> Message:
            return replay.popleft() if replay else await receive()

        await self.app(scope, replayed, send)


def host_allowed(host: str | None, allowed: Sequence[str]) -> bool:
    """Whether a Host header is one of `allowed` (`name:*` stands for the name with any port)."""
    if not host:
        return False
    for pattern in allowed:
        if pattern.endswith(":*"):
            name, _, port = host.rpartition(":")
            if name == pattern[:-2] and port.isdigit():
                return True
        elif host == pattern:
            return True
    return False
