"""One ORS server as this process reaches it: its requests and streams over httpx, each fault named and counted.

Every request runs on agent_env's background loop (one `httpx.AsyncClient` per environment class and process) and
carries the key, read from the variable the user named, in `X-API-Key`, the SDK client's one auth header; the key
is cut from every text the server sends back before any message quotes it. A fault is retried only where the
request cannot have run twice: a listing, a ping or a delete on any transient fault (a dropped connection, 429,
502-504); `/create` and a tool call only when the server never took them (a refused connection, 429, a backend still
starting). A call's stream cut short after its `task_id` is resumed by sending that id again, as the SDK does (the
server replays the finished result). Past the retries each fault is an `ORSError` of its kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from agent_env.ors import _wire as wire
from agent_env.ors.errors import (
    ORSError,
    ORSMalformedError,
    ORSRateLimitedError,
    ORSRefusedError,
    ORSServerError,
    ORSSessionExpiredError,
    ORSStreamError,
    ORSTimeoutError,
    ORSToolFailedError,
    ORSUnauthorizedError,
    ORSUnavailableError,
)

logger = logging.getLogger("agent_env.ors")

T = TypeVar("T")

RETRIED_STATUSES = frozenset({429, 502, 503, 504})
"""Statuses a request is sent again after, when it is safe to (the SDK client's env-server policy)."""
BACKOFF_SECONDS, BACKOFF_CAP = 0.5, 10.0
HEARTBEAT_SECONDS = 30.0
"""The longest a stream may stay silent: the server sends a keep-alive every 10 s while a tool runs."""
_UNKNOWN_TASK = "unknown task_id"
"""What the SDK server answers a resume whose result it no longer holds."""


class Key:
    """The API key, read from the variable the user named: sent in its header, cut from every text quoted, never
    shown (its repr names the variable only)."""

    def __init__(self, variable: str | None) -> None:
        self.variable = variable
        value = os.environ.get(variable) if variable else None
        if variable and not value:
            raise ValueError(
                f"api_key_env names the variable {variable!r}, which is not set (or empty): export the ORS key in "
                f"it, or pass api_key_env=None for a server that takes none"
            )
        self._value = value

    def headers(self) -> dict[str, str]:
        """The header that carries the key, or none."""
        return {wire.API_KEY_HEADER: self._value} if self._value else {}

    def redact(self, text: str) -> str:
        """`text` with the key cut out."""
        return text.replace(self._value, "[key]") if self._value and self._value in text else text

    def __repr__(self) -> str:
        return f"Key(from ${self.variable})" if self.variable else "Key(none)"


@dataclass(frozen=True)
class Policy:
    """How hard to try: `retries` times more after a transient fault, each answer within `timeout` seconds, and a
    backend the server says is still starting (503 with `X-Backend-State: starting`) waited for `start_timeout`."""

    timeout: float
    retries: int
    start_timeout: float


class _Transient(Exception):
    """A fault that may pass: retry if the request allows it, else raise `error`."""

    def __init__(
        self, error: ORSError, *, sent: bool, wait: float | None = None, starting: bool = False
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.sent = sent
        """Whether the server may have taken the request (so a request that must not run twice is not retried)."""
        self.wait = wait
        self.starting = starting


class ORSClient:
    """The requests of one ORS environment on one server; see the module docstring.

    Args:
        base_url: The server's URL (a path, if any, is kept: routes go under it).
        env_name: The environment's name on the server: every route is `/{env_name}/...`.
        key: The key to send.
        policy: Timeouts and retries.
        transport: httpx's transport (tests pass an in-memory one); None: the network.
    """

    def __init__(
        self,
        base_url: str,
        env_name: str,
        key: Key,
        policy: Policy,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.env_name = env_name
        self.key = key
        self.policy = policy
        self.faults: Counter[str] = Counter()
        """Every fault met, retried ones included, by kind."""
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=key.headers(),
            timeout=httpx.Timeout(policy.timeout, read=max(policy.timeout, HEARTBEAT_SECONDS)),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
            transport=transport,
            follow_redirects=True,  # the SDK server sends a bare path to its first environment with a 308
        )

    # Sessions.

    async def create_session(self) -> str:
        """A new session id (`POST /create_session`, answered as an SSE stream, or the spec's JSON)."""

        async def attempt() -> str:
            sid: Any = None
            try:
                async with self._http.stream("POST", "/create_session", json={}, headers=_SSE) as response:
                    await self._check(response, "/create_session", sid=None)
                    if response.headers.get("content-type", "").startswith("application/json"):
                        answer = _json(await response.aread(), "/create_session", self.key)
                        sid = answer.get("sid") if isinstance(answer, dict) else None
                    else:
                        events = await self._events(response, "/create_session")
                        sid = next((data.strip() for event, data in events if event == wire.TASK_ID), None)
            except httpx.HTTPError as error:
                raise _transport_fault(error, self._at("/create_session"), sent=True) from None
            if not isinstance(sid, str) or not sid:
                raise ORSMalformedError(f"{self._at('/create_session')} answered no session id")
            return sid

        return await self._retried(attempt, "/create_session", idempotent=True)

    async def create(self, sid: str, task: Mapping[str, Any]) -> None:
        """Start the session's episode on a task: `{"task_spec": ...}` or `{"split", "index"}`."""
        body = {"env_name": self.env_name, **task}
        await self._retried(
            lambda: self._json_request("POST", "/create", sid, body), "/create", idempotent=False
        )

    async def prompt(self, sid: str) -> list[dict[str, Any]]:
        """The episode's prompt blocks (`GET /{env}/prompt`)."""
        path = self._path("/prompt")
        blocks = await self._retried(lambda: self._json_request("GET", path, sid), path, idempotent=True)
        if not isinstance(blocks, list) or not all(isinstance(block, dict) for block in blocks):
            raise ORSMalformedError(
                f"{self._at(path)} answered no list of blocks: {_shown(blocks, self.key)}"
            )
        return blocks

    async def call(self, sid: str, name: str, arguments: Mapping[str, Any]) -> wire.Output | wire.Refusal:
        """Run one tool call (`POST /{env}/call`, an SSE stream), resuming a stream cut short after its `task_id`."""
        path = self._path("/call")
        body: dict[str, Any] = {"name": name, "input": dict(arguments)}
        task_id: str | None = None
        attempts = 0
        while True:
            try:
                text = await self._call_once(path, sid, {**body, **({"task_id": task_id} if task_id else {})})
                return _result(text, path, self.key)
            except _Resumable as cut:
                task_id = cut.task_id or task_id
                failure: _Transient = cut.transient
            except _Transient as transient:
                failure = transient
            except ORSError as error:
                self._count(error)
                raise
            self._count(failure.error)
            if failure.sent and task_id is None and not failure.starting:
                raise failure.error  # it may have run: sending it again could run it twice
            attempts += 1
            if attempts > self.policy.retries:
                raise failure.error
            await asyncio.sleep(_delay(attempts, failure.wait))

    async def ping(self, sid: str) -> None:
        """Keep the session alive (`POST /ping`)."""
        await self._post_quietly("/ping", sid)

    async def delete(self, sid: str) -> None:
        """Tear the session's episode down (`POST /delete`), then forget the session (`POST /delete_session`), as the
        SDK client does; a session the server no longer knows is deleted already."""
        for path in ("/delete", "/delete_session"):
            with contextlib.suppress(ORSSessionExpiredError):
                await self._post_quietly(path, sid)

    # Listings, each in a session of its own, as the SDK client lists (a hosted server routes by the session).

    async def list_environments(self) -> list[str]:
        """The environments the server serves (`GET /list_environments`)."""
        found = await self._retried(
            lambda: self._json_request("GET", "/list_environments", None), "/list_environments", True
        )
        if not isinstance(found, list) or not all(isinstance(name, str) for name in found):
            raise ORSMalformedError(f"{self._at('/list_environments')} answered {_shown(found, self.key)}")
        return found

    async def listing(self, method: str, suffix: str, body: Any = None) -> Any:
        """`{method} /{env}{suffix}` in a session of its own, opened and forgotten around it."""
        path = self._path(suffix)
        sid = await self.create_session()
        try:
            return await self._retried(
                lambda: self._json_request(method, path, sid, body, session=False), path, True
            )
        finally:
            try:
                await self._post_quietly("/delete_session", sid)
            except ORSError as error:
                logger.debug("agent_env: forgetting a listing's session failed: %s", error)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    # The core: one request, its retries, its faults.

    async def _post_quietly(self, path: str, sid: str) -> None:
        """`POST {path}` with no body, for the session `sid`; its answer is not read."""
        await self._retried(lambda: self._json_request("POST", path, sid, None, want=False), path, True)

    def _path(self, suffix: str) -> str:
        return f"/{self.env_name}{suffix}"

    def _at(self, path: str) -> str:
        return f"the ORS server at {self.base_url} ({path})"

    async def _retried(self, attempt: Callable[[], Awaitable[T]], path: str, idempotent: bool) -> T:
        attempts = 0
        started = time.monotonic()
        while True:
            try:
                return await attempt()
            except _Transient as transient:
                self._count(transient.error)
                if transient.starting:
                    if time.monotonic() - started > self.policy.start_timeout:
                        raise transient.error from None
                    await asyncio.sleep(_delay(1, transient.wait))
                    continue
                if transient.sent and not idempotent:
                    raise transient.error from None
                attempts += 1
                if attempts > self.policy.retries:
                    raise transient.error from None
                await asyncio.sleep(_delay(attempts, transient.wait))
            except ORSError as error:
                self._count(error)
                raise

    async def _json_request(
        self,
        method: str,
        path: str,
        sid: str | None,
        body: Any = None,
        *,
        want: bool = True,
        session: bool = True,
    ) -> Any:
        """One request and its JSON answer (None when not `want`ed). `session`: whether the route acts on the
        session `sid` names (so a 404 there means the session is gone), rather than merely carrying it (a listing)."""
        headers = {wire.SESSION_HEADER: sid} if sid else {}
        try:
            response = await self._http.request(
                method, path, headers=headers, **({"json": body} if body is not None else {})
            )
        except httpx.HTTPError as error:
            raise _transport_fault(error, self._at(path), sent=not isinstance(error, _NOT_SENT)) from None
        await self._check(response, path, sid if session else None)
        return _json(response.content, path, self.key, self._at(path)) if want else None

    async def _check(self, response: httpx.Response, path: str, sid: str | None) -> None:
        """Raise what an error status means (a `_Transient` for one that may pass), with the server's `detail`."""
        if response.is_success:
            return
        body = await response.aread()
        detail = _detail(body, self.key)
        status = response.status_code
        said = f"{self._at(path)} answered {status}: {detail}"
        retry_after = _retry_after(response.headers.get("retry-after"))
        if status == 503 and response.headers.get("x-backend-state") == "starting":
            raise _Transient(ORSServerError(said, status=status), sent=False, wait=retry_after, starting=True)
        if status == 429:
            raise _Transient(ORSRateLimitedError(said, status=status), sent=False, wait=retry_after)
        if status in RETRIED_STATUSES:
            raise _Transient(ORSServerError(said, status=status), sent=True, wait=retry_after)
        if status in (401, 403):
            fix = (
                "set the variable api_key_env names to a key this server takes"
                if self.key.variable
                else "it wants a key: name the variable that holds it with api_key_env="
            )
            raise ORSUnauthorizedError(f"{said}; {fix}", status=status)
        if sid is not None and status in (404, 410) and path != "/create":
            raise ORSSessionExpiredError(
                f"{said} (the session is gone: the server reaped it or restarted)", status=status
            )
        if status >= 500:
            raise ORSServerError(said, status=status)
        raise ORSRefusedError(said, status=status)

    async def _call_once(self, path: str, sid: str, body: dict[str, Any]) -> str:
        task_id: str | None = None
        streaming = False  # once the server has answered the call and its stream has begun
        try:
            async with self._http.stream(
                "POST", path, json=body, headers={**_SSE, wire.SESSION_HEADER: sid}
            ) as response:
                await self._check(response, path, sid)
                streaming = True
                reader, chunks = wire.EventReader(), []
                async for line in response.aiter_lines():
                    event = _read(reader, line, self._at(path), self.key)
                    if event is None:
                        continue
                    kind, data = event
                    if kind == wire.TASK_ID:
                        task_id = data.strip()
                    elif kind == wire.CHUNK:
                        chunks.append(data)
                    elif kind == wire.END:
                        chunks.append(data)
                        return "".join(chunks)
                    elif kind == wire.ERROR:
                        said = self.key.redact(data) or "(no message)"
                        if "task_id" in body and said == _UNKNOWN_TASK:
                            raise ORSStreamError(
                                f"{self._at(path)} cut the call's stream short and no longer holds its result to "
                                f"resume (it said {said!r})"
                            )
                        raise ORSToolFailedError(f"the tool raised on the server ({self._at(path)}): {said}")
                    else:
                        raise ORSMalformedError(
                            f"{self._at(path)} sent an event of no kind this wire has: {kind!r}"
                        )
        except httpx.HTTPError as error:
            if streaming and not isinstance(error, httpx.TimeoutException):  # dropped mid-stream
                said = f"{self._at(path)} cut the call's stream short: {type(error).__name__}"
                fault = _Transient(ORSStreamError(said), sent=True)
            else:
                fault = _transport_fault(error, self._at(path), sent=not isinstance(error, _NOT_SENT))
            if task_id is not None or "task_id" in body:
                raise _Resumable(fault, task_id) from None
            raise fault from None
        cut = ORSStreamError(f"{self._at(path)} ended the call's stream before its result")
        raise _Resumable(_Transient(cut, sent=True), task_id)

    async def _events(self, response: httpx.Response, path: str) -> list[tuple[str, str]]:
        reader, events = wire.EventReader(), []
        async for line in response.aiter_lines():
            event = _read(reader, line, self._at(path), self.key)
            if event is not None:
                events.append(event)
                if event[0] == wire.END:
                    return events
                if event[0] == wire.ERROR:
                    raise ORSServerError(f"{self._at(path)} answered an error: {self.key.redact(event[1])}")
        return events

    def _count(self, error: ORSError) -> None:
        self.faults[error.kind] += 1
        logger.info("agent_env: ORS fault (%s): %s", error.kind, error)


class _Resumable(Exception):
    """A call's stream that failed after (or while) resuming, with the `task_id` to resume it by."""

    def __init__(self, transient: _Transient | ORSError, task_id: str | None) -> None:
        super().__init__(str(transient))
        self.transient = transient if isinstance(transient, _Transient) else _Transient(transient, sent=True)
        self.task_id = task_id


_SSE = {"Accept": "text/event-stream"}
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)
"""Failures before the request left: it cannot have run."""


def _transport_fault(error: httpx.HTTPError, where: str, *, sent: bool) -> _Transient:
    if isinstance(error, httpx.TimeoutException):
        fault: ORSError = ORSTimeoutError(f"{where} did not answer in time ({type(error).__name__})")
    else:
        fault = ORSUnavailableError(
            f"{where} cannot be reached or dropped the connection: {type(error).__name__}"
        )
    return _Transient(fault, sent=sent)


def _read(reader: wire.EventReader, line: str, where: str, key: Key) -> tuple[str, str] | None:
    try:
        return reader.line(line)
    except wire.MalformedError as error:
        raise ORSMalformedError(f"{where}: {key.redact(str(error))}") from None


def _result(text: str, where: str, key: Key) -> wire.Output | wire.Refusal:
    try:
        return wire.read_result(text)
    except wire.MalformedError as error:
        raise ORSMalformedError(f"the ORS server's result ({where}): {key.redact(str(error))}") from None


def _json(body: bytes, path: str, key: Key, where: str | None = None) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise ORSMalformedError(
            f"{where or path} answered what is not JSON: {_shown(body.decode(errors='replace'), key)}"
        ) from None


def _detail(body: bytes, key: Key) -> str:
    """What an error answer says: its `detail` (FastAPI's, the SDK server's), its `error.message` (agent_env's), or
    its text, with the key cut out."""
    text = body.decode(errors="replace")
    try:
        value = json.loads(text)
    except ValueError:
        return _shown(text, key)
    if isinstance(value, dict):
        if isinstance(value.get("detail"), str):
            return _shown(value["detail"], key)
        error = value.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _shown(error["message"], key)
    return _shown(text, key)


def _shown(value: Any, key: Key, most: int = 500) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = key.redact(text)
    return text if len(text) <= most else f"{text[:most]}... ({len(text):,} characters)"


def _retry_after(value: str | None) -> float | None:
    if value is None or not value.strip().isdigit():
        return None
    return float(value.strip())


def _delay(attempt: int, asked: float | None) -> float:
    """How long to wait before attempt `attempt` + 1: what the server asked (`Retry-After`), else doubling backoff
    with jitter; capped either way."""
    if asked is not None:
        return min(asked, BACKOFF_CAP)
    base = min(BACKOFF_CAP, BACKOFF_SECONDS * 2 ** (attempt - 1))
    return base * (0.75 + random.random() / 4)


__all__ = ["HEARTBEAT_SECONDS", "Key", "ORSClient", "Policy"]
