"""The `agent-env` command: one module per subcommand, each a thin typer function calling the layer that does it.

A new command is one new module here: a function whose docstring is its help, taking what it shares with the others
from `_options`, and at the module's end `COMMAND = Command(name, place, function)` (from `_command`), its place
being where `agent-env --help` lists it. The app finds every public module of this package and registers its command
(`COMMANDS`). The console script is `agent_env.cli:main`.
"""

from __future__ import annotations

import inspect
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


def flowing(docstring: str | None) -> str | None:
    """A command's docstring as its `--help` shows it: each paragraph one line, which the help wraps at the
    terminal's width. Typer keeps a docstring's own line breaks, so lines wrapped for the source came out broken
    twice on a narrower terminal, and a longer source line left a short one after it."""
    if docstring is None:
        return None
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in inspect.cleandoc(docstring).split("\n\n"))


for _name, _command in COMMANDS.items():
    app.command(_name, help=flowing(_command.__doc__))(_command)


def main() -> None:
    """The `agent-env` entry point."""
    app()
