"""Sessions of an OpenEnv environment over its `/ws`: its MCP tools with their full schemas, held to them here.

`OpenEnvProvider(url)` lists the server's tools once (a `list_tools` step), puts each tool's `input_schema` (or
`inputSchema`) through agent_env's normalizer and metaschema check, and adds agent_env's `end_turn` unless the
server has its own (and, beside a simulated user's `message_user`, its hidden `agent_aside`, which no listing
shows). An `OpenEnvSession` is one WebSocket, so one environment instance on the server: `reset` sends
the dataset row, a tool call is validated here and refused before it leaves the process if it breaks the schema,
and the reward is the one the last step that returned one carried (OpenEnv's environments reward a step, often the
one that ends the episode, with `done: true`). Only `/ws` is used, never OpenEnv's `POST /mcp`, because that path
carries no reward and no `done`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from agent_env._deadline import DEFAULT_EPISODE_BUDGET, Deadline, check_limit
from agent_env.environment import TURN_ENDED, Environment
from agent_env.errors import (
    AgentEnvError,
    CallTimeoutError,
    SessionClosedError,
    ToolArgumentError,
    ToolDefinitionError,
    ToolError,
    UnknownToolError,
    UnscoredEpisodeError,
)
from agent_env.openenv import _wire as wire
from agent_env.openenv._transport import Connection, Transport, WebSocketTransport, base_url
from agent_env.schema._validator import short
from agent_env.server.capacity import DEFAULT_CAPACITY_WAIT, check_wait, while_full, with_room
from agent_env.server.errors import (
    DatasetNotFoundError,
    EpisodeNotFoundError,
    InvalidRequestError,
    RemoteError,
    ResetError,
    ServerError,
    ServerUnavailableError,
    TooManyEpisodesError,
)
from agent_env.session import (
    EpisodeState,
    Session,
    episode_label,
    lost_episode,
    nothing_to_score,
    require_running,
    timed_out_ending,
    timed_out_episode,
)
from agent_env.tools import END_TURN, Tool, ToolSet
from agent_env.users import ASIDE, USER_CHANNEL, UserChat

_REFUSALS = frozenset({wire.CAPACITY_REACHED, wire.FACTORY_ERROR, wire.SESSION_ERROR})
"""Error codes a server sends before it closes the connection: no session there."""

END_TURN_CALLED = "end_turn was called"
"""What ended an episode, as the message of a later call says it, when end_turn did."""

DEFAULT_NAME = "OpenEnv"
"""The environment's name when the server's `/metadata` gives none."""


class OpenEnvProvider:
    """Opens sessions of an environment served by OpenEnv (or by `agent-env serve --openenv`); picklable.

    It pickles as its URL, headers, timeout, name and limits (and its transport, when it is not the default one);
    each process lists the tools again on first use, and every session opens its own WebSocket on its first `reset`.

    Args:
        url: The server's base URL (`http://127.0.0.1:8000`, or `http://host:8000/openenv` for an agent_env server);
            `ws://` and `wss://` work too.
        headers: Sent with every connection, e.g. `{"Authorization": "Bearer <token>"}`.
        timeout: Seconds to connect, and to wait for any answer, before failing with a `RemoteError` (an answer to
            a call: `CallTimeoutError`, which ends the episode).
        name: The environment's name (TRL names the reward after it); fetched from `/metadata` when not given.
        transport: How to reach the server; the default speaks WebSockets (`websockets`) and HTTP (`httpx`).
        episode_budget: Seconds all the answers of one episode (its reset, its calls, its reward) may take together;
            past it the call waiting fails with `EpisodeBudgetError`, and the episode ends unscored. None: no limit.
        capacity_wait: Seconds a new session waits for room on a full server (`CAPACITY_REACHED`) before its reset
            fails as an `InfrastructureFailedError`.

    Raises:
        ToolDefinitionError: A tool's name or schema cannot be published as agent_env publishes tools, or the
            environment takes no MCP tool calls.
        RemoteError: The server cannot be reached, or refused the connection.
    """

    url: str
    headers: dict[str, str]
    timeout: float
    name: str
    transport: Transport
    episode_budget: float | None
    capacity_wait: float
    _tools: ToolSet | None
    _class: str | None
    _lock: threading.Lock

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        name: str | None = None,
        transport: Transport | None = None,
        episode_budget: float | None = DEFAULT_EPISODE_BUDGET,
        capacity_wait: float = DEFAULT_CAPACITY_WAIT,
    ) -> None:
        check_limit("episode_budget", episode_budget)
        check_wait(capacity_wait)
        self.episode_budget = episode_budget
        self.capacity_wait = capacity_wait
        self._restore(base_url(url), dict(headers or {}), timeout, name, transport)
        if name is None:
            self.name = self.transport.environment_name() or DEFAULT_NAME
        self.tool_set()  # fail here, at registration, not on a trainer's first call

    def tools(self) -> list[dict[str, Any]]:
        """The published tools (`name`, `description`, `inputSchema`), `end_turn` last."""
        return self.tool_set().published

    def tool_set(self) -> ToolSet:
        """The tools, listed from the server once per process."""
        with self._lock:
            if self._tools is None:
                self._tools = ToolSet(self._held_tools(self._list_tools()))
            return self._tools

    def served_class(self) -> str | None:
        """The `package.module:Class` an agent_env server names in its tool listing's metadata (listed once per
        process), or None when it names none (another OpenEnv server, or a class it cannot name so)."""
        self.tool_set()
        return self._class

    def open(self) -> OpenEnvSession:
        """A new session; it connects on its first `reset`."""
        return OpenEnvSession(self)

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """OpenEnv's `/ws` publishes no datasets: this raises `DatasetNotFoundError` saying what to do instead."""
        raise DatasetNotFoundError(
            f"no dataset split {split!r}: an OpenEnv server publishes no datasets over /ws. Give the trainer your "
            "own dataset, whose columns are the keyword arguments the server's environment's reset takes"
        )

    def close(self) -> None:
        """Nothing to free in this process: each session holds (and closes) its own connection."""

    def _list_tools(self) -> list[Any]:
        return while_full(
            self._list_tools_once, wait=self.capacity_wait
        )  # a full server refuses the listing too

    def _list_tools_once(self) -> list[Any]:
        connection = self.transport.connect()
        try:
            reply = exchange(
                connection, {"type": "step", "data": {"type": "list_tools"}}, "listing the tools"
            )
            data = observation_data(reply, "listing the tools")
        except InvalidRequestError as error:
            raise ToolDefinitionError(
                f"the OpenEnv environment at {self.url} takes no MCP tool calls (it refused list_tools: {error}); "
                "AgentEnv.openenv trains on OpenEnv environments with MCP tools"
            ) from None
        finally:
            hang_up(connection)
        observation = data.get("observation")
        if not isinstance(observation, dict) or not isinstance(observation.get("tools"), list):
            raise RemoteError(
                f"listing the tools: the OpenEnv server at {self.url} answered {short(observation)}"
            )
        tools: list[Any] = observation["tools"]
        metadata = observation.get("metadata")
        failure = metadata.get("error") if isinstance(metadata, dict) else None
        served = metadata.get(wire.SERVED_CLASS) if isinstance(metadata, dict) else None
        self._class = served if isinstance(served, str) else None
        if not tools and failure:
            raise RemoteError(f"listing the tools failed on the OpenEnv server: {failure}")
        return tools

    def _held_tools(self, listed: list[Any]) -> list[Tool]:
        tools = []
        for entry in listed:
            name = entry.get("name") if isinstance(entry, dict) else None
            try:
                if not isinstance(name, str):
                    raise ToolDefinitionError(f"a listed tool has no name: {short(entry)}")
                description = entry.get("description") or ""
                tools.append(
                    Tool.from_schema(name, str(description), wire.listed_schema(entry), _remote(name))
                )
            except ToolDefinitionError as error:
                raise ToolDefinitionError(
                    f"the OpenEnv server at {self.url} publishes a tool that agent_env cannot hold calls to: {error}"
                ) from None
        names = [tool.name for tool in tools]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ToolDefinitionError(f"the OpenEnv server at {self.url} lists tool names twice: {twice}")
        if END_TURN not in names:
            tools.append(_END_TURN)
        if USER_CHANNEL in names and ASIDE not in names:  # a user's channel has its hidden aside beside it
            tools.append(_ASIDE)
        return tools

    def _restore(
        self, url: str, headers: dict[str, str], timeout: float, name: str | None, transport: Transport | None
    ) -> None:
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.name = name or DEFAULT_NAME
        self._default_transport = transport is None
        self.transport = transport or WebSocketTransport(url, headers, timeout)
        self._tools: ToolSet | None = None
        self._class: str | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = {
            "url": self.url,
            "headers": self.headers,
            "timeout": self.timeout,
            "name": self.name,
            "episode_budget": self.episode_budget,
            "capacity_wait": self.capacity_wait,
        }
        return state if self._default_transport else {**state, "transport": self.transport}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.episode_budget = state.get("episode_budget", DEFAULT_EPISODE_BUDGET)
        self.capacity_wait = state.get("capacity_wait", DEFAULT_CAPACITY_WAIT)
        self._restore(state["url"], state["headers"], state["timeout"], state["name"], state.get("transport"))

    def __repr__(self) -> str:
        return f"OpenEnvProvider({self.url!r}, name={self.name!r})"


