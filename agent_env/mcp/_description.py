"""`MCPEnvironment`: a picklable description of an environment made of MCP servers' tools.

It says which servers, which of their tools, the dataset rows, and how an episode is set up and scored (its
settings, `MCPSettings`, checked in `_settings.py`). Each process that uses it builds the environment class from it
once (`environment_class()`: its servers started, their tools listed and published), and providers ship the
description, never the class, between processes: it is an `agent_env.environment.EnvironmentSource`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from agent_env.mcp._environment import MCPToolsEnvironment, build_class
from agent_env.mcp._settings import MCPSettings


@dataclass(frozen=True, eq=False)
class MCPEnvironment(MCPSettings):
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

    _built: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

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
                built = build_class(self)
                self._built["class"] = built
            return built

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_built"] = {}  # each process builds its own class, with servers of its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)


_build_lock = threading.RLock()


__all__ = ["MCPEnvironment"]
