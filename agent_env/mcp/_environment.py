"""`MCPEnvironment`: the tools of MCP servers as an agent_env environment, which every provider hosts like any other.

An `MCPEnvironment` is plain, picklable data: which servers, which of their tools, the dataset rows, how an episode is
set up and scored. Each process that uses it builds the environment class from it once (`environment_class()`):
the servers are started, their tools listed (every page), and each tool published the agent_env way (its schema
normalized and checked; calls validated before they are sent). The class's instances are episodes: a reset takes a
connection to each server from its warm pool (a fresh process by default), tools call the server, and the reward is
read while the servers still run; then the connections are let go and their processes stopped. Providers ship the
description, never the class, between processes (`agent_env.envs.EnvironmentSource`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import math
import re
import threading
import uuid
import weakref
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from agent_env._loop import background_loop, on_background_loop, run_sync
from agent_env.environment import Environment
from agent_env.errors import ToolDefinitionError, ToolError
from agent_env.mcp._connection import Connection, ToolsChangedError
from agent_env.mcp._pool import ServerPool
from agent_env.mcp._results import DEFAULT_MAX_RESULT_CHARS, ToolResult, read_result
from agent_env.mcp._servers import HttpServer, Server, StdioServer
from agent_env.schema import fingerprint
from agent_env.schema._describe import short
from agent_env.tools import END_TURN, Tool, ToolSet

logger = logging.getLogger("agent_env.mcp")

DEFAULT_WARM = 2
DEFAULT_CALL_TIMEOUT = 15.0
"""Seconds one call may take; below the served and Ray providers' 20 s, so the server's own timeout speaks first."""
DEFAULT_START_TIMEOUT = 30.0


@dataclass(frozen=True)
class ToolCall:
    """One call the model made that reached a server: the tool (as published), its arguments and the result."""

    name: str
    arguments: dict[str, Any]
    result: ToolResult


class Episode:
    """One episode on MCP servers, as a `setup` or `reward` function sees it.

    Attributes:
        id: The episode's id, as messages name it.
        row: The dataset row it was reset from.
        calls: Every call the model made that reached a server, in order, each with its result (an `isError`
            result is one too; a call refused for its arguments never reaches a server, so it is not here).
    """

    def __init__(
        self, id: str, row: dict[str, Any], runtime: _Runtime, connections: dict[str, Connection]
    ) -> None:
        self.id = id
        self.row = row
        self.calls: list[ToolCall] = []
        self._runtime = runtime
        self._connections = connections

    def directory(self, server: str | None = None) -> Path | None:
        """The scratch folder `{episode_dir}` names for a server (name it when the environment has several)."""
        found = self._connections[self._runtime.server_key(server)].directory
        return Path(found) if found is not None else None

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, server: str | None = None
    ) -> ToolResult:
        """Call a server's tool straight away, from a setup or reward function (not the model: not validated, not
        recorded). `name` is a published name, or with `server=` (or a single server) the server's own name,
        so tools the model is not shown (a scorer, a fixture loader) can be called too.

        Raises:
            ToolError: The server answered with `isError` (its text), or refused the call.
        """
        return run_sync(self.acall_tool(name, arguments, server=server))

    async def acall_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, server: str | None = None
    ) -> ToolResult:
        """`call_tool` for async setup and reward functions."""
        key, tool = self._runtime.route(name, server)
        result = await on_background_loop(self._runtime.send(self, key, tool, dict(arguments or {})))
        if result.is_error:
            raise ToolError(f"tool {tool!r} answered with an error: {result.text}")
        return result

    def __repr__(self) -> str:
        return f"Episode({self.id!r}, {len(self.calls)} calls)"


RewardFunction = Callable[[Episode], "float | Awaitable[float]"]
SetupFunction = Callable[[Episode], "str | Awaitable[str | None] | None"]


@dataclass(frozen=True, eq=False)
class MCPEnvironment:
    """MCP servers' tools as an environment: pass it wherever an environment class goes (`AgentEnv.local`,
    `AgentEnv.ray`, `build_app`, `agent-env serve module:name`); `AgentEnv.mcp(...)` builds one and runs it here.

    Args:
        servers: One server, or several by name (`{"memory": ..., "files": ...}`), whose tools are then published
            as `memory_<tool>`, `files_<tool>` so that none collide.
        reward: How an episode is scored, read while its servers still run: a function of the `Episode` (its row,
            its calls with their results, and `episode.call_tool` to query the servers), or the name of a server
            tool that answers the score (called with no arguments, and not shown to the model). None scores 0.
        rows: The dataset `env.dataset(split)` serves: a list of rows (or a `datasets.Dataset`) for the `train`
            split, or a mapping of split names to them. Each row needs a `prompt`; all of it reaches `setup`.
        setup: Prepares an episode from its row once its servers run (writes files in `episode.directory()`, calls
            tools to load fixtures); what it returns (a string or None) is the observation TRL appends to the prompt.
        tools: The published names of the tools the model is shown (default: all); others are not published.
        skip_unpublishable: Skip, with one warning each, the tools whose names or schemas agent_env cannot publish,
            instead of refusing the environment.
        name: The environment's name (TRL names its reward column after it); default: the servers' own names.
        warm: The fewest connections kept started ahead of time, per server.
        call_timeout: Seconds one call may take; past it the server is stopped and the episode fails.
        start_timeout: Seconds a server may take to start and initialize.
        max_result_chars: The longest result the model reads; longer ones are cut with a note.

    Raises:
        ValueError: A setting is malformed; the message says which and how to fix it.
    """

    servers: Server | Mapping[str, Server]
    reward: RewardFunction | str | None = None
    rows: Any = None
    setup: SetupFunction | None = None
    tools: Collection[str] | None = None
    skip_unpublishable: bool = False
    name: str | None = None
    warm: int = DEFAULT_WARM
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    start_timeout: float = DEFAULT_START_TIMEOUT
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    _built: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        servers = self.servers
        if isinstance(servers, StdioServer | HttpServer):
            keyed: dict[str, Server] = {"": servers}
        elif isinstance(servers, Mapping) and servers:
            keyed = dict(servers)
            for key, server in keyed.items():
                if not (isinstance(key, str) and key.isidentifier()):
                    raise ValueError(
                        f"server name {key!r} must be an identifier: it prefixes its tools' names ({key}_...)"
                    )
                if not isinstance(server, StdioServer | HttpServer):
                    raise ValueError(
                        f"server {key!r} must be a StdioServer or an HttpServer, not {short(server)}"
                    )
        else:
            raise ValueError(
                f"servers must be a StdioServer, an HttpServer, or a non-empty mapping of names to them, not {short(servers)}"
            )
        if self.tools is not None:
            if isinstance(self.tools, str):
                raise ValueError(f"tools must be a list of tool names, not one string ({self.tools!r})")
            object.__setattr__(self, "tools", tuple(self.tools))
        if not (self.reward is None or isinstance(self.reward, str) or callable(self.reward)):
            raise ValueError(
                f"reward must be a function of the episode or a tool name, not {short(self.reward)}"
            )
        if self.setup is not None and not callable(self.setup):
            raise ValueError(f"setup must be a function of the episode, not {short(self.setup)}")
        if not (isinstance(self.warm, int) and not isinstance(self.warm, bool) and self.warm >= 0):
            raise ValueError(f"warm must be a whole number of connections, 0 or more, not {self.warm!r}")
        for setting in ("call_timeout", "start_timeout"):
            seconds = getattr(self, setting)
            if not (isinstance(seconds, int | float) and math.isfinite(seconds) and seconds > 0):
                raise ValueError(f"{setting} must be a positive number of seconds, not {seconds!r}")
        if not (isinstance(self.max_result_chars, int) and self.max_result_chars > 0):
            raise ValueError(
                f"max_result_chars must be a positive whole number, not {self.max_result_chars!r}"
            )
        object.__setattr__(self, "rows", _splits(self.rows))

    def keyed_servers(self) -> dict[str, Server]:
        """The servers by name; a single server's name is `""` (its tools are not prefixed)."""
        if isinstance(self.servers, StdioServer | HttpServer):
            return {"": self.servers}
        return dict(self.servers)

    def environment_class(self) -> type[MCPToolsEnvironment]:
        """The environment class, built once in this process: its servers started and their tools listed.

        Raises:
            ToolDefinitionError: A tool cannot be published (naming the server, the tool and why), unless
                `skip_unpublishable`; a selected tool or the reward tool is not listed.
            ServerUnavailableError, UnauthorizedError: A server did not start, or refused the credentials.
        """
        with _build_lock:
            built: type[MCPToolsEnvironment] | None = self._built.get("class")
            if built is None:
                built = _build_class(self)
                self._built["class"] = built
            return built

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The rows of a split, as given.

        Raises:
            LookupError: No rows were given, or none for that split.
        """
        splits: dict[str, list[dict[str, Any]]] = self.rows or {}
        if split not in splits:
            given = (
                f"the splits are {', '.join(map(repr, splits))}" if splits else "it was given no rows (rows=)"
            )
            raise LookupError(f"{self.label()} has no dataset split {split!r}: {given}")
        return [dict(row) for row in splits[split]]

    def label(self) -> str:
        """How messages name this environment before its servers have named themselves."""
        if self.name:
            return self.name
        return " + ".join(server.label for server in self.keyed_servers().values())

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_built"] = {}  # each process builds its own class, with servers of its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)


_build_lock = threading.RLock()


class MCPToolsEnvironment(Environment):
    """The base of the classes `MCPEnvironment.environment_class()` builds: each instance runs one episode at a time
    on connections taken from its servers' pools, and lets them go once the episode is scored, reset or closed."""

    source: ClassVar[MCPEnvironment]
    runtime: ClassVar[_Runtime]

    def __init__(self) -> None:
        self._episode: Episode | None = None
        self._score: float | None = None
        self._finalizer: weakref.finalize | None = None

    def reset(self, **row: Any) -> str | None:
        """Let go of the last episode's servers, take fresh ones, and run `setup` on them."""
        self._let_go()
        episode = run_sync(self.runtime.open_episode(dict(row)))
        self._episode = episode
        self._score = None
        self._finalizer = weakref.finalize(self, self.runtime.let_go, episode)
        setup = self.source.setup
        if setup is None:
            return None
        try:
            observation = _run_user_function(setup, episode)
            if observation is not None and not isinstance(observation, str):
                raise TypeError(
                    f"{self.source.label()}'s setup must return a string or None, not {short(observation)}"
                )
        except BaseException:
            self._let_go()
            raise
        return observation

    def reward(self) -> float:
        """The episode's score, read once while its servers run; then they are let go."""
        if self._score is None:
            episode = self._episode
            if episode is None:
                raise RuntimeError(
                    "this episode's servers were let go (its session was closed) before its reward was read"
                )
            try:
                self._score = self.runtime.score(episode)
            finally:
                self._let_go()
        return self._score

    def close(self) -> None:
        """Let go of the episode's servers."""
        self._let_go()

    @classmethod
    def shutdown(cls) -> None:
        """Stop every spare server of this class (episodes still open keep theirs until they end)."""
        run_sync(cls.runtime.close())

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The rows given to the `MCPEnvironment` for `split`."""
        return self.source.dataset_rows(split)

    async def call_remote(self, name: str, arguments: dict[str, Any]) -> str:
        """Send one validated call of tool `name` to its server; return the text the model reads.

        Raises:
            ToolError: The server answered with `isError` (its own text) or refused the call.
            CallTimeoutError, EpisodeNotFoundError, ToolsChangedError: The server hung, died or changed its tools.
        """
        episode = self._episode
        if episode is None:  # scored and let go: the session has ended the episode already
            raise ToolError(f"tool '{name}' was called after the episode's servers were let go")
        key, tool = self.runtime.routes[name]
        result = await on_background_loop(self.runtime.send(episode, key, tool, arguments))
        episode.calls.append(ToolCall(name, arguments, result))
        if result.is_error:
            raise ToolError(result.text)
        return result.text

    def _let_go(self) -> None:
        episode, self._episode = self._episode, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if episode is not None:
            self.runtime.let_go(episode)


class _Runtime:
    """The servers of one environment class in this process: their pools, and where each published tool goes."""

    def __init__(self, source: MCPEnvironment) -> None:
        self.source = source
        self.servers = source.keyed_servers()
        self.pools = {
            key: ServerPool(server, warm=source.warm, start_timeout=source.start_timeout, verify=self._verify)
            for key, server in self.servers.items()
        }
        self.routes: dict[str, tuple[str, str]] = {}
        """Published name -> (server key, the server's own tool name)."""
        self.reward_tool: tuple[str, str] | None = None
        self.server_names: dict[str, str] = {}
        self._fingerprints: dict[str, str] = {}

    def server_key(self, server: str | None) -> str:
        """The key of a server named by the user (None: the only one)."""
        if server is None:
            if len(self.servers) == 1:
                return next(iter(self.servers))
            raise ValueError(f"this environment has several servers ({', '.join(self.servers)}): name one")
        if server not in self.servers:
            raise ValueError(
                f"no server named {server!r}; the servers are {', '.join(self.servers) or 'one, unnamed'}"
            )
        return server

    def route(self, name: str, server: str | None) -> tuple[str, str]:
        """Where a setup or reward function's call goes: a published name, or a server's own tool name."""
        if server is None and name in self.routes:
            return self.routes[name]
        return self.server_key(server), name

    async def open_episode(self, row: dict[str, Any]) -> Episode:
        """A new episode with a connection to each server (taken from the warm pools)."""
        episode_id = uuid.uuid4().hex[:8]
        keys = list(self.pools)
        taken = await asyncio.gather(
            *(self.pools[key].acquire(episode_id) for key in keys), return_exceptions=True
        )
        connections = {
            key: outcome for key, outcome in zip(keys, taken, strict=True) if isinstance(outcome, Connection)
        }
        failed = [outcome for outcome in taken if isinstance(outcome, BaseException)]
        if failed:
            for key, connection in connections.items():
                self.pools[key].release(connection)
            raise failed[0]
        return Episode(episode_id, row, self, connections)

    async def send(self, episode: Episode, key: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a server's tool in an episode; the result as the model reads it."""
        connection = episode._connections[key]
        raw = await connection.call_tool(tool, arguments, self.source.call_timeout)
        return read_result(raw, self.source.max_result_chars)

    def score(self, episode: Episode) -> float:
        """The episode's reward: the reward function's, or the reward tool's answer (0 without either)."""
        reward = self.source.reward
        if reward is None:
            return 0.0
        if isinstance(reward, str):
            key, tool = self.reward_tool or self.route(reward, None)
            result = run_sync(self.send(episode, key, tool, {}))
            value: Any = _number(result, tool)
        else:
            value = _run_user_function(reward, episode)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise TypeError(f"{self.source.label()}'s reward must be a finite number, not {short(value)}")
        return float(value)

    def let_go(self, episode: Episode) -> None:
        """Hand an episode's connections back (their processes stop); from any thread, never waiting."""
        connections = list(episode._connections.items())
        episode._connections = {}

        def release() -> None:
            for key, connection in connections:
                self.pools[key].release(connection)

        loop = background_loop()
        if not loop.is_closed():
            loop.call_soon_threadsafe(release)

    async def close(self) -> None:
        """Stop every pool's spare connections."""
        await asyncio.gather(*(pool.close() for pool in self.pools.values()), return_exceptions=True)

    async def start(self) -> dict[str, list[Any]]:
        """Start every server's first connection and list its tools, by server key."""
        keys = list(self.pools)
        started = await asyncio.gather(*(self.pools[key].start() for key in keys), return_exceptions=True)
        failed = [outcome for outcome in started if isinstance(outcome, BaseException)]
        if failed:
            await self.close()
            raise failed[0]
        listings = {}
        for key, (connection, tools) in zip(keys, started, strict=True):  # type: ignore[misc]
            self.server_names[key] = connection.server_name or self.servers[key].label
            listings[key] = tools
        return listings

    def publish(self, listings: dict[str, list[Any]]) -> list[Tool]:
        """The tools to publish from the servers' listings, routed; refusing (or skipping) what cannot be published."""
        source = self.source
        tools: list[Tool] = []
        renamed: list[str] = []
        for key, listed in listings.items():
            label = f"MCP server {self.server_names[key]!r}"
            for entry in listed:
                published = f"{key}_{entry.name}" if key else entry.name
                if isinstance(source.reward, str) and published == source.reward:
                    self.reward_tool = (key, entry.name)
                    continue
                safe = _identifier(published)
                if source.tools is not None and published not in source.tools and safe not in source.tools:
                    continue
                try:
                    tool = Tool.from_schema(safe, entry.description or "", entry.input_schema, _remote(safe))
                except ToolDefinitionError as error:
                    message = (
                        f"{label} lists tool {entry.name!r}, which agent_env cannot publish: {error}. Leave it out "
                        "(tools=[...] names the ones to keep), or pass skip_unpublishable=True to skip every such tool"
                    )
                    if not source.skip_unpublishable:
                        raise ToolDefinitionError(message) from None
                    logger.warning("agent_env: skipped: %s", message)
                    continue
                if safe in self.routes:
                    raise ToolDefinitionError(
                        f"{label} lists tool {entry.name!r}, published as {safe!r}, a name another tool already has; "
                        "give the servers names (servers={'name': ...}) so each one's tools are prefixed, or leave one "
                        "out (tools=[...])"
                    )
                if safe != published:
                    renamed.append(f"{published!r} as {safe!r}")
                self.routes[safe] = (key, entry.name)
                tools.append(tool)
        self._check_selection(listings)
        if renamed:
            logger.warning(
                "agent_env: published %s: a tool name must be a Python identifier for TRL's call parsers to read it "
                "under every template (calls still reach the server under its own name)",
                ", ".join(renamed),
            )
        for key, listed in listings.items():
            self._fingerprints[key] = self._fingerprint(key, listed)
        return tools

    def _check_selection(self, listings: dict[str, list[Any]]) -> None:
        source = self.source
        if isinstance(source.reward, str) and self.reward_tool is None:
            raise ToolDefinitionError(
                f"{source.label()}: the reward tool {source.reward!r} is not among the servers' tools "
                f"({', '.join(self._names(listings))})"
            )
        if source.tools is not None:
            unknown = [
                name
                for name in source.tools
                if name not in self.routes and _identifier(name) not in self.routes
            ]
            if unknown:
                raise ToolDefinitionError(
                    f"{source.label()}: tools= names {', '.join(map(repr, unknown))}, which no server publishes; the "
                    f"tools are: {', '.join(self._names(listings))}"
                )

    @staticmethod
    def _names(listings: dict[str, list[Any]]) -> list[str]:
        return [
            f"{key}_{entry.name}" if key else entry.name
            for key, listed in listings.items()
            for entry in listed
        ]

    def _fingerprint(self, key: str, listed: list[Any]) -> str:
        """The fingerprint of what a server lists of the tools this environment uses: every tool when it was given
        no selection (`tools=`), else the selected ones and the reward tool."""
        used = {tool for route_key, tool in self._used() if route_key == key}
        entries = sorted(
            [entry.name, entry.description or "", entry.input_schema]
            for entry in listed
            if self.source.tools is None or entry.name in used
        )
        return fingerprint(entries)

    def _used(self) -> list[tuple[str, str]]:
        """Every (server key, tool) the environment calls: its published tools and its reward tool."""
        return [*self.routes.values(), *([self.reward_tool] if self.reward_tool else [])]

    def _verify(self, connection: Connection, listed: list[Any]) -> None:
        key = next(key for key, server in self.servers.items() if server is connection.server)
        expected = self._fingerprints.get(key)
        if expected is None:
            return
        found = self._fingerprint(key, listed)
        if found != expected:
            names = sorted(entry.name for entry in listed)
            raise ToolsChangedError(
                f"{connection.label} lists other tools than when the environment was built (tool set {expected}, now "
                f"{found}; it lists {', '.join(names)}): the model was shown the old ones, so this server cannot run "
                "an episode. Start the environment again to use its new tools"
            )


def _build_class(source: MCPEnvironment) -> type[MCPToolsEnvironment]:
    runtime = _Runtime(source)
    listings = run_sync(runtime.start())
    try:
        tools = runtime.publish(listings)
    except BaseException:
        run_sync(runtime.close())
        raise
    name = source.name or "+".join(runtime.server_names[key] for key in runtime.servers)
    namespace = {
        "__module__": __name__,
        "__qualname__": name,
        "__environment_source__": source,
        "source": source,
        "runtime": runtime,
    }
    environment: type[MCPToolsEnvironment] = type(name, (MCPToolsEnvironment,), namespace)
    # A server's own end_turn ends the episode as agent_env's does (the session ends it when it is called).
    own_end = [] if END_TURN in runtime.routes else [Environment.tools[END_TURN]]
    environment.tools = ToolSet([*tools, *own_end])
    return environment


def _remote(name: str) -> Callable[..., Awaitable[str]]:
    async def call(environment: MCPToolsEnvironment, /, **arguments: Any) -> str:
        return await environment.call_remote(name, arguments)

    call.__name__ = name
    return call


def _run_user_function(function: Callable[[Episode], Any], episode: Episode) -> Any:
    """Run a setup or reward function: a plain one here, a coroutine function on the background loop."""
    if inspect.iscoroutinefunction(function):
        return run_sync(function(episode))
    return function(episode)


def _number(result: ToolResult, tool: str) -> float:
    """The score a reward tool answered: a number, as structured content (bare, or the one number of an object,
    or its `score`/`reward`) or as text."""
    value = result.structured
    if isinstance(value, dict):
        numbers = {
            key: item
            for key, item in value.items()
            if isinstance(item, int | float) and not isinstance(item, bool)
        }
        value = next((numbers[key] for key in ("score", "reward") if key in numbers), None)
        if value is None and len(numbers) == 1:
            value = next(iter(numbers.values()))
    if value is None:
        try:
            value = json.loads(result.text)
        except ValueError:
            value = None
    if result.is_error or isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"the reward tool {tool!r} answered {short(result.text)}, not a score (a number)")
    return float(value)


_NOT_IDENTIFIER = re.compile(r"\W", re.ASCII)


def _identifier(name: str) -> str:
    """`name` with every character that cannot be in a Python identifier made `_` (`get-sum` -> `get_sum`)."""
    return name if name.isidentifier() else _NOT_IDENTIFIER.sub("_", name)


def _splits(rows: Any) -> dict[str, list[dict[str, Any]]] | None:
    """The rows by split, each a dict with a `prompt`; a bare list (or `datasets.Dataset`) is the `train` split."""
    if rows is None:
        return None
    splits = rows if isinstance(rows, Mapping) else {"train": rows}
    return {str(split): _rows(str(split), given) for split, given in splits.items()}


def _rows(split: str, given: Any) -> list[dict[str, Any]]:
    if hasattr(given, "column_names") and hasattr(given, "to_list"):  # a datasets.Dataset
        given = given.to_list()
    if not isinstance(given, list | tuple):
        raise ValueError(
            f"rows of split {split!r} must be a list of rows (dicts) or a datasets.Dataset, not {short(given)}"
        )
    listed = [dict(row) if isinstance(row, Mapping) else row for row in given]
    for index, row in enumerate(listed):
        if not isinstance(row, dict):
            raise ValueError(
                f"row {index} of split {split!r} is {short(row)}, not a mapping of column names to values"
            )
        if "prompt" not in row:
            raise ValueError(
                f"row {index} of split {split!r} has no 'prompt' (the conversation TRL starts from, e.g. "
                "[{'role': 'user', 'content': '...'}]); its keys are " + ", ".join(map(repr, row))
            )
    return listed


__all__ = ["Episode", "MCPEnvironment", "MCPToolsEnvironment", "ToolCall"]
