"""The `agent-env` command: one module per subcommand, each a thin typer function calling the layer that does it.

A new command is one new module here: a function whose docstring is its help, taking what it shares with the others
from `_options`, and at the module's end `COMMAND = Command(name, place, function)` (from `_command`), its place
being where `agent-env --help` lists it. The app finds every public module of this package and registers its command
(`COMMANDS`). The console script is `agent_env.cli:main`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from agent_env.cli._command import commands
from agent_env.cli.eval import eval_command

__all__ = ["app", "eval_command", "main"]

COMMANDS: dict[str, Callable[..., Any]] = {
    command.name: command.function for command in commands(__name__, __path__)
}
"""Each command's name and function, in the order `--help` lists them: what each module of the package declares."""

app = typer.Typer(
    name="agent-env",
    help="Tool-using LLM environments whose tools publish their full JSON Schema.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def agent_env() -> None:
    """Tool-using LLM environments whose tools publish their full JSON Schema."""


for _name, _command in COMMANDS.items():
    app.command(_name)(_command)


def main() -> None:
    """The `agent-env` entry point."""
    app()
