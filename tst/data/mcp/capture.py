"""Write the tool listings of real MCP servers to `tst/data/mcp/<server>.json`, as the official `mcp` client lists
them: the test data of `tst/unit/schema/dialects_test.py` and `tst/property/dialects_test.py`.

Run it again when a pinned version changes, from a folder where the servers are installed at those versions:

    npm install @modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31
    uv venv py && uv pip install --python py/bin/python mcp-server-time==2026.10.19 mcp-server-git==2026.10.19
    cd /path/to/agent_env && uv run --frozen python -m tst.data.mcp.capture /path/to/that/folder
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

HERE = Path(__file__).parent

SERVERS = {  # file name: (package, version, command and args, relative to the install folder)
    "server-memory": ("@modelcontextprotocol/server-memory", "2026.8.31", ["node", "node_modules/@modelcontextprotocol/server-memory/dist/index.js"]),
    "server-filesystem": ("@modelcontextprotocol/server-filesystem", "2026.8.31", ["node", "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "{scratch}"]),
    "mcp-server-time": ("mcp-server-time", "2026.10.19", ["py/bin/mcp-server-time", "--local-timezone", "UTC"]),
    "mcp-server-git": ("mcp-server-git", "2026.10.19", ["py/bin/mcp-server-git", "--repository", "{scratch}"]),
}  # fmt: skip


async def listed(command: list[str], folder: Path) -> list[dict[str, Any]]:
    """Every tool the server lists (all pages), as `name`, `description` and `inputSchema`."""
    parameters = StdioServerParameters(command=str(folder / command[0]) if "/" in command[0] else command[0],
                                       args=command[1:], cwd=folder)  # fmt: skip
    tools: list[dict[str, Any]] = []
    async with Client(parameters) as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in page.tools
            ]
            cursor = page.next_cursor
            if cursor is None:
                return tools


def main(folder: Path) -> None:
    for file_name, (package, pinned, command) in SERVERS.items():
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run(["git", "init", "-q", scratch], check=True)
            tools = asyncio.run(listed([part.format(scratch=scratch) for part in command], folder))
        listing = {"server": package, "version": pinned, "listed_with": f"mcp {version('mcp')} Client.list_tools",
                   "tools": tools}  # fmt: skip
        (HERE / f"{file_name}.json").write_text(json.dumps(listing, indent=2, ensure_ascii=False) + "\n")
        print(f"{file_name}: {len(tools)} tools")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
