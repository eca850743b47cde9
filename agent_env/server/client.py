"""The client side: `RemoteProvider` and `RemoteSession`, sessions of a served environment over its control API.

Nothing is validated here: arguments go to the server as they are, and its `LocalSession` checks them, so a call
fails remotely exactly as it fails in process, with the same error class and message. Every request has a
timeout; a server that cannot be reached, forgets an episode, or does not answer in time raises a `RemoteError`
subclass that says which.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from agent_env.errors import AgentEnvError, SessionClosedError, UnscoredEpisodeError
from agent_env.server._connections import ConnectionPool
from agent_env.server._row_references import (
    INLINE_ROW_BYTES,
    ROW_PARAMETER,
    SPLIT_PARAMETER,
    canonical,
    described,
    digest,
    row_digest,
)
from agent_env.server.capacity import DEFAULT_CAPACITY_WAIT, check_wait, with_room
from agent_env.server.errors import (
    CallTimeoutError,
    DatasetNotFoundError,
    EpisodeNotFoundError,
    RemoteError,
    RequestTooLargeError,
    RowNotFoundError,
    ServerUnavailableError,
    TooManyEpisodesError,
    error_class,
)
from agent_env.session import (
    LOST_ENDING,
    REWARD_ENDS,
    EpisodeState,
    Score,
    Session,
    episode_label,
    lost_episode,
    require_running,
    timed_out_ending,
    timed_out_episode,
)

logger = logging.getLogger("agent_env.server")

MAX_CONNECTIONS = 100
"""The most connections one provider opens to its server in one process; requests past that wait their turn."""
KEEPALIVE_EXPIRY = 5.0
"""Seconds an idle connection is kept for the next request."""

ROUTE_HEADER = "X-Agent-Env-Route"
"""The header a session's every request carries, the same on each: a key for a proxy in front of several servers
to hash (docs/scaling.md), so that a session's requests all reach the server that holds its episode."""

NO_BODY: Any = object()
"""`RemoteProvider.request`'s body when the request has none (None is sent as JSON's `null`)."""


