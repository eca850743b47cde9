"""`agent_env/cli/__init__.py`: every command module is registered in `COMMANDS`, in `--help`'s order, and none
imports another."""

from __future__ import annotations

import ast
from pathlib import Path

import agent_env.cli
from agent_env.cli import COMMANDS, app

PACKAGE = Path(agent_env.cli.__file__).parent
MODULES = sorted(path.stem for path in PACKAGE.glob("*.py") if not path.stem.startswith("_"))


def test_every_command_module_is_registered_under_its_own_name():
    assert sorted(COMMANDS) == MODULES
    for name, command in COMMANDS.items():
        assert command.__module__ == f"agent_env.cli.{name}"


def test_the_app_lists_the_commands_in_the_order_commands_gives():
    assert [info.name for info in app.registered_commands] == list(COMMANDS)


def test_no_command_imports_another():
    commands = {f"agent_env.cli.{name}" for name in MODULES}
    for name in MODULES:
        imported = set()
        for node in ast.walk(ast.parse((PACKAGE / f"{name}.py").read_text("utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        assert not commands & imported, name
