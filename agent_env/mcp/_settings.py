"""`MCPSettings`: what an environment made of MCP servers' tools is, checked as it is made: which servers, which of
their tools, the dataset rows, how an episode is set up and scored, and the limits.

The servers' runtime (`_runtime.py`) and the environment class (`_environment.py`) read these settings; the public
`MCPEnvironment` (`_description.py`) is these settings and builds that class from them, so that nothing below it
needs to import it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from agent_env.errors import SplitNotFoundError
from agent_env.mcp._episode import RewardFunction, SetupFunction
from agent_env.mcp._results import DEFAULT_MAX_RESULT_CHARS
from agent_env.mcp._servers import HttpServer, Server, StdioServer
from agent_env.schema._describe import short

DEFAULT_WARM = 2
DEFAULT_CALL_TIMEOUT = 15.0
"""Seconds one call may take; below the served and Ray providers' 20 s, so the server's own timeout speaks first."""
DEFAULT_START_TIMEOUT = 30.0


@dataclass(frozen=True, eq=False)
class MCPSettings:
    """The settings of an MCP environment, each checked as it is made; `MCPEnvironment` documents them."""

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

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The rows of a split, as given.

        Raises:
            SplitNotFoundError: No rows were given, or none for that split (it names the splits given).
        """
        splits: dict[str, list[dict[str, Any]]] = self.rows or {}
        if split not in splits:
            given = (
                f"the splits are {', '.join(map(repr, splits))}"
                if splits
                else "it was given no rows: give them with MCPEnvironment(..., rows=...) (in a module, named as "
                "module:name), or to agent-env eval with --rows FILE (JSON lines, a row with its prompt a line)"
            )
            raise SplitNotFoundError(
                f"{self.label()} has no dataset split {split!r}: {given}", splits=list(splits)
            )
        return [dict(row) for row in splits[split]]

    def label(self) -> str:
        """How messages name this environment before its servers have named themselves."""
        if self.name:
            return self.name
        return " + ".join(server.label for server in self.keyed_servers().values())


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


__all__ = ["MCPSettings"]