class RemoteProvider:
    """Opens sessions of an environment served by `agent-env serve` (or `build_app`); picklable, so it can travel.

    Its state is the URL, the token, the timeout, the wait for room and the environment's name; the HTTP client is
    made on first use in each process, and shared by every session this provider opens (it is safe across threads).

    Args:
        url: The server's base URL (`http://127.0.0.1:8000`; a trailing `/mcp` is ignored).
        token: The server's bearer token, if it has one.
        timeout: Seconds any request may take before it fails with `CallTimeoutError`; keep it above the server's
            call timeout, so the server's own, clearer error arrives first.
        name: The environment's class name; fetched from the server when not given (which checks it is there).
        capacity_wait: Seconds a new episode waits for room on a full server (503 `too_many_episodes`, asked again
            as its `Retry-After` says) before its reset fails as an `InfrastructureFailedError`.

    Raises:
        RemoteError: `name` was not given and the server could not be asked for it.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float = 30.0,
        name: str | None = None,
        capacity_wait: float = DEFAULT_CAPACITY_WAIT,
    ) -> None:
        check_wait(capacity_wait)
        self.url = base_url(url)
        self.token = token
        self.timeout = timeout
        self.capacity_wait = capacity_wait
        self._client: httpx.Client | None = None
        self._client_pid = 0
        self._lock = threading.Lock()
        self._tools: list[dict[str, Any]] | None = None
        self._class: str | None = None
        self._evaluation_split: str | None = None
        self._served: dict[str, str] = {}
        """The split of each row this provider read from the server, by the row's digest (not pickled)."""
        self.name: str = name if name is not None else self._fetch_listing()

    def tools(self) -> list[dict[str, Any]]:
        """The served environment's published tools, as the server lists them (fetched once)."""
        if self._tools is None:
            self._fetch_listing()
        assert self._tools is not None
        return self._tools

    def served_class(self) -> str | None:
        """The `package.module:Class` the server says it serves (fetched with the tools), or None when it names
        none: a class it cannot name so (an `MCPEnvironment`'s, one defined in `__main__`), or another server."""
        if self._tools is None:
            self._fetch_listing()
        return self._class

    def evaluation_split(self) -> str | None:
        """The split the served environment names for evaluation (`Environment.evaluation_split`), listed with the
        tools; None when it names none."""
        if self._tools is None:
            self._fetch_listing()
        return self._evaluation_split

    def open(self) -> RemoteSession:
        """A new session; its server-side episode is opened by the first `reset`."""
        return RemoteSession(self)

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The rows of a dataset split, each one a valid `reset(**row)`."""
        answer = self.request("GET", f"/datasets/{quote(split, safe='')}", action=f"dataset_rows({split!r})")
        rows: list[dict[str, Any]] = answer["rows"]
        for row in rows:  # so that a reset from one of them names it instead of sending it back
            found = row_digest(row)
            if found is not None:
                self._served[found] = split
        return rows

    def reset_request(self, path: str, row: dict[str, Any], route: str | None = None) -> Any:
        """`POST path` starting an episode from `row`: by reference when the server served it (this provider read it
        from the server, or it is too large to send on a guess), else, or when the server does not know it, whole.

        Raises:
            RequestTooLargeError: The row is sent whole and is larger than the server takes; the message names it
                and the server option to raise.
        """
        text = canonical(row)
        if text is not None:
            found = digest(text)
            split = self._served.get(found)
            if split is not None or len(text) > INLINE_ROW_BYTES:
                reference = {ROW_PARAMETER: found} | ({SPLIT_PARAMETER: split} if split is not None else {})
                try:
                    return self.request("POST", f"{path}?{urlencode(reference)}", action="reset", route=route)
                except RowNotFoundError:
                    pass  # not a row the server served as it is (changed, or read elsewhere): send it whole
        try:
            return self.request("POST", path, body=row, action="reset", route=route)
        except RequestTooLargeError as error:
            limit = "--max-body-values" if "JSON values" in str(error) else "--max-body-bytes"
            size = f"{len(text):,} bytes of JSON" if text is not None else "not JSON"
            raise RequestTooLargeError(
                f"reset: the dataset row {described(row)} ({size}) is too large for the server: {error}. It is not a "
                f"row the server served (GET /datasets/{{split}}) as it is, so it was sent whole: start the server "
                f"with a larger {limit}, or reset from the server's own rows unchanged"
            ) from None

    def close(self) -> None:
        """Close this process's HTTP client; the next request opens another."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = NO_BODY,
        action: str,
        timeout: float | None = None,
        route: str | None = None,
    ) -> Any:
        """Send one request to the server and return its JSON answer (None for an empty one); `timeout` (seconds)
        overrides the provider's for this request, and `route`, when given, is sent as the `X-Agent-Env-Route`
        header (a session's every request carries the same one, so that a proxy in front of several servers can
        send them all to the one that holds its episode).

        Raises:
            The error the server answered with, as its own class (`ToolArgumentError`, `EpisodeNotFoundError`,
            ...), `ServerUnavailableError` when the server cannot be reached, `CallTimeoutError` when it does not
            answer within `timeout`.
        """
        limit = httpx.Timeout(timeout) if timeout is not None else httpx.USE_CLIENT_DEFAULT
        headers = {ROUTE_HEADER: route} if route is not None else {}
        try:
            if body is NO_BODY:
                response = self._http().request(method, self.url + path, headers=headers, timeout=limit)
            else:  # `null` too: arguments that are null are sent, for the server's session to refuse
                content = json.dumps(body, ensure_ascii=False).encode()
                headers["Content-Type"] = "application/json"
                response = self._http().request(
                    method, self.url + path, content=content, headers=headers, timeout=limit
                )
        except (httpx.ConnectError, httpx.ConnectTimeout) as error:
            raise ServerUnavailableError(
                f"{action}: cannot reach the agent_env server at {self.url} ({error or type(error).__name__}); "
                "is `agent-env serve` running there?"
            ) from None
        except httpx.PoolTimeout:
            raise CallTimeoutError(
                f"{action}: no answer from the agent_env server at {self.url} within "
                f"{timeout if timeout is not None else self.timeout:g} s: all {MAX_CONNECTIONS} of this process's "
                "connections to it were busy with other calls that long (the server is slower than the calls "
                "come: give it fewer at once, or more time with a larger timeout)"
            ) from None
        except httpx.TimeoutException:
            raise CallTimeoutError(
                f"{action}: no answer from the agent_env server at {self.url} within "
                f"{timeout if timeout is not None else self.timeout:g} s"
            ) from None
        except httpx.TransportError as error:
            raise ServerUnavailableError(
                f"{action}: the connection to the agent_env server at {self.url} failed: "
                f"{type(error).__name__}: {error}"
            ) from None
        if response.status_code >= 400:
            raise wire_error(response, action)
        return response.json() if response.content else None

    def _fetch_listing(self) -> str:
        listing = self.request("GET", "/tools", action="listing the tools")
        self._tools = listing["tools"]
        served = listing.get("class")
        self._class = served if isinstance(served, str) else None
        split = listing.get("evaluation_split")
        self._evaluation_split = split if isinstance(split, str) else None
        name: str = listing["environment"]
        return name

    def _http(self) -> httpx.Client:
        client = self._client
        if client is None or self._client_pid != os.getpid():  # a forked child makes its own connections
            with self._lock:
                if self._client is None or self._client_pid != os.getpid():
                    headers = (
                        {b"Authorization": f"Bearer {self.token}".encode()} if self.token is not None else {}
                    )
                    self._client = httpx.Client(
                        timeout=httpx.Timeout(self.timeout),
                        headers=headers,
                        transport=ConnectionPool(MAX_CONNECTIONS, KEEPALIVE_EXPIRY),
                    )
                    self._client_pid = os.getpid()
                client = self._client
        return client

    def __getstate__(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "token": self.token,
            "timeout": self.timeout,
            "name": self.name,
            "capacity_wait": self.capacity_wait,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        url, token, timeout, name = state["url"], state["token"], state["timeout"], state["name"]
        wait = state.get("capacity_wait", DEFAULT_CAPACITY_WAIT)
        self.__init__(url, token=token, timeout=timeout, name=name, capacity_wait=wait)  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"RemoteProvider({self.url!r}, name={self.name!r})"


class RemoteSession(Session):
    """A session on a served environment: one server-side episode, reset again and again, driven over HTTP.

    The first `reset` opens the episode on the server (waiting for room on a full server, within the provider's
    `capacity_wait`); later ones start the next episode in the same server-side environment instance, as
    `LocalSession` does in process (or a fresh one if the server has forgotten the old). A call or reward before any
    `reset` opens the episode without starting it, so the server answers with the very error a `LocalSession`
    raises. When the server has forgotten the episode (it restarted, or idled it out), the call that finds it gone
    raises `EpisodeNotFoundError` and this session lets go of it: the episode has ended, later calls are refused,
    and its reward raises `InfrastructureFailedError` (unscored, left out by a trainer), as it does when the server
    cannot be reached to read it; the next `reset` starts a new one. A call that does not finish in time (the
    server's call timeout or episode budget, or the client's `timeout`) ends the episode as in process: later calls
    are refused, and its reward raises `TimedOutEpisodeError`.
    """

    def __init__(self, provider: RemoteProvider) -> None:
        self.provider = provider
        self.route = uuid.uuid4().hex
        """This session's routing key (`ROUTE_HEADER`), the same on all its requests."""
        self.episode_id: str | None = None
        self.episode = f"(on the agent_env server at {provider.url})"
        """How messages name the current episode: its row's id (or the row) and where it runs."""
        self._closed = False
        self._pid = os.getpid()
        self._ended: str | None = None
        self._timed_out: CallTimeoutError | None = None
        """The call that did not finish in time and ended the episode, if one did."""
        self._lost: RemoteError | None = None
        """Why the server no longer holds the episode, once a request found it gone."""

    def tools(self) -> list[dict[str, Any]]:
        return self.provider.tools()

    def reset(self, **row: Any) -> str | None:
        self._require_open()
        self._ended, self._timed_out, self._lost = None, None, None
        self.episode = episode_label(row, f"on the agent_env server at {self.provider.url}")
        try:
            return self._reset(row)
        except CallTimeoutError as error:  # the episode never started, and what the reset did is unknown
            self._let_go(wait=False)
            raise timed_out_episode(
                error, environment=self.provider.name, episode=self.episode, starting=True
            ) from error

    def _reset(self, row: dict[str, Any]) -> str | None:
        if self.episode_id is not None:
            try:
                answer = self.provider.reset_request(self._path("reset"), row, self.route)
                observation: str | None = answer["observation"]
                return observation
            except EpisodeNotFoundError:
                self.episode_id = None  # idled out or the server restarted: a reset starts afresh anyway
        answer = with_room(
            lambda: self.provider.reset_request("/episodes", row, self.route),
            wait=self.provider.capacity_wait,
            environment=self.provider.name,
            episode=self.episode,
        )
        self._hold(answer["episode_id"])
        observation = answer["observation"]
        return observation

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        if self._timed_out is not None or self._lost is not None:  # ended here: the server no longer holds it
            require_running(EpisodeState.ENDED, name, ended_by=self._ended or "")
        # Arguments that are no object go as they are: the server's session refuses them, as one in process does.
        body = dict(arguments) if isinstance(arguments, Mapping) else arguments
        try:
            answer = self._episode_request(f"tools/{quote(name, safe='')}", body, f"tool '{name}'")
        except CallTimeoutError as error:
            self._time_out(error, f"tool '{name}'")
            raise
        except AgentEnvError as error:
            self._ended = self._ended or error.ended
            raise
        self._ended = answer.get("ended")
        result: str = answer["result"]
        return result

    def reward(self) -> float:
        return self._scored("reward").reward

    def score(self) -> Score:
        return self._scored("score")

    def _scored(self, action_path: str) -> Score:
        """The episode's reward (`reward`) or its score (`score`), read once: the episode then ends."""
        if self._timed_out is None and self._lost is None:
            try:
                answer = self._episode_request(action_path, NO_BODY, "reward()")
            except CallTimeoutError as error:
                self._time_out(error, "reward()")
            except (EpisodeNotFoundError, ServerUnavailableError) as error:  # gone, or out of reach
                self._let_go(wait=False)
                self._lose(error)
            else:
                self._ended = self._ended or REWARD_ENDS
                return Score(float(answer["reward"]), answer.get("breakdown"))
        if self._timed_out is not None:
            raise timed_out_episode(self._timed_out, environment=self.provider.name, episode=self.episode)
        assert self._lost is not None
        raise lost_episode(self._lost, environment=self.provider.name, episode=self.episode)

    def _time_out(self, error: CallTimeoutError, action: str) -> None:
        """End the episode on `action`, a call that did not finish in time (the session has let go of it)."""
        self._timed_out = error
        self._ended = error.ended = timed_out_ending(error, action)

    def _lose(self, error: RemoteError) -> None:
        """End the episode: the server no longer holds it (`error` says why), or cannot be reached to read it."""
        self._lost, self._ended = error, LOST_ENDING

    def ended(self) -> str | None:
        return self._ended

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._let_go()

    def _episode_request(self, action_path: str, body: Any, action: str) -> Any:
        self._require_open()
        if self.episode_id is None:
            answer = self.provider.request(
                "POST", "/episodes?reset=false", body={}, action=action, route=self.route
            )
            self._hold(answer["episode_id"])
        try:
            return self.provider.request(
                "POST", self._path(action_path), body=body, action=action, route=self.route
            )
        except CallTimeoutError:
            # The server may be out of reach (a dead link, a frozen host): closing the episode meets the same
            # silence, so it happens in the background rather than holding the caller for a second timeout.
            self._let_go(wait=False)
            raise
        except EpisodeNotFoundError as error:
            self._let_go()
            self._lose(error)
            raise

    def _path(self, action_path: str) -> str:
        assert self.episode_id is not None
        return f"/episodes/{self.episode_id}/{action_path}"

    def _hold(self, episode_id: str) -> None:
        """Act on server-side episode `episode_id` from now on; it is closed when this process exits, if not before."""
        self.episode_id = episode_id
        self._pid = os.getpid()
        _holding.add(self)

    def _let_go(self, *, wait: bool = True, timeout: float | None = None) -> None:
        """Forget the server-side episode if there is one, and close it there (on a thread of its own unless `wait`;
        within `timeout` seconds, when given), without raising: it may be gone already."""
        episode_id, self.episode_id = self.episode_id, None
        _holding.discard(self)
        if episode_id is None:
            return
        if wait:
            self._close_episode(episode_id, timeout)
        else:
            threading.Thread(
                target=self._close_episode, args=(episode_id, timeout), name="agent-env-close", daemon=True
            ).start()

    def _close_episode(self, episode_id: str, timeout: float | None) -> None:
        try:
            self.provider.request(
                "DELETE", f"/episodes/{episode_id}", action="close", timeout=timeout, route=self.route
            )
        except RemoteError as error:
            logger.debug("agent_env: closing episode %s: %s", episode_id, error)

    def _require_open(self) -> None:
        if self._closed:
            raise SessionClosedError()


EXIT_TIMEOUT = 5.0
"""Seconds a process that exits gives closing the served episodes its sessions still hold."""

_holding: weakref.WeakSet[RemoteSession] = weakref.WeakSet()
"""The sessions that hold a server-side episode (a trainer rarely closes its environments)."""


@atexit.register
def close_held_episodes() -> None:
    """Close, as this process exits, every served episode its sessions still hold, so a trainer that ends without
    closing its environments does not leave them to the server's idle timeout: best effort (a server that is gone or
    slow is given up on), within `EXIT_TIMEOUT` in all. A forked child leaves its parent's episodes alone."""
    deadline = time.monotonic() + EXIT_TIMEOUT
    for session in list(_holding):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            logger.debug("agent_env: %d served episodes left open at exit", len(_holding))
            return
        if session._pid == os.getpid():
            session._let_go(timeout=remaining)


def base_url(url: str) -> str:
    """The server's base URL: no trailing slash, no `/mcp`."""
    url = url.rstrip("/")
    return url.removesuffix("/mcp") if url.endswith("/mcp") else url


def wire_error(response: httpx.Response, action: str) -> Exception:
    """The error a server's answer carries, as its own class with its own message (and, for a refusal for room,
    the `Retry-After` it gave)."""
    try:
        error = response.json()["error"]
        raised = from_wire(error, response.status_code)
    except (ValueError, KeyError, TypeError):
        return RemoteError(
            f"{action}: HTTP {response.status_code} from {response.request.url}: {response.text[:200]!r}"
        )
    if isinstance(error.get("ended"), str):
        raised.ended = error["ended"]
    if isinstance(raised, TooManyEpisodesError):
        raised.retry_after = retry_after(response.headers.get("Retry-After"))
    return raised


def retry_after(value: str | None) -> float | None:
    """Seconds a `Retry-After` header says to wait (its seconds form; an HTTP date is not read), or None."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds < float("inf") else None


def from_wire(error: Mapping[str, Any], status: int) -> AgentEnvError:
    """The error of a wire form (`_http.wire_form`): its class by code, its message, and the `faults`, `splits` and
    `cause` it carries.

    Raises:
        KeyError, TypeError: `error` is no wire form of an error.
    """
    raised = error_class(str(error["code"]), status)(str(error["message"]))
    faults = error.get("faults")
    if isinstance(faults, Mapping) and hasattr(raised, "faults"):
        raised.faults = {str(kind): int(count) for kind, count in faults.items()}
    splits = error.get("splits")
    if isinstance(splits, list) and isinstance(raised, DatasetNotFoundError):
        raised.splits = tuple(str(split) for split in splits)
    if isinstance(raised, UnscoredEpisodeError):
        raised.crossed = True
        cause = error.get("cause")
        if isinstance(cause, Mapping):
            raised.cause = from_wire(cause, status)
    return raised


__all__ = ["RemoteProvider", "RemoteSession"]
