"""What the commands share: their common arguments and options, `-c key=value`, opening ENV, and errors as exit 2.

Everything here is light to import, so that `agent-env --help` stays quick: what a command needs to do its job it
imports inside its function.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agent_env.envs import DEFAULT_ENVIRONMENT
from agent_env.errors import AgentEnvError

if TYPE_CHECKING:
    from rich.console import Console

    from agent_env._agent_env import AgentEnv

EnvironmentArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="ENV",
        help=f"A built-in environment (default: {DEFAULT_ENVIRONMENT}), package.module:Class (or an MCPEnvironment "
        "by name), or the URL of a served one.",
        show_default=False,
    ),
]
McpOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp",
        metavar="[NAME=]COMMAND|URL",
        help="An MCP server instead of ENV: a command run over stdio ('node index.js'), or a streamable-HTTP URL. "
        "Repeat with NAME= for several, their tools prefixed NAME_.",
    ),
]
McpHeaderOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp-header",
        metavar="'NAME: VALUE'",
        help="A header sent to every --mcp URL (not --token, which is agent-env's own); repeatable. ${VAR} in VALUE "
        "is read from the environment, to keep secrets off the command line: 'Authorization: Bearer ${MCP_TOKEN}'.",
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(envvar="AGENT_ENV_TOKEN", help="Bearer token of a served environment (or AGENT_ENV_TOKEN)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for machines instead of tables.")]
ConfigOption = Annotated[
    list[str] | None,
    typer.Option("--config", "-c", help="Environment constructor argument key=value (JSON values parsed)."),
]

USER_ERRORS: tuple[type[Exception], ...] = (LookupError, ImportError, ValueError, OSError, AgentEnvError)
"""The errors a user can fix (a name, a missing extra, a bad value, a file): one line and exit 2, no traceback."""


def constructor_arguments(config: list[str] | None) -> dict[str, Any]:
    """The environment's constructor arguments that `-c key=value` options give (JSON values parsed).

    Raises:
        ValueError: An option that is not key=value.
    """
    return parse_config(config or [])


def parse_config(items: Iterable[str]) -> dict[str, Any]:
    """Environment constructor arguments from `key=value` strings; a value that parses as JSON is that JSON."""
    config: dict[str, Any] = {}
    for item in items:
        key, separator, text = item.partition("=")
        if not separator or not key.strip().isidentifier():
            raise ValueError(f"config {item!r} is not key=value (for example bundle=desk-v4)")
        try:
            config[key.strip()] = json.loads(text)
        except ValueError:
            config[key.strip()] = text
    return config


def open_target(
    environment: str | None,
    *,
    token: str | None = None,
    mcp: list[str] | None = None,
    mcp_header: list[str] | None = None,
    config: dict[str, Any] | None = None,
    limits: dict[str, float] | None = None,
) -> AgentEnv:
    """The environment ENV (or `--mcp`) names, opened as `inspection.targets.open_environment` opens it."""
    from agent_env.inspection.targets import open_environment

    return open_environment(
        environment, token=token, mcp=mcp or (), mcp_headers=mcp_header or (), config=config, limits=limits
    )


@contextmanager
def reported(command: str, errors: tuple[type[Exception], ...] = USER_ERRORS) -> Iterator[None]:
    """Turn the errors a user can fix into one line on stderr and exit code 2, without a traceback."""
    try:
        yield
    except errors as error:
        typer.echo(f"agent-env {command}: {error}", err=True)
        raise typer.Exit(2) from None


def rich_console(*, stderr: bool = False) -> Console:
    """A rich console for tables: no highlighting of numbers and paths, on stdout unless `stderr`."""
    from rich.console import Console

    return Console(highlight=False, stderr=stderr)
