"""A server on the mcp 1.x Python SDK (the one `mcp-server-time` pins, run by the MCP servers' own venv), for what
older servers do differently: they announce a changed tool list with a notification on the same stream as the call's
answer, and they log their refusal of the 2026 client's `server/discover` probe to stderr while starting.

Tools: `count` (1, 2, ...), `change_tools` (adds a tool and says the list changed), `die` (writes a last line to
stderr and exits). With `--die-on-probe` it exits on the 2026 client's `server/discover` probe, as releases before
1.7 did (chroma-mcp 0.2.6 pins one), and answers only a client that sends `initialize` alone.
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


async def dying_on_the_probe(read):  # type: ignore[no-untyped-def]
    """The messages of `read`, exiting (as an old release crashed) on a `server/discover` request."""
    async for message in read:
        request = getattr(getattr(message, "message", None), "root", None)
        if getattr(request, "method", None) == "server/discover":
            print("legacy server: unknown request server/discover, exiting", file=sys.stderr, flush=True)
            os._exit(1)
        yield message


async def main() -> None:
    options = server.create_initialization_options(
        notification_options=NotificationOptions(tools_changed=True)
    )
    async with stdio_server() as (read, write):
        if "--die-on-probe" not in sys.argv:
            await server.run(read, write, options)
            return
        sending, receiving = anyio.create_memory_object_stream(0)

        async def relay() -> None:
            async with sending:
                async for message in dying_on_the_probe(read):
                    await sending.send(message)

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
            await server.run(receiving, write, options)
            group.cancel_scope.cancel()


anyio.run(main)
