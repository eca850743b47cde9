"""`MCPEnvironment`: a picklable description of an environment made of MCP servers' tools.

It says which servers, which of their tools, the dataset rows, and how an episode is set up and scored. Each process
that uses it builds the environment class from it once (`environment_class()`: its servers started, their tools
listed and published), and providers ship the description, never the class, between processes: it is an
`agent_env.environment.EnvironmentSource`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_env.mcp._episode import RewardFunction, SetupFunction
from agent_env.mcp._results import DEFAULT_MAX_RESULT_CHARS
from agent_env.mcp._servers import HttpServer, Server, StdioServer
from agent_env.schema._describe import short

if TYPE_CHECKING:
    from agent_env.mcp._environment import MCPToolsEnvironment

DEFAULT_WARM = 2
DEFAULT_CALL_TIMEOUT = 15.0
"""Seconds one call may take; below the served and Ray providers' 20 s, so the server's own timeout speaks first."""
DEFAULT_START_TIMEOUT = 30.0


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
        if not (_whole(self.warm) and self.warm >= 0):
            raise ValueError(f"warm must be a whole number of connections, 0 or more, not {self.warm!r}")
        for setting in ("call_timeout", "start_timeout"):
            seconds = getattr(self, setting)
            if not (_number(seconds) and math.isfinite(seconds) and seconds > 0):
                raise ValueError(f"{setting} must be a positive number of seconds, not {seconds!r}")
        if not (_whole(self.max_result_chars) and self.max_result_chars > 0):
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
            MCPStartError: A server did not start, or refused the credentials.
        """
        with _build_lock:
            built: type[MCPToolsEnvironment] | None = self._built.get("class")
            if built is None:
                from agent_env.mcp._environment import build_class

                built = build_class(self)
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
                f"the splits are {', '.join(map(repr, splits))}"
                if splits
                else "it was given no rows: give them with MCPEnvironment(..., rows=...) (in a module, named as "
                "module:name), or to agent-env eval with --rows FILE (JSON lines, a row with its prompt a line)"
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


def _whole(value: Any) -> bool:
    """Whether `value` is an int (`True` is not a count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    """Whether `value` is an int or a float (`True` is not a number of seconds)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


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


__all__ = ["MCPEnvironment"]