class OpenEnvSession(Session):
    """One episode at a time on one WebSocket to an OpenEnv server (one environment instance there).

    The connection opens on the first `reset`, and each `reset` starts the next episode on it. A call is checked
    here first (an unknown tool, arguments that break the schema, no episode running: the in-process errors, and
    nothing is sent). The server's answer then counts: a `done: true` ends the episode, a reward is kept, and a tool
    error comes back as `ToolArgumentError` (`invalid_args`), `UnknownToolError` (`tool_not_found`) or `ToolError`
    with the server's message. If the connection drops or an answer times out, the server's environment is gone with
    it: calls fail with `EpisodeNotFoundError` until a `reset` opens a new connection, and the reward of an episode
    lost so before it ended raises `InfrastructureFailedError` (unscored, left out by a trainer). A call that gets
    no answer in time (the provider's `timeout`, or what is left of the episode's budget), or that the server says
    timed out, ends the episode as in process: later calls are refused, and its reward raises
    `TimedOutEpisodeError`.
    """

    def __init__(self, provider: OpenEnvProvider) -> None:
        self.provider = provider
        self.state = EpisodeState.NEW
        self._connection: Connection | None = None
        self._reward: float | None = None
        self._lost: str | None = None
        self._ended_by = END_TURN_CALLED
        self._unscored: str | None = None
        """Why the server could not score the episode, once the step that ends it failed there."""
        self._timed_out: CallTimeoutError | None = None
        """The call that did not finish in time and ended the episode, if one did."""
        self._deadline = Deadline(provider.timeout, provider.episode_budget)
        self.episode = f"(on the OpenEnv server at {provider.url})"
        """How messages name the current episode: its row's id (or the row) and where it runs."""
        self._lock = threading.RLock()

    def tools(self) -> list[dict[str, Any]]:
        return self.provider.tools()

    def reset(self, **row: Any) -> str | None:
        with self._lock:
            self._require_open()
            self.episode = episode_label(row, f"on the OpenEnv server at {self.provider.url}")
            self.state = EpisodeState.NEW  # a reset that fails leaves no episode running
            self._timed_out = None
            self._deadline.begin()
            try:
                data = with_room(
                    lambda: self._start(row),
                    wait=self.provider.capacity_wait,
                    environment=self.provider.name,
                    episode=self.episode,
                )
            except CallTimeoutError as error:  # the episode never started, and what the reset did is unknown
                raise timed_out_episode(
                    error, environment=self.provider.name, episode=self.episode, starting=True
                ) from error
            self.state = EpisodeState.RUNNING
            self._reward = None
            self._lost = None
            self._unscored = None
            self._ended_by = END_TURN_CALLED
            observation = data.get("observation")
            return wire.observation_text(observation) if isinstance(observation, dict) else None

    def _start(self, row: dict[str, Any]) -> dict[str, Any]:
        """Send the reset, on a new connection when the session has none (a full server refuses it there)."""
        if self._connection is None:
            self._connection = self.provider.transport.connect()
        return self._exchange({"type": "reset", "data": row}, "reset")

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        tool = self.provider.tool_set().resolve(name)
        with self._lock:
            self._require_running(name)
            try:
                result: str = tool.function(self, **tool.bind(arguments))
            except CallTimeoutError as error:
                self._time_out(error, f"tool '{name}'")
                raise
            if name == END_TURN:
                self.state = EpisodeState.ENDED
                self._ended_by = END_TURN_CALLED
            return result

    def _time_out(self, error: CallTimeoutError, action: str) -> None:
        """End the episode on `action`, a call that did not finish in time."""
        self._timed_out = error
        self.state = EpisodeState.ENDED
        self._ended_by = error.ended = timed_out_ending(error, action)

    def reward(self) -> float:
        with self._lock:
            self._require_open()
            if self.state is EpisodeState.NEW:
                raise nothing_to_score()
            if self._timed_out is not None:
                raise timed_out_episode(self._timed_out, environment=self.provider.name, episode=self.episode)
            if self._lost is not None and self.state is EpisodeState.RUNNING:  # gone with its connection
                raise lost_episode(
                    EpisodeNotFoundError(self._lost), environment=self.provider.name, episode=self.episode
                )
            if self._unscored is None and self.state is EpisodeState.RUNNING and self._lost is None:
                try:
                    self.call_tool(END_TURN, {})
                except (ToolError, ServerError) as error:  # the server's environment failed to end it
                    self._unscored = f"ending it to read its reward failed on the server: {error}"
                self._ended_by = "its reward was read, which ends a running episode"
            if self._unscored is not None:
                unscored = UnscoredEpisodeError(
                    self._unscored, environment=self.provider.name, episode=self.episode
                )
                unscored.crossed = True  # the server's failure: its traceback is in the server's log
                raise unscored
            return self._reward if self._reward is not None else 0.0

    def ended(self) -> str | None:
        return self._ended_by if self.state is EpisodeState.ENDED else None

    def close(self) -> None:
        with self._lock:
            if self.state is EpisodeState.CLOSED:
                return
            self.state = EpisodeState.CLOSED
            connection, self._connection = self._connection, None
        if connection is not None:
            hang_up(connection)

    def step_call(self, name: str, arguments: dict[str, Any]) -> str:
        """Send one validated call and read its answer: the result text, or the tool's error raised."""
        message = {"type": "step", "data": {"type": "call_tool", "tool_name": name, "arguments": arguments}}
        try:
            data = self._exchange(message, f"tool '{name}'")
        except (
            ServerError
        ) as failed:  # the server's environment failed on the step that would end and score it
            if name == END_TURN:
                self._unscored = f"the server failed the end_turn step that scores it: {failed}"
            raise
        reward = data.get("reward")
        if isinstance(reward, int | float):
            self._reward = float(reward)
        if data.get("done") is True:
            self.state = EpisodeState.ENDED
            self._ended_by = f"the server answered tool '{name}' with done: true"
        observation = data.get("observation")
        if not isinstance(observation, dict):
            return wire.as_text(observation)
        error = observation.get("error")
        if error:
            raise tool_error(error)
        if (
            "tool_name" not in observation
        ):  # a plain observation, as environments send on the step that scores
            return wire.observation_text(observation) or ""
        text, is_error = wire.result_text(observation.get("result"))
        if is_error:
            raise ToolError(text)
        return text

    def _exchange(self, message: dict[str, Any], action: str) -> dict[str, Any]:
        connection = self._connection
        if connection is None:
            raise EpisodeNotFoundError(
                self._lost or f"{action}: this session has no connection; call reset(...)"
            )
        deadline = self._deadline
        started = time.monotonic()
        try:
            reply = exchange(connection, message, action, deadline.timeout())
        except (CallTimeoutError, ServerUnavailableError) as error:
            failure = error
            if isinstance(error, CallTimeoutError) and deadline.bounded_by_budget:
                failure = deadline.expired(
                    action, whose="the client's", then="the episode was lost with its connection"
                )
            self._drop(
                f"{failure}; the episode was lost with its connection: call reset(...) to start another"
            )
            raise failure from None
        finally:
            deadline.charge(time.monotonic() - started)
        if reply["type"] != "error":
            return observation_data(reply, action)
        refusal = server_error(reply["data"])
        code = reply["data"].get("code")
        if code in _REFUSALS:  # the server closes the connection after these
            self._drop(f"{refusal}; call reset(...) to open another session")
        if action == "reset" and code == wire.EXECUTION_ERROR:
            if (
                reply["data"].get("error_type") == wire.TOOL_TIMEOUT
            ):  # an agent_env server's reset out of time
                raise CallTimeoutError(str(refusal))
            raise ResetError(str(refusal))
        raise refusal

    def _drop(self, reason: str) -> None:
        connection, self._connection = self._connection, None
        self._lost = reason
        if connection is not None:
            connection.close()

    def _require_open(self) -> None:
        if self.state is EpisodeState.CLOSED:
            raise SessionClosedError()

    def _require_running(self, name: str) -> None:
        self._require_open()
        if self._lost is not None and self.state is EpisodeState.RUNNING:
            raise EpisodeNotFoundError(self._lost)
        require_running(self.state, name, ended_by=self._ended_by)


