"""What every request must pass before any route sees it: Host, Origin, the token, and a JSON body within the limits.

`judge_headers` decides on the headers alone, for an HTTP request or a WebSocket handshake (any ASGI scope with
headers), so every wire surface holds requests to one set of rules. `RequestGuard` applies it to each HTTP request,
then reads the body in full under the size, time and value limits, so no route sees part of a body, and none
parses one that is past the limits.
"""

from __future__ import annotations

import asyncio
import hmac
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_env.errors import AgentEnvError
from agent_env.server._http import BODY, error_response
from agent_env.server._jsonrpc import ENDS, Dialect, refused_rpc
from agent_env.server.errors import InvalidRequestError, RequestTooLargeError, UnauthorizedError
from agent_env.server.limits import Limits

OPEN_PATHS = frozenset({"/health"})
"""Paths answered without the token."""

_JUDGED = frozenset({b"host", b"origin", b"content-type", b"content-length", b"transfer-encoding"})
"""The headers the guard reads (the token is compared as bytes, from the raw headers)."""

BODYLESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods whose requests are not judged by their Content-Type."""


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: the error (its code and message) and the HTTP status it is sent with."""

    error: AgentEnvError
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)

    def response(self) -> Response:
        """The refusal in the control API's wire form, `{"error": {"code", "message"}}`."""
        return error_response(self.error, status=self.status, headers=self.headers)


def judge_headers(
    scope: Scope,
    limits: Limits,
    open_paths: Collection[str] = OPEN_PATHS,
    headers: Mapping[str, str] | None = None,
    token_headers: Collection[str] = (),
) -> Refusal | None:
    """Why a request must be refused on its headers alone, or None to let it in.

    In order: a body framed two ways, by both Content-Length and Transfer-Encoding (400, and the connection is
    closed: a proxy in front may have read it the other way, which is how requests are smuggled; httptools refuses
    it before the app sees it, h11 reads it as chunked); a Host the server does not answer to (421); a browser `Origin` it does not allow (403); no bearer
    token, or the wrong one, on a path that needs it (401); and for an HTTP request that has a body (or says what
    its body is), a Content-Type other than `application/json` (415), which also keeps out the forms and
    `text/plain` posts that a web page can send anywhere without asking. An empty body named
    `application/octet-stream` is let in: it is what aiohttp (the ORS SDK's client) sends for a POST without data,
    and a web page cannot send that type without a CORS preflight, which this server never grants.

    Args:
        scope: An ASGI `http` or `websocket` scope.
        limits: The server's limits.
        open_paths: Paths answered without the token.
        headers: `judged_headers(scope)`, when the caller has them already.
        token_headers: Headers (lower-case names) that carry the token besides `Authorization: Bearer`.
    """
    if headers is None:
        headers = judged_headers(scope)
    if scope["type"] == "http" and "transfer-encoding" in headers and "content-length" in headers:
        message = (
            "the request gives both Content-Length and Transfer-Encoding, so its body could be read two ways; "
            "send one of them"
        )
        return Refusal(InvalidRequestError(message), 400, {"Connection": "close"})
    host = headers.get("host")
    if limits.allowed_hosts is not None and not host_allowed(host, limits.allowed_hosts):
        allowed = ", ".join(limits.allowed_hosts)
        message = f"this server does not answer to Host {host!r}; it answers to {allowed}"
        return Refusal(InvalidRequestError(message), 421)
    origin = headers.get("origin")
    if origin is not None and not origin_allowed(origin, limits.allowed_origins):
        message = (
            f"requests from the web page at {origin!r} are not allowed; a client that is not a browser sends no "
            "Origin, and the server's operator can allow a browser origin with --allow-origin"
        )
        return Refusal(InvalidRequestError(message), 403)
    if (
        limits.token is not None
        and scope["path"] not in open_paths
        and not authorized(scope, limits.token, token_headers)
    ):
        also = "".join(f" (or '{name}: <token>')" for name in sorted(token_headers))
        message = (
            f"missing or wrong bearer token: send the header 'Authorization: Bearer <token>'{also} with the token "
            "the server was started with"
        )
        return Refusal(UnauthorizedError(message), 401, {"WWW-Authenticate": "Bearer"})
    if scope["type"] == "http" and scope["method"] not in BODYLESS_METHODS:
        content_type = headers.get("content-type")
        empty_octets = not _has_body(headers) and _media_type(content_type) == "application/octet-stream"
        if (content_type is not None or _has_body(headers)) and not (is_json(content_type) or empty_octets):
            sent = (
                f"not {content_type!r}"
                if content_type is not None
                else "and this request names no Content-Type"
            )
            message = f"the body must be JSON, sent with 'Content-Type: application/json', {sent}"
            return Refusal(InvalidRequestError(message), 415)
    return None


