"""The errors of the MCP servers an environment's tools come from; each message names the server and, from an
episode on, the episode.

They are `RemoteError`s of their own, so that no provider takes an MCP server's failure for one of its own (a Ray
actor lost, a served episode gone, an agent_env token refused): across `agent-env serve` and Ray they arrive as
`RemoteError` with the same message.
"""

from __future__ import annotations

from agent_env.server.errors import CallTimeoutError, RemoteError


class MCPServerError(RemoteError):
    """An MCP server that an environment's tools come from failed; the message says which, in which episode, and how."""

    code = "mcp_server"


class MCPStartError(MCPServerError):
    """An MCP server did not start, did not answer `initialize` in time, or refused the credentials it was given."""

    code = "mcp_start"


class MCPServerLostError(MCPServerError):
    """An MCP server died, closed its connection, or was stopped during an episode: the episode's state is gone."""

    code = "mcp_server_lost"


class MCPTimeoutError(MCPServerError, CallTimeoutError):
    """A call got no answer from its MCP server in time; the server was stopped and the episode's state is gone. A
    `CallTimeoutError`, so its episode ends as any call out of time ends it: unscored, left out by a trainer."""

    code = "mcp_timeout"


class ToolsChangedError(MCPServerError):
    """An MCP server lists other tools than the ones the environment published when it was built."""

    code = "tools_changed"


__all__ = ["MCPServerError", "MCPServerLostError", "MCPStartError", "MCPTimeoutError", "ToolsChangedError"]