def exchange(
    connection: Connection, message: dict[str, Any], action: str, timeout: float | None = None
) -> dict[str, Any]:
    """Send one message and return the server's answer, an OpenEnv message (`{"type", "data"}`), waiting for it no
    longer than `timeout` seconds (None: the connection's own timeout).

    Raises:
        InvalidRequestError: What was to be sent is not JSON.
        RemoteError: The answer is not an OpenEnv message.
        The connection's own errors (`CallTimeoutError`, `ServerUnavailableError`).
    """
    try:
        text = wire.dumps(message)
    except (TypeError, ValueError) as error:
        raise InvalidRequestError(
            f"{action}: what was to be sent is not JSON ({error}); send JSON values"
        ) from None
    with contextlib.suppress(
        ServerUnavailableError
    ):  # a refusing server sends why, then closes: read it below
        connection.send(text)
    answer = connection.recv(timeout)
    try:
        reply = json.loads(answer)
    except ValueError:
        reply = None
    if (
        not isinstance(reply, dict)
        or not isinstance(reply.get("type"), str)
        or not isinstance(reply.get("data"), dict)
    ):
        raise RemoteError(f"{action}: the OpenEnv server answered {short(answer)}, not an OpenEnv message")
    return reply


def observation_data(reply: dict[str, Any], action: str) -> dict[str, Any]:
    """The data of an observation message (`{"observation", "reward", "done"}`); an error message raised as its
    error."""
    if reply["type"] == "error":
        raise server_error(reply["data"])
    if reply["type"] != "observation":
        raise RemoteError(f"{action}: the OpenEnv server answered a {short(reply['type'])} message")
    data: dict[str, Any] = reply["data"]
    return data


