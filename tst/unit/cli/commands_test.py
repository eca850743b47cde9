"""`agent_env/cli/__init__.py` and `_command.py`: every command module declares its command and the app finds it, in
`--help`'s order; no command imports another."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agent_env.cli
from agent_env.cli import COMMANDS, app
from agent_env.cli._command import Command, commands

PACKAGE = Path(agent_env.cli.__file__).parent
MODULES = sorted(path.stem for path in PACKAGE.glob("*.py") if not path.stem.startswith("_"))


def test_every_command_module_declares_its_command_under_its_own_name():
    assert sorted(COMMANDS) == MODULES
    for name, command in COMMANDS.items():
        assert command.__module__ == f"agent_env.cli.{name}"
        declared = sys.modules[f"agent_env.cli.{name}"].COMMAND
        assert declared == Command(name, declared.place, command)


def test_the_app_lists_the_commands_in_the_order_of_their_places():
    places = {name: sys.modules[f"agent_env.cli.{name}"].COMMAND.place for name in COMMANDS}
    assert list(COMMANDS) == sorted(places, key=places.__getitem__)
    assert [info.name for info in app.registered_commands] == list(COMMANDS)
    assert list(COMMANDS) == ["serve", "tools", "render", "check", "rollout", "eval", "demo"]


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


def command_module(name: str, place: int) -> str:
    return textwrap.dedent(
        f'''
        from agent_env.cli._command import Command

        def {name}() -> None:
            """Say {name}."""

        COMMAND = Command("{name}", {place}, {name})
        '''
    )


@pytest.fixture
def package(tmp_path, monkeypatch) -> Iterator[Path]:
    """A scratch command package, `scratch_cli`, importable for this test only."""
    folder = tmp_path / "scratch_cli"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "_shared.py").write_text("HELPER = 1\n")  # not a command: its name starts with _
    (folder / "later.py").write_text(command_module("later", 20))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield folder
    for name in [name for name in sys.modules if name.split(".")[0] == "scratch_cli"]:
        del sys.modules[name]


def test_a_new_command_is_one_new_file_listed_at_its_place(package):
    assert [command.name for command in commands("scratch_cli", [str(package)])] == ["later"]
    (package / "first.py").write_text(command_module("first", 10))
    found = commands("scratch_cli", [str(package)])
    assert [(command.name, command.place, command.function.__doc__) for command in found] == [
        ("first", 10, "Say first."),
        ("later", 20, "Say later."),
    ]


def test_a_public_module_that_declares_no_command_is_refused_with_what_to_add(package):
    (package / "helper.py").write_text("HELPER = 1\n")
    with pytest.raises(
        TypeError, match=r"scratch_cli.helper declares no command: end it with COMMAND = Command"
    ):
        commands("scratch_cli", [str(package)])


def test_two_commands_at_one_place_are_refused(package):
    (package / "other.py").write_text(command_module("other", 20))
    with pytest.raises(ValueError, match="two commands of scratch_cli share the place 20; give each its own"):
        commands("scratch_cli", [str(package)])
