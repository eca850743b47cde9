"""`agent-env serve`: serve an environment over HTTP (MCP, the episode control API, OpenEnv's and ORS's surfaces)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from agent_env.cli._command import Command
from agent_env.cli._options import ConfigOption, McpHeaderOption, McpOption, constructor_arguments, reported
from agent_env.envs import DEFAULT_ENVIRONMENT
from agent_env.errors import AgentEnvError
from agent_env.server.limits import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_EPISODE_BUDGET,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_HOST,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_BODY_VALUES,
    DEFAULT_MAX_EPISODES,
    DEFAULT_MCP_IDLE_TIMEOUT,
    DEFAULT_PORT,
    LOOPBACK_ORIGINS,
)


def serve(
    environment: Annotated[
        str | None,
        typer.Argument(
            help=f"A built-in environment name (default: {DEFAULT_ENVIRONMENT}), or package.module:Class (or an "
            "MCPEnvironment by name).",
            show_default=False,
        ),
    ] = None,
    host: Annotated[
        str, typer.Option(help="Address to bind; without a token, only loopback unless allowed.")
    ] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(help="Port to bind.")] = DEFAULT_PORT,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="AGENT_ENV_TOKEN", help="Bearer token every request must carry (or AGENT_ENV_TOKEN)."
        ),
    ] = None,
    allow_unauthenticated: Annotated[
        bool, typer.Option("--allow-unauthenticated", help="Serve a non-loopback --host without a token.")
    ] = False,
    max_episodes: Annotated[
        int, typer.Option(help="Most live episodes at once; more get 503.")
    ] = DEFAULT_MAX_EPISODES,
    idle_timeout: Annotated[
        float, typer.Option(help="Seconds before an unused episode is closed.")
    ] = DEFAULT_IDLE_TIMEOUT,
    mcp_idle_timeout: Annotated[
        float,
        typer.Option(help="Seconds before an MCP session without requests ends, closing its episode."),
    ] = DEFAULT_MCP_IDLE_TIMEOUT,
    call_timeout: Annotated[
        float, typer.Option(help="Seconds a reset, tool call or reward may run.")
    ] = DEFAULT_CALL_TIMEOUT,
    episode_budget: Annotated[
        float, typer.Option(help="Seconds all of one episode's calls may run together.")
    ] = DEFAULT_EPISODE_BUDGET,
    max_body_bytes: Annotated[
        int, typer.Option(help="Largest request body accepted; larger gets 413.")
    ] = DEFAULT_MAX_BODY_BYTES,
    max_body_values: Annotated[
        int, typer.Option(help="Most JSON values in one body (counted before parsing); more gets 413.")
    ] = DEFAULT_MAX_BODY_VALUES,
    body_timeout: Annotated[
        float, typer.Option(help="Seconds a request body may take to arrive; slower gets 408.")
    ] = DEFAULT_BODY_TIMEOUT,
    header_timeout: Annotated[
        float, typer.Option(help="Seconds request headers may take to arrive; slower is disconnected.")
    ] = DEFAULT_HEADER_TIMEOUT,
    http: Annotated[
        str,
        typer.Option(help="HTTP parser: auto (httptools where installed, else h11), httptools or h11."),
    ] = "auto",
    loop: Annotated[
        str, typer.Option(help="Event loop: auto (uvloop where installed, else asyncio), uvloop or asyncio.")
    ] = "auto",
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            help="A browser origin to let in besides this machine's pages (scheme://host[:port], :* any port, "
            "or * for any); repeatable."
        ),
    ] = None,
    config: ConfigOption = None,
    mcp_row: Annotated[
        str | None,
        typer.Option(
            help="JSON dataset row an MCP session starts from when its URL names none (default: the first test row)."
        ),
    ] = None,
    openenv: Annotated[
        bool,
        typer.Option(
            "--openenv", help="Also serve OpenEnv's /ws, /mcp dialect, /health, /schema at /openenv."
        ),
    ] = False,
    ors: Annotated[
        bool,
        typer.Option(
            "--ors",
            help="Also serve the Open Reward Standard's routes at the root (/create_session, /{env}/call, ...).",
        ),
    ] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    mcp: McpOption = None,
    mcp_header: McpHeaderOption = None,
) -> None:
    """Serve ENVIRONMENT over HTTP: MCP at /mcp, the episode control API beside it (see docs/server.md), with
    --openenv OpenEnv's wire surface at /openenv (see docs/openenv.md), and with --ors the Open Reward Standard's
    routes at the root (see docs/ors.md)."""
    from agent_env.envs import search_working_directory
    from agent_env.inspection.targets import environment_reference
    from agent_env.openenv.server import OpenEnvSurface
    from agent_env.ors.server import ORSSurface
    from agent_env.server import serve as run_server
    from agent_env.server.surface import Surface

    search_working_directory()  # as tools, render and check do
    with reported("serve", (ValueError, LookupError, ImportError, AgentEnvError)):  # not OSError, as before
        options = constructor_arguments(config)
        surfaces: list[Surface] = [OpenEnvSurface()] if openenv else []
        surfaces += [ORSSurface()] if ors else []
        run_server(
            environment_reference(environment, mcp or [], mcp_header or []),
            host=host,
            port=port,
            token=token,
            allow_unauthenticated=allow_unauthenticated,
            max_body_bytes=max_body_bytes,
            max_episodes=max_episodes,
            idle_timeout=idle_timeout,
            call_timeout=call_timeout,
            episode_budget=episode_budget,
            log_level=log_level,
            mcp_row=parse_row(mcp_row),
            header_timeout=header_timeout,
            http=http,
            loop=loop,
            mcp_idle_timeout=mcp_idle_timeout,
            allowed_origins=[*LOOPBACK_ORIGINS, *(allow_origin or [])],
            body_timeout=body_timeout,
            max_body_values=max_body_values,
            surfaces=surfaces,
            **options,
        )


def parse_row(text: str | None) -> dict[str, Any] | None:
    """A dataset row from its JSON text (None stays None)."""
    if text is None:
        return None
    try:
        row = json.loads(text)
    except ValueError as error:
        raise ValueError(f"--mcp-row must be a JSON object, like '{{\"seed\": 3}}': {error}") from None
    if not isinstance(row, dict):
        raise ValueError(f"--mcp-row must be a JSON object, like '{{\"seed\": 3}}', not {text!r}")
    return row


COMMAND = Command("serve", 10, serve)
