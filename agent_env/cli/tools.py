"""`agent-env tools`: ENV's published tools, their input schemas and fingerprints."""

from __future__ import annotations

import json
from contextlib import closing

import typer

from agent_env.cli._command import Command
from agent_env.cli._options import (
    EnvironmentArgument,
    JsonOption,
    McpHeaderOption,
    McpOption,
    TokenOption,
    open_target,
    reported,
    rich_console,
)


def tools(
    environment: EnvironmentArgument = None,
    json_output: JsonOption = False,
    token: TokenOption = None,
    mcp: McpOption = None,
    mcp_header: McpHeaderOption = None,
) -> None:
    """List ENV's published tools with their input schemas and fingerprints.

    Each schema gets a short fingerprint, and so does the whole tool set: the one EnvironmentFactory logs when it
    builds, so a training log can be matched to the tools the model saw.
    """
    from agent_env.inspection.listing import tool_listing

    with (
        reported("tools"),
        closing(open_target(environment, token=token, mcp=mcp, mcp_header=mcp_header)) as env,
    ):
        listing = tool_listing(env)
    if json_output:
        typer.echo(json.dumps(listing, indent=2, ensure_ascii=False))
        return
    from agent_env.inspection.views import show_tools

    show_tools(rich_console(), listing)


COMMAND = Command("tools", 20, tools)
