"""The servers of one MCP environment class in this process: their pools, and where each published tool goes.

A `ServerSet` starts each server's first connection and lists its tools, publishes them (refusing, or skipping, what
cannot be published; naming what was renamed), routes each published name to its server and the server's own name,
opens an episode with a connection from each pool, sends calls, scores episodes, and checks every new listing
against the one published.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import uuid
from typing import TYPE_CHECKING, Any

from agent_env._loop import background_loop, run_sync
from agent_env.errors import ToolDefinitionError, ToolError, UnscoredEpisodeError
from agent_env.mcp._connection import Connection
from agent_env.mcp._episode import Episode, ToolCall, run_user_function, user_failure
from agent_env.mcp._pool import ServerPool
from agent_env.mcp._results import ToolResult, read_result
from agent_env.mcp._settings import MCPSettings
from agent_env.mcp._supervisor import owner_mark
from agent_env.mcp.errors import MCPServerError, ToolsChangedError
from agent_env.schema import fingerprint
from agent_env.schema._describe import short
from agent_env.tools import Tool
from agent_env.tools import python_identifier as _identifier

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

logger = logging.getLogger("agent_env.mcp")


class ServerSet:
    """The servers of one environment class in this process: their pools, and where each published tool goes."""

    def __init__(self, source: MCPSettings) -> None:
        owner_mark()  # start this process's reaper here, off the background loop its servers start on
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

    async def call(self, episode: Episode, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the model's call of published tool `name` in `episode` and record it: one at a time per episode, in
        the order made, as TRL runs a reply's calls in order on Python 3.11 (on 3.12 and later it may start them
        together, and a server's state, like server-memory's file, must not see them race)."""
        async with episode.turn:
            key, tool = self.routes[name]
            result = await self.send(episode, key, tool, arguments)
            episode.calls.append(ToolCall(name, arguments, result))
            return result

    async def send(self, episode: Episode, key: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a server's tool in an episode; the result as the model reads it."""
        connection = episode._connections[key]
        raw = await connection.call_tool(tool, arguments, self.source.call_timeout, episode=episode.id)
        return read_result(raw, self.source.max_result_chars)

    def score(self, episode: Episode) -> Any:
        """The episode's reward: the reward function's, or the reward tool's answer (0 without either). The session
        holds it to being a finite number, as it holds every environment's (`checked_reward`).

        An episode whose server failed (died, hung, changed its tools: its state is gone) scores 0, with a warning
        naming the server and why: one broken rollout must not stop a trainer's step, which reads every reward.

        Raises:
            UnscoredEpisodeError: The reward function raised, or the reward tool answered an error or no number; the
                message names the MCP episode (the session adds the environment and the row).
        """
        reward = self.source.reward
        if reward is None:
            return 0.0
        try:
            for connection in episode._connections.values():
                connection.check_alive()
            if isinstance(reward, str):
                key, tool = self.reward_tool or self.route(reward, None)
                try:
                    return _number(run_sync(self.send(episode, key, tool, {})), tool)
                except ToolError as error:
                    raise UnscoredEpisodeError(f"{error} in MCP episode {episode.id}", cause=error) from error
            return run_user_function(reward, episode)
        except MCPServerError as error:
            logger.warning(
                "agent_env: episode %s scores 0: its reward could not be read: %s", episode.id, error
            )
            return 0.0
        except Exception as error:
            raise user_failure(error, "its reward function raised", episode)  # noqa: B904 (its cause is set)

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

    def let_go_unclaimed(self, opening: concurrent.futures.Future[Episode]) -> None:
        """Let go of an episode that opened after its reset stopped waiting for it (interrupted), so that its servers
        do not run unowned until the process ends."""
        if not opening.cancelled() and opening.exception() is None:
            self.let_go(opening.result())

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

    def publish(
        self, listings: dict[str, list[Any]], remote: Callable[[str], Callable[..., Awaitable[str]]]
    ) -> list[Tool]:
        """The tools to publish from the servers' listings, routed; refusing (or skipping) what cannot be published.

        Args:
            listings: What each server listed, by server key.
            remote: Makes the function a published tool runs: given the published name, it sends the call.
        """
        source = self.source
        tools: list[Tool] = []
        renamed: list[str] = []
        for key, listed in listings.items():
            label = f"MCP server {self.server_names[key]!r}"
            for entry in listed:
                published = f"{key}_{entry.name}" if key else entry.name
                if isinstance(source.reward, str) and published == source.reward:
                    _check_reward_tool(label, entry)
                    self.reward_tool = (key, entry.name)
                    continue
                safe = _identifier(published)
                if source.tools is not None and published not in source.tools and safe not in source.tools:
                    continue
                try:
                    tool = Tool.from_schema(
                        safe,
                        entry.description or "",
                        entry.input_schema,
                        remote(safe),
                        listed_name=entry.name,
                    )
                except ToolDefinitionError as error:
                    message = f"{label} lists tool {entry.name!r}, which agent_env cannot publish"
                    if not source.skip_unpublishable:
                        raise ToolDefinitionError(
                            f"{message}: leave it out (tools=[...] names the ones to keep), or pass "
                            f"skip_unpublishable=True to skip every such tool. Why it cannot: {error}"
                        ) from None
                    logger.warning("agent_env: skipped (skip_unpublishable=True): %s: %s", message, error)
                    continue
                if safe in self.routes:
                    other_key, other = self.routes[safe]
                    fix = (
                        "leave one out (tools=[...])"
                        if other_key == key
                        else "give the servers names (servers={'name': ...}) so each one's tools are prefixed, or "
                        "leave one out (tools=[...])"
                    )
                    raise ToolDefinitionError(
                        f"{label} lists tool {entry.name!r}, published as {safe!r}, a name its tool {other!r} "
                        f"already has; {fix}"
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
            if isinstance(source.reward, str) and source.reward in source.tools:
                raise ToolDefinitionError(
                    f"{source.label()}: tools= names {source.reward!r}, the reward tool, which the model is not "
                    "shown (agent_env calls it to score each episode); leave it out of tools="
                )
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
    if result.is_error:
        raise ToolError(f"the reward tool {tool!r} answered with an error: {short(result.text)}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"the reward tool {tool!r} answered {short(result.text)}, not a score (a number)")
    return float(value)


def _check_reward_tool(label: str, entry: Any) -> None:
    """Refuse a reward tool that requires arguments: agent_env calls it with none, so every episode would fail."""
    schema = entry.input_schema if isinstance(entry.input_schema, dict) else {}
    required = schema.get("required") or []
    if required:
        raise ToolDefinitionError(
            f"the reward tool {entry.name!r} of {label} requires arguments ({', '.join(map(str, required))}), but "
            "agent_env calls it with none to score an episode; name a tool that takes none, or give a reward "
            f"function that calls it with what it needs: `def reward(episode): return "
            f"episode.call_tool({entry.name!r}, {{...}}).json()`"
        )


__all__ = ["ServerSet"]
