"""An episode on MCP servers as a setup or reward function sees it: its row, its calls, and the live servers."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agent_env._loop import on_background_loop, run_sync
from agent_env.errors import ToolError, UnscoredEpisodeError, raised_text
from agent_env.mcp._connection import Connection
from agent_env.mcp._results import ToolResult
from agent_env.mcp.errors import MCPServerError


@dataclass(frozen=True)
class ToolCall:
    """One call the model made that reached a server: the tool (as published), its arguments and the result."""

    name: str
    arguments: dict[str, Any]
    result: ToolResult


class Servers(Protocol):
    """What an episode asks of its environment's servers (a `ServerSet`, `_runtime.py`): which server a name means,
    where a tool's call goes, and the call sent."""

    def server_key(self, server: str | None) -> str:
        """The key of a server named by the user (None: the only one)."""
        ...

    def route(self, name: str, server: str | None) -> tuple[str, str]:
        """Where a setup or reward function's call goes: (server key, the server's own tool name)."""
        ...

    async def send(self, episode: Episode, key: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a server's tool in `episode`; the result as the model reads it."""
        ...


class Episode:
    """One episode on MCP servers, as a `setup` or `reward` function sees it.

    Attributes:
        id: The episode's id, as messages name it.
        row: The dataset row it was reset from.
        calls: Every call the model made that reached a server, in order, each with its result (an `isError`
            result is one too; a call refused for its arguments never reaches a server, so it is not here).
    """

    def __init__(
        self, id: str, row: dict[str, Any], runtime: Servers, connections: dict[str, Connection]
    ) -> None:
        self.id = id
        self.row = row
        self.calls: list[ToolCall] = []
        self.turn = asyncio.Lock()
        """Held by each of the model's calls while it runs: one at a time, in the order made."""
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


def user_failure(error: BaseException, what: str, episode: Episode) -> BaseException:
    """What a setup or reward function's `error` is raised as: an `UnscoredEpisodeError` saying `what` raised it in
    which MCP episode (the session names the environment and the row), unless it is an MCP server's failure (the
    server's, not the function's: raised as it is) or not an `Exception` (an interrupt). A new error has `error` as
    its `__cause__` already: raise it without `from`."""
    if isinstance(error, MCPServerError | UnscoredEpisodeError) or not isinstance(error, Exception):
        return error
    failure = UnscoredEpisodeError(f"{what} {raised_text(error)} in MCP episode {episode.id}", cause=error)
    failure.__cause__ = error
    return failure


def run_user_function(function: Callable[[Episode], Any], episode: Episode) -> Any:
    """Run a setup or reward function: a plain one in this thread, a coroutine function on the background loop."""
    if inspect.iscoroutinefunction(function):
        return run_sync(function(episode))
    return function(episode)


__all__ = ["Episode", "RewardFunction", "SetupFunction", "ToolCall", "run_user_function", "user_failure"]
