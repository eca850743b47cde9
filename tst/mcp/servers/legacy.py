"""A server on the mcp 1.x Python SDK (the one `mcp-server-time` pins, run by the MCP servers' own venv), for what
older servers do differently: they announce a changed tool list with a notification on the same stream as the call's
answer, and they log their refusal of the 2026 client's `server/discover` probe to stderr while starting.

Tools: `count` (1, 2, ...), `change_tools` (adds a tool and says the list changed), `die` (writes a last line to
stderr and exits).
"""

import os
import sys

import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

server: Server = Server("legacy")
state = {"count": 0, "changed": False}
TOOLS = [
    types.Tool(name=name, description=f"The {name} tool.", inputSchema={"type": "object", "properties": {}})
    for name in ("count", "change_tools", "die")
]


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    extra = [types.Tool(name="extra", description="Added.", inputSchema={"type": "object"})]
    return TOOLS + (extra if state["changed"] else [])


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> list[types.TextContent]:
    if name == "change_tools":
        state["changed"] = True
        await server.request_context.session.send_tool_list_changed()
        return [types.TextContent(type="text", text="changed")]
    if name == "die":
        print("legacy server: the die tool was called, exiting", file=sys.stderr, flush=True)
        os._exit(3)
    state["count"] += 1
    return [types.TextContent(type="text", text=str(state["count"]))]


async def main() -> None:
    options = server.create_initialization_options(
        notification_options=NotificationOptions(tools_changed=True)
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


anyio.run(main)