def server_error(data: dict[str, Any]) -> AgentEnvError:
    """The error an OpenEnv `{"type": "error"}` message carries, as agent_env's class for its code."""
    code, message = data.get("code"), str(data.get("message", "the OpenEnv server answered with an error"))
    if code == wire.CAPACITY_REACHED:
        return TooManyEpisodesError(message)
    if code in (wire.INVALID_JSON, wire.UNKNOWN_TYPE, wire.VALIDATION_ERROR):
        return InvalidRequestError(message)
    return ServerError(message)


def tool_error(error: Any) -> ToolError | CallTimeoutError:
    """The error of a call's observation (`{"error_type", "message"}`), as the in-process class for its type (a
    call the server gave up on, `timeout`, a `CallTimeoutError`)."""
    error_type = error.get("error_type") if isinstance(error, dict) else None
    message = str(error.get("message")) if isinstance(error, dict) else wire.as_text(error)
    if error_type == wire.INVALID_ARGS:
        return ToolArgumentError(message)
    if error_type == wire.TOOL_NOT_FOUND:
        return UnknownToolError(message)
    if error_type == wire.TOOL_TIMEOUT:
        return CallTimeoutError(message)
    return ToolError(message)


def hang_up(connection: Connection) -> None:
    """Tell the server the session is over, then close; never raises."""
    with contextlib.suppress(AgentEnvError):
        connection.send(wire.dumps({"type": "close"}))
    connection.close()


def _remote(name: str) -> Callable[..., str]:
    def call(session: OpenEnvSession, /, **arguments: Any) -> str:
        return session.step_call(name, arguments)

    call.__name__ = name
    return call


def _end_turn(session: OpenEnvSession, /) -> str:
    return TURN_ENDED


_local_end_turn = Environment.tools[END_TURN]
_END_TURN = Tool.from_schema(END_TURN, _local_end_turn.description, _local_end_turn.input_schema, _end_turn)
"""agent_env's `end_turn`, for servers without one: it ends the episode here, and sends nothing."""

_local_aside = ToolSet.collect(UserChat).resolve(ASIDE)
_ASIDE = replace(
    Tool.from_schema(ASIDE, _local_aside.description, _local_aside.input_schema, _remote(ASIDE)), hidden=True
)
"""agent_env's hidden `agent_aside` (`agent_env.users.ASIDE`), which an agent_env server's `message_user` has beside
it though no listing shows it: sent to the server like any call, so an eval's asides reach a served τ² episode."""


__all__ = ["OpenEnvProvider", "OpenEnvSession", "WebSocketTransport"]
