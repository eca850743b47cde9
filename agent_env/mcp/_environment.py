"""The environment class an `MCPEnvironment` builds in each process: its instances are episodes on MCP servers.

An instance runs one episode at a time: a reset takes a connection to each server from its warm pool (a fresh
process by default) and runs `setup`; tools send validated calls to the servers; the reward is read while the
servers still run; then the connections are let go and their processes stopped.
"""

from __future__ import annotations

import weakref
from typing import Any, ClassVar

from agent_env._loop import on_background_loop, prefer_uvloop, run_sync, submit
from agent_env.environment import Environment, built_class, remote_tool
from agent_env.errors import EpisodeStateError, ToolError, UnscoredEpisodeError
from agent_env.mcp._episode import Episode, run_user_function, user_failure
from agent_env.mcp._runtime import ServerSet
from agent_env.mcp._settings import MCPSettings
from agent_env.schema._describe import short


class MCPToolsEnvironment(Environment):
    """The base of the classes `MCPEnvironment.environment_class()` builds: each instance runs one episode at a time
    on connections taken from its servers' pools, and lets them go once the episode is scored, reset or closed."""

    source: ClassVar[MCPSettings]
    runtime: ClassVar[ServerSet]

    def __init__(self) -> None:
        self._episode: Episode | None = None
        self._score: Any = None
        self._scored = False
        self._finalizer: weakref.finalize | None = None

    def reset(self, **row: Any) -> str | None:
        """Let go of the last episode's servers, take fresh ones, and run `setup` on them."""
        self._let_go()
        opening = submit(self.runtime.open_episode(dict(row)))
        try:
            episode = opening.result()
        except BaseException:  # interrupted (Ctrl-C) while its servers start: let go of them once they are up
            opening.add_done_callback(self.runtime.let_go_unclaimed)
            raise
        self._episode = episode
        self._score, self._scored = None, False
        self._finalizer = weakref.finalize(self, self.runtime.let_go, episode)
        setup = self.source.setup
        if setup is None:
            return None
        try:
            observation = run_user_function(setup, episode)
        except BaseException as error:
            self._let_go()
            raise user_failure(error, "its setup function raised", episode)  # noqa: B904 (its cause is set)
        if observation is not None and not isinstance(observation, str):
            self._let_go()
            raise UnscoredEpisodeError(
                f"its setup function returned {short(observation)}, not a string or None (the observation TRL "
                f"appends to the prompt) in MCP episode {episode.id}"
            )
        return observation

    def reward(self) -> Any:
        """The episode's score, read once while its servers run (then they are let go); the session holds it to
        being a finite number."""
        if not self._scored:
            episode = self._episode
            if episode is None:
                raise EpisodeStateError(
                    "this episode's servers were let go before its reward was read: its reward function failed "
                    "(the error it raised says why) or its session was closed; reset to start another episode"
                )
            try:
                self._score = self.runtime.score(episode)
                self._scored = True
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
            MCPTimeoutError, MCPServerLostError, ToolsChangedError: The server hung, died or changed its tools.
        """
        episode = self._episode
        if episode is None:  # scored and let go: the session has ended the episode already
            raise ToolError(f"tool '{name}' was called after the episode's servers were let go")
        result = await on_background_loop(self.runtime.call(episode, name, arguments))
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


def build_class(source: MCPSettings) -> type[MCPToolsEnvironment]:
    """The environment class of `source` (an `MCPEnvironment`, which the class names as its source) in this
    process: its servers started, their tools listed and published.

    A class of its own, made fresh (never a shared one changed), named after `source.name` or the servers' own names.
    """
    prefer_uvloop()  # the hop of every synchronous call to its servers costs less on uvloop's loop
    runtime = ServerSet(source)
    listings = run_sync(runtime.start())
    try:
        tools = runtime.publish(listings, remote_tool)
    except BaseException:
        run_sync(runtime.close())
        raise
    name = source.name or "+".join(runtime.server_names[key] for key in runtime.servers)
    return built_class(MCPToolsEnvironment, name, source, runtime, tools)


__all__ = ["MCPToolsEnvironment", "build_class"]
