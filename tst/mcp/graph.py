"""An MCP environment at module level, importable by name in every process (Ray's actors among them): the real
`server-memory`, a memory file per episode, and the number of entities in its graph as the reward."""

from __future__ import annotations

from agent_env.mcp import Episode, MCPEnvironment, StdioServer
from tst.mcp.conftest import INSTALLED, NODE

MEMORY = INSTALLED / "node" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
PROMPT = [{"role": "user", "content": "Record Ada, an engineer."}]


def entities(episode: Episode) -> float:
    """How many entities the server's graph holds."""
    return float(len(episode.call_tool("read_graph").json()["entities"]))


environment = MCPEnvironment(
    StdioServer(NODE, [str(MEMORY)], env={"MEMORY_FILE_PATH": "{episode_dir}/memory.jsonl"}),
    reward=entities,
    rows={"train": [{"prompt": PROMPT, "task_id": "ada"}]},
    name="graph",
    warm=1,
)
