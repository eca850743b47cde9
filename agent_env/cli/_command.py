"""`Command`: how a module of `agent_env/cli/` declares the `agent-env` command it is, and finding every one.

Every public module of the package (a name without a leading underscore) is one command and says so at its end:
`COMMAND = Command("tools", 20, tools)`. `agent_env/cli/__init__.py` finds them with `commands`, so a new command
is one new file.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Command:
    """One `agent-env` command, as its module declares it."""

    name: str
    """What the user types: `agent-env NAME`."""
    place: int
    """Where `agent-env --help` lists it among the others, lowest first (the commands count in tens, leaving room)."""
    function: Callable[..., Any]
    """The typer function: its docstring is the command's help, its parameters its arguments and options."""


def commands(package: str, folders: Iterable[str]) -> list[Command]:
    """The `COMMAND` of every public module of `package` (whose `__path__` is `folders`), in `--help`'s order.

    Raises:
        TypeError: A public module declares no `COMMAND`, or one that is not a `Command`.
        ValueError: Two commands share a name or a place.
    """
    names = sorted({path.stem for folder in folders for path in Path(folder).glob("*.py")})
    found = []
    for name in (name for name in names if not name.startswith("_")):
        command = getattr(importlib.import_module(f"{package}.{name}"), "COMMAND", None)
        if not isinstance(command, Command):
            raise TypeError(
                f"{package}.{name} declares no command: end it with COMMAND = Command(name, place, function) (from "
                f"{__name__}), or start its name with _ if it is not a command"
            )
        found.append(command)
    for attribute in ("name", "place"):
        values = [getattr(command, attribute) for command in found]
        twice = sorted({value for value in values if values.count(value) > 1})
        if twice:
            raise ValueError(
                f"two commands of {package} share the {attribute} {twice[0]!r}; give each its own"
            )
    return sorted(found, key=lambda command: command.place)
