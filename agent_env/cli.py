"""The `agent-env` command: one thin typer command per job, each calling the layer that does it."""

from __future__ import annotations

from typing import Annotated

import typer

from agent_env.envs import DEFAULT_ENVIRONMENT
from agent_env.server._limits import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_EPISODES,
)
from agent_env.server._serve import DEFAULT_HOST, DEFAULT_PORT

app = typer.Typer(
    name="agent-env",
    help="Tool-using LLM environments whose tools publish their full JSON Schema.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def agent_env() -> None:
    """Tool-using LLM environments whose tools publish their full JSON Schema."""


@app.command()
def serve(
    environment: Annotated[
        str, typer.Argument(help="A built-in environment name, or package.module:Class.")
    ] = DEFAULT_ENVIRONMENT,
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
    call_timeout: Annotated[
        float, typer.Option(help="Seconds a reset, tool call or reward may run.")
    ] = DEFAULT_CALL_TIMEOUT,
    max_body_bytes: Annotated[
        int, typer.Option(help="Largest request body accepted; larger gets 413.")
    ] = DEFAULT_MAX_BODY_BYTES,
    config: Annotated[
        list[str] | None,
        typer.Option(
            "--config", "-c", help="Environment constructor argument key=value (JSON values parsed)."
        ),
    ] = None,
    mcp_row: Annotated[
        str | None, typer.Option(help="JSON dataset row each MCP session's episode starts from (default {}).")
    ] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve ENVIRONMENT over HTTP: MCP at /mcp, the episode control API beside it (see docs/server.md)."""
    from agent_env.server._serve import parse_config, parse_row
    from agent_env.server._serve import serve as run_server

    try:
        options = parse_config(config or [])
        run_server(
            environment,
            host=host,
            port=port,
            token=token,
            allow_unauthenticated=allow_unauthenticated,
            max_body_bytes=max_body_bytes,
            max_episodes=max_episodes,
            idle_timeout=idle_timeout,
            call_timeout=call_timeout,
            log_level=log_level,
            mcp_row=parse_row(mcp_row),
            **options,
        )
    except (ValueError, LookupError, ImportError) as error:
        typer.echo(f"agent-env serve: {error}", err=True)
        raise typer.Exit(2) from None


def main() -> None:
    """The `agent-env` entry point."""
    app()


if __name__ == "__main__":
    main()
