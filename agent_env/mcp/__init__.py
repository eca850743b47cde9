"""Any MCP server as an agent_env environment: its tools published with full schemas, its episodes isolated.

`MCPEnvironment` describes the environment (servers, tools, rows, setup, reward); `AgentEnv.mcp(...)` runs one in this
process, and every provider takes one as it takes an environment class. `StdioServer` runs a command per episode
(or one shared process), `HttpServer` opens an MCP session per episode at a streamable-HTTP URL. Needs the `server`
extra (the official `mcp` SDK), which is imported only when a server starts.
"""

from __future__ import annotations

from agent_env.mcp._description import MCPEnvironment
from agent_env.mcp._environment import MCPToolsEnvironment
from agent_env.mcp._episode import Episode, ToolCall
from agent_env.mcp._results import ToolResult
from agent_env.mcp._servers import HttpServer, StdioServer, server_from_text
from agent_env.mcp.errors import (
    MCPServerError,
    MCPServerLostError,
    MCPStartError,
    MCPTimeoutError,
    ToolsChangedError,
)

__all__ = [
    "Episode",
    "HttpServer",
    "MCPEnvironment",
    "MCPServerError",
    "MCPServerLostError",
    "MCPStartError",
    "MCPTimeoutError",
    "MCPToolsEnvironment",
    "StdioServer",
    "ToolCall",
    "ToolResult",
    "ToolsChangedError",
    "server_from_text",
]
