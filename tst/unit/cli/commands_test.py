"""`agent_env/cli/__init__.py`: every command module is registered in `COMMANDS`, in `--help`'s order, and none
imports another."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from typer.testing import CliRunner

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


def test_help_flows_each_paragraph_of_a_commands_docstring_at_the_terminals_width():
    # Typer keeps a docstring's own line breaks: lines wrapped for the source broke again on a narrower terminal,
    # and a longer source line left a stub of a line after it ("... The API key comes / from --api-key-env's").
    for name, command in COMMANDS.items():
        shown = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "2000"}).stdout
        lines = [line.strip() for line in shown.splitlines()]
        for paragraph in inspect.cleandoc(command.__doc__ or "").split("\n\n"):
            assert " ".join(paragraph.split()) in lines, (name, paragraph[:60])
    narrow = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "80"}).stdout
    assert "The API key comes from --api-key-env's variable" in " ".join(narrow.split())
    assert all(len(line) <= 80 for line in narrow.splitlines())
