"""The published tools of an environment with a fingerprint of each schema and of the whole tool set."""

from __future__ import annotations

from typing import Any

from agent_env._agent_env import AgentEnv
from agent_env.schema import fingerprint


def tool_listing(env: AgentEnv) -> dict[str, Any]:
    """What `agent-env tools --json` prints: the environment's name, the tool-set fingerprint that
    `EnvironmentFactory` logs, and each tool with its input schema's fingerprint."""
    published = env.tools()
    return {
        "environment": env.provider.name,
        "tool_set": fingerprint(published),
        "tools": [
            {
                "name": tool["name"],
                "description": tool["description"],
                "fingerprint": fingerprint(tool["inputSchema"]),
                "inputSchema": tool["inputSchema"],
            }
            for tool in published
        ],
    }
