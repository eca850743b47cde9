"""A real MCP server (the official SDK's low-level `Server`, over stdio) that misbehaves on request, for the faults and
features no third-party server here shows: a score tool, process state, hangs, exits, junk on stdout, paginated
and changing tool lists, and tools agent_env cannot publish; for tst/mcp and bench/mcp_batch.py.

Usage: python scripted_mcp.py [--pages N] [--tools-from FILE] [--junk banner|mangle] [--unpublishable] [--odd-names]
       [--crash-on-start] [--start-delay SECONDS] [--child] [--stubborn]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged

DRAFT_07 = "http://json-schema.org/draft-07/schema#"

TOOLS: dict[str, dict[str, Any]] = {
    "count": {
        "description": "Add one to this server's counter and answer it.",
        "inputSchema": {"type": "object"},
    },
    "score": {
        "description": "The episode's score: the counter divided by 4.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    "echo": {
        "description": "Answer the text, repeated.",
        "inputSchema": {
            "$schema": DRAFT_07,
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "times": {"type": "integer", "minimum": 1, "default": 1},
            },
            "required": ["text"],
            "additionalProperties": False,
        },
    },
    "sleep": {
        "description": "Sleep for some seconds, then answer.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "seconds": {"type": "number"},
                "block": {
                    "type": "boolean",
                    "description": "Hold the server: answer nothing else meanwhile.",
                },
            },
            "required": ["seconds"],
        },
    },
    "exit": {"description": "Exit the process at once, mid-call.", "inputSchema": {"type": "object"}},
    "fail": {"description": "Answer with isError.", "inputSchema": {"type": "object"}},
    "grow_tools": {"description": "Add a tool and say the tools changed.", "inputSchema": {"type": "object"}},
}
UNPUBLISHABLE: dict[str, dict[str, Any]] = {
    "reset": {"description": "A reserved name.", "inputSchema": {"type": "object"}},
    "tree": {
        "description": "A recursive schema.",
        "inputSchema": {
            "type": "object",
            "properties": {"node": {"$ref": "#/definitions/node"}},
            "definitions": {
                "node": {"type": "object", "properties": {"child": {"$ref": "#/definitions/node"}}}
            },
        },
    },
}

ODD_NAMES: dict[str, dict[str, Any]] = {
    "café": {  # a Python identifier, but no ASCII one
        "description": "Order a coffee.",
        "inputSchema": {
            "type": "object",
            "properties": {"size": {"type": "string", "enum": ["small", "large"]}},
        },
    },
    "get-sum": {  # no identifier: published as get_sum
        "description": "Add two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
    "whoami": {  # parameters named as a method's receiver and a keyword
        "description": "Answer who and what it was told.",
        "inputSchema": {
            "type": "object",
            "properties": {"self": {"type": "string"}, "class": {"type": "string"}},
            "required": ["self"],
        },
    },
}
"""Tools whose names (their own, or their parameters') no Python method takes as they are."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=1)
    parser.add_argument("--tools-from")
    parser.add_argument("--junk", choices=["banner", "mangle"])
    parser.add_argument("--unpublishable", action="store_true")
    parser.add_argument("--odd-names", action="store_true")
    parser.add_argument("--crash-on-start", action="store_true")
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--stubborn", action="store_true")
    options = parser.parse_args()
    if options.stubborn:  # a server that ignores SIGTERM, and the end of its stdin (below)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if options.child:  # a server that runs a helper process of its own, which inherits its stdio (npx does)
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    time.sleep(options.start_delay)  # a server slow to start (a big runtime loading)
    if options.crash_on_start:
        print("scripted: cannot start: the configuration is missing", file=sys.stderr)
        sys.exit(3)
    tools = dict(TOOLS)
    if options.tools_from:
        with open(options.tools_from) as file:
            tools = {name: TOOLS[name] for name in json.load(file)}
    if options.unpublishable:
        tools.update(UNPUBLISHABLE)
    if options.odd_names:
        tools.update(ODD_NAMES)
    if options.junk == "banner":
        print("scripted server v1 starting (this line is not MCP)", flush=True)
    elif options.junk == "mangle":
        sys.stdout.write("JUNK")  # no newline: it is glued to the first message the server writes
        sys.stdout.flush()
    anyio.run(serve, tools, options.pages)
    while options.stubborn:
        time.sleep(1)


async def serve(tools: dict[str, dict[str, Any]], pages: int) -> None:
    state = {"count": 0}
    listed = dict(tools)
    bus = InMemorySubscriptionBus()

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> Any:
        names = list(listed)
        size = max(1, -(-len(names) // pages))
        start = int(params.cursor) if params is not None and params.cursor else 0
        page = names[start : start + size]
        following = str(start + size) if start + size < len(names) else None
        entries = [
            types.Tool(
                name=name, description=listed[name]["description"], input_schema=listed[name]["inputSchema"]
            )
            for name in page
        ]
        return types.ListToolsResult(tools=entries, next_cursor=following)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        arguments = params.arguments or {}
        if params.name == "count":
            state["count"] += 1
            return text(str(state["count"]))
        if params.name == "score":
            score = state["count"] / 4
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps(score))],
                structured_content={"score": score},
            )
        if params.name == "echo":
            return text(arguments["text"] * arguments.get("times", 1))
        if params.name == "sleep":
            if arguments.get("block"):
                time.sleep(arguments["seconds"])  # a handler that holds the event loop: pings wait too
            else:
                await asyncio.sleep(arguments["seconds"])
            return text("slept")
        if params.name == "exit":
            os._exit(9)
        if params.name == "café":
            return text(f"one {arguments.get('size', 'small')} coffee")
        if params.name == "get-sum":
            return text(json.dumps(arguments["a"] + arguments["b"]))
        if params.name == "whoami":
            return text(f"{arguments['self']} ({arguments.get('class', 'no class')})")
        if params.name == "fail":
            return text("the fail tool always fails", is_error=True)
        if params.name == "grow_tools":
            listed["extra"] = {"description": "A tool added mid-run.", "inputSchema": {"type": "object"}}
            await bus.publish(ToolsListChanged())  # to clients that listen (2026-07-28)
            return text("grown")
        return text(f"no tool {params.name}", is_error=True)

    server: Server[Any] = Server(
        "scripted",
        version="1",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


def text(value: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=is_error)


if __name__ == "__main__":
    main()