def judged_headers(scope: Scope) -> dict[str, str]:
    """The headers the guard reads, each as its first value (as `starlette.datastructures.Headers.get` reads it),
    from one pass over the raw headers."""
    found: dict[str, str] = {}
    for name, value in scope["headers"]:
        name = name.lower()
        if name in _JUDGED:
            found.setdefault(name.decode("latin-1"), value.decode("latin-1"))
    return found


class RequestGuard:
    """ASGI middleware: `judge_headers` for every HTTP request, then its body read in full under the limits.

    The body is refused past `max_body_bytes` (413), when it takes longer than `body_timeout` to arrive (408), or
    when it holds more than `max_body_values` JSON values (413), counted from its bytes before anything parses it.
    On `rpc_paths` (MCP, OpenEnv's `POST /mcp`) a body refused for its size is answered in the path's JSON-RPC
    dialect when its id can be found: over MCP a `tools/call` gets an `isError` result the model can read, any
    other request a JSON-RPC error. There a body over the byte limit is read to its end (only its first and last
    kilobyte kept, the body timeout bounding how long) to find that id, whatever its size.

    A WebSocket handshake (OpenEnv's `/ws`) is judged by `judge_headers` too, and refused with the same answer as
    its denial response (or, where the ASGI server cannot send one, closed with 1008) before any route sees it.
    """

    def __init__(
        self,
        app: ASGIApp,
        limits: Limits,
        open_paths: Collection[str] = OPEN_PATHS,
        rpc_paths: Mapping[str, Dialect] | None = None,
        token_headers: Collection[str] = (),
    ) -> None:
        self.app = app
        self.limits = limits
        self.open_paths = open_paths
        self.rpc_paths = dict(rpc_paths or {})
        self.token_headers = tuple(token_headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = judged_headers(scope)
        refusal = judge_headers(scope, self.limits, self.open_paths, headers, self.token_headers)
        if refusal is not None:
            await refuse(refusal.response(), scope, receive, send)
            return
        if scope["type"] == "websocket":  # its messages are the endpoint's to limit
            await self.app(scope, receive, send)
            return
        body = _BodyReader(self.limits, self.rpc_paths.get(scope["path"]))
        refused: Response | None = None
        try:
            async with asyncio.timeout(self.limits.body_timeout):
                refused = await body.read(receive, headers)
        except TimeoutError:
            timeout = InvalidRequestError(
                f"the request body did not arrive within the server's body timeout of {self.limits.body_timeout:g} "
                "s; send it at once"
            )
            refused = error_response(timeout, status=408, headers={"Connection": "close"})
        if body.gone:  # no one to answer, and nothing runs on part of a body
            return
        if refused is not None:
            await refused(scope, receive, send)
            return
        scope[BODY] = body.whole()
        await self.app(scope, body.replay(receive), send)


async def refuse(response: Response, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer a request with an error: as it is for HTTP; for a WebSocket handshake, as its denial response, or by
    closing it (code 1008, policy violation) where the ASGI server cannot send one."""
    if scope["type"] == "websocket" and "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008, "reason": ""})
        return
    await response(scope, receive, send)


class _BodyReader:
    """Reads one request body under the limits; keeps its first and last bytes when one past the limit is drained."""

    def __init__(self, limits: Limits, rpc: Dialect | None) -> None:
        self.limits = limits
        self.rpc = rpc
        self.chunks: list[bytes] = []
        """The body as it came, while it is within the limit."""
        self.head = bytearray()
        self.tail = bytearray()
        """Past the limit: the body's first and last `ENDS` bytes, all that is kept of it."""
        self.size = 0
        self.gone = False
        self.after: deque[Message] = deque()

    async def read(self, receive: Receive, headers: Mapping[str, str]) -> Response | None:
        """Read the body; None if it is within the limits, else the answer that refuses it. A disconnect before the
        body's end (the client went, or the server is stopping and has answered it) sets `gone`; one after it (a
        request without a body included, such as a DELETE sent before the client hung up) is the app's to see."""
        limit = self.limits.max_body_bytes
        declared = headers.get("content-length")
        if self.rpc is None and declared is not None and declared.isdigit() and int(declared) > limit:
            return self._too_large(drained=False)
        while True:
            message = await receive()
            if message["type"] != "http.request":  # http.disconnect
                if not _arrived(headers, self.size):
                    self.gone = True
                    return None
                self.after.append(message)
                break
            self._take(message.get("body", b""), limit)
            if self.rpc is None and self.size > limit:
                return self._too_large(drained=False)
            if not message.get("more_body", False):
                break
        if self.size > limit:
            return self._too_large(drained=True)
        return self._too_many_values()

    def whole(self) -> bytes:
        """The body read (within the limits): the one chunk it came in (most bodies), or the chunks joined once."""
        if len(self.chunks) != 1:
            self.chunks = [b"".join(self.chunks)]
        return self.chunks[0]

    def replay(self, receive: Receive) -> Receive:
        """A `receive` that hands the app the whole body at once, then whatever came after it."""
        self.after.appendleft({"type": "http.request", "body": self.whole(), "more_body": False})

        async def replayed() -> Message:
            return self.after.popleft() if self.after else await receive()

        return replayed

    def _take(self, chunk: bytes, limit: int) -> None:
        self.size += len(chunk)
        if self.size <= limit:
            self.chunks.append(chunk)
            return
        if (
            self.chunks
        ):  # it has just passed the limit: from now on only its ends are kept, to find a JSON-RPC id
            kept, self.chunks = self.whole(), []
            self.head, self.tail = bytearray(kept[:ENDS]), bytearray(kept[-ENDS:])
        if len(self.head) < ENDS:
            self.head += chunk[: ENDS - len(self.head)]
        self.tail = (self.tail + chunk)[-ENDS:]

    def _too_large(self, *, drained: bool) -> Response:
        message = f"the request body is larger than the server's limit of {self.limits.max_body_bytes} bytes"
        return self._refuse(
            message, bytes(self.head) if drained else b"", bytes(self.tail) if drained else b""
        )

    def _too_many_values(self) -> Response | None:
        most = self.limits.max_body_values
        body = self.whole()
        if most is None or len(body) <= most:  # a body cannot hold more values than it has bytes
            return None
        count = json_values(body)
        if count <= most:
            return None
        message = (
            f"the request body holds about {count} JSON values (counted from its commas and brackets), more than "
            f"the server's limit of {most}"
        )
        return self._refuse(message, body[:ENDS], body[-ENDS:])

    def _refuse(self, message: str, head: bytes, tail: bytes) -> Response:
        if self.rpc is not None:
            return refused_rpc(head, tail, message, self.rpc)
        return Refusal(RequestTooLargeError(message), 413).response()


def _arrived(headers: Mapping[str, str], size: int) -> bool:
    """Whether a body of `size` bytes is the whole body the headers announce (none, when they announce none)."""
    declared = headers.get("content-length")
    if declared is not None and declared.strip().isdigit():
        return size >= int(declared)
    return "transfer-encoding" not in headers  # chunked: its end was not seen


def json_values(body: bytes) -> int:
    """An upper bound on the JSON values in a body, from its bytes alone (a comma or bracket in a string counts too):
    every value but the first in an array or object follows a comma, and every array or object opens a bracket."""
    return body.count(b",") + body.count(b"[") + body.count(b"{") + 1


def authorized(scope: Scope, token: str, token_headers: Collection[str] = ()) -> bool:
    """Whether the request carries `Authorization: Bearer <token>`, or the token alone in one of `token_headers`
    (lower-case names), compared as UTF-8 bytes (headers are bytes; reading them as Latin-1 text first would match
    no token outside ASCII)."""
    expected = token.encode("utf-8")
    value = next((value for name, value in scope["headers"] if name.lower() == b"authorization"), b"")
    scheme, _, given = value.partition(b" ")
    if scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(b" \t"), expected):
        return True
    others = {name.encode("latin-1") for name in token_headers}
    return any(
        name.lower() in others and hmac.compare_digest(value.strip(b" \t"), expected)
        for name, value in scope["headers"]
    )


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


def origin_allowed(origin: str, allowed: Sequence[str] | None) -> bool:
    """Whether a browser `Origin` is one of `allowed` (`scheme://name:*`: that name with any port or none; `*`: any
    origin; None: any origin)."""
    if allowed is None or "*" in allowed:
        return True
    origin = origin.lower()
    for pattern in (pattern.lower() for pattern in allowed):
        if pattern.endswith(":*"):
            if origin == pattern[:-2] or host_allowed(origin, [pattern]):
                return True
        elif origin == pattern.rstrip("/"):
            return True
    return False


def is_json(content_type: str | None) -> bool:
    """Whether a Content-Type names JSON: `application/json`, with or without parameters (`; charset=utf-8`)."""
    return _media_type(content_type) == "application/json"


def _media_type(content_type: str | None) -> str | None:
    return content_type.split(";")[0].strip().lower() if content_type is not None else None


def _has_body(headers: Mapping[str, str]) -> bool:
    length = headers.get("content-length")
    return "transfer-encoding" in headers or (length is not None and length.strip() not in ("", "0"))
