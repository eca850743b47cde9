"""The README and docs/environments.md are true: their class and session code run as shown, the errors they
quote are the ones agent_env raises, word for word, and the README stays an introduction whose commands exist."""

from __future__ import annotations

import importlib
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv, Environment, ToolArgumentError, ToolDefinitionError, tool


def fenced(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of a Markdown text: (language, content)."""
    blocks: list[tuple[str, str]] = []
    language = None
    for line in text.splitlines(keepends=True):
        if language is None and line.startswith("```"):
            language, content = line[3:].strip(), ""
        elif language is not None and line.rstrip() == "```":
            blocks.append((language, content))
            language = None
        elif language is not None:
            content += line
    return blocks


ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text()
SECTION = (ROOT / "docs" / "environments.md").read_text()
PYTHON = [content for language, content in fenced(SECTION) if language == "python"]
QUOTED = [content for language, content in fenced(SECTION) if language == ""]


@pytest.fixture
def desks(tmp_path, monkeypatch) -> Iterator[dict[str, Any]]:
    """docs/environments.md's environment, saved as `desks.py` and imported by name, as the page says to."""
    (tmp_path / "desks.py").write_text(PYTHON[0])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "desks", raising=False)
    namespace = {"AgentEnv": AgentEnv}
    exec("from desks import Desk", namespace)
    yield namespace
    sys.modules.pop("desks", None)


def test_the_environment_and_session_code_run_as_shown(desks, capsys):
    exec(PYTHON[1], desks)  # the page's own code
    assert capsys.readouterr().out == "0.1\n"
    assert AgentEnv.local("desks:Desk").tools() == AgentEnv.local(desks["Desk"]).tools()


def test_the_quoted_unknown_key_refusal_is_what_the_session_says(desks):
    env = AgentEnv.local(desks["Desk"])
    with env.open() as session:
        session.reset()
        with pytest.raises(ToolArgumentError) as refused:
            session.call_tool("submit", {"curves": [{"hour": "HE07", "points": [[0, 1], [1, 2]]}]})
    assert str(refused.value) + "\n" == QUOTED[0]


def test_the_quoted_schema_refusal_is_what_definition_says():
    def lookup(self, city=None) -> str:
        return ""

    schema = {"type": "object", "properties": {"city": {"type": "strin"}}, "required": True}
    with pytest.raises(ToolDefinitionError) as refused:
        type("Lookup", (Environment,), {"lookup": tool(input_schema=schema)(lookup)})
    assert str(refused.value) + "\n" == QUOTED[1]


def test_supported_versions_table_is_what_make_matrix_runs(monkeypatch):
    """docs/versions.md's table is `python .ci/matrix.py readme`, pyproject.toml's floors and uv.lock's newest
    versions; the README's is its training stack's rows (`readme --main`)."""
    import importlib.util

    path = Path(__file__).parents[2] / ".ci" / "matrix.py"
    spec = importlib.util.spec_from_file_location("ci_matrix", path)
    assert spec is not None and spec.loader is not None
    matrix = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, matrix)  # its dataclass looks itself up there
    spec.loader.exec_module(matrix)
    versions = (ROOT / "docs" / "versions.md").read_text()
    assert matrix.readme_table() in versions, (
        "docs/versions.md's table is stale: paste `python .ci/matrix.py readme`"
    )
    section = README[README.index("## Supported versions") :]
    assert matrix.readme_table(main_only=True) in section, (
        "README's versions table is stale: paste `python .ci/matrix.py readme --main`"
    )
    assert [row.name for row in matrix.ROWS] == ["floor", "newest-3.12", "newest-3.13"]


FIRST_RUN = README[: README.index("## The problem")]


def needs_uv() -> str:
    found = shutil.which("uv")
    if found is None:
        pytest.skip("uv is not installed")
    return found


def test_the_readme_says_how_to_run_agent_env_and_that_way_runs_it():
    command = re.search(r"from the checkout run\s+`(uv run --no-sync agent-env --help)`", FIRST_RUN)
    assert command is not None, "README: say how to run agent-env after `make demo`"
    assert "`source .venv/bin/activate`" in FIRST_RUN
    result = subprocess.run(
        [needs_uv(), *command.group(1).split()[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "serve" in result.stdout and "demo" in result.stdout


def test_the_readme_install_from_a_path_resolves_with_the_extras_it_names(tmp_path):
    pip_line = re.search(
        r'^pip install "/path/to/agent_env\[(?P<extras>[a-z,]+)\]"$', FIRST_RUN, re.MULTILINE
    )
    assert pip_line is not None, (
        "README: say how to install agent_env into one's own project, with its extras"
    )
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra in extras:
        assert f"`{extra}`" in FIRST_RUN  # every extra is named, with what it is for
    uv = needs_uv()
    subprocess.run([uv, "venv", "-q", str(tmp_path / "venv")], check=True, timeout=120)
    result = subprocess.run(
        [uv, "pip", "install", "--dry-run", "--python", str(tmp_path / "venv" / "bin" / "python"),
         f"{ROOT}[{pip_line.group('extras')}]"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert " + mcp==" in result.stderr and " + transformers==" in result.stderr


# The README as a whole: an introduction that stays short, whose code runs or compiles and whose commands exist.

DOCS = ROOT / "docs"


def test_the_readme_introduces_in_at_most_250_lines_and_docs_index_lists_every_page():
    assert len(README.splitlines()) <= 250, (
        "README.md is an introduction: move the detail to a page under docs/"
    )
    index = (DOCS / "index.md").read_text()
    pages = sorted(path.name for path in DOCS.glob("*.md") if path.name != "index.md")
    assert [page for page in pages if f"]({page})" not in index] == []


def test_every_relative_link_of_the_readme_and_the_docs_names_a_file_that_exists():
    broken = []
    for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_every_python_block_of_the_readme_compiles_and_the_class_runs_as_shown(capsys, monkeypatch):
    blocks = [content for language, content in fenced(README) if language == "python"]
    assert len(blocks) >= 4  # train, a class, an MCP server, τ²-bench
    for block in blocks:
        compile(block, "README.md", "exec")
    (desk,) = [block for block in blocks if "class Desk(Environment)" in block]
    # The block's env.dataset() imports datasets: first here, since a package first imported while sys.modules is
    # swapped below half-initializes (the import system keeps the real dict; multiprocess reads the copy).
    importlib.import_module("datasets")
    monkeypatch.setattr(sys, "modules", dict(sys.modules))  # the block defines classes at module level only
    exec(compile(desk, "README.md", "exec"), {"__name__": "readme_desk"})
    assert capsys.readouterr().out == "0.1\n"


def readme_commands() -> list[list[str]]:
    """Each `agent-env ...` command line of the README's shell blocks, its continuation lines joined."""
    commands = []
    for language, content in fenced(README):
        if language != "bash":
            continue
        for line in content.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("agent-env "):
                commands.append(shlex.split(line)[1:])
    return commands


@pytest.mark.parametrize("command", readme_commands(), ids=lambda command: " ".join(command)[:60])
def test_every_command_the_readme_shows_exists_with_the_options_it_gives(command):
    from typer.testing import CliRunner

    from agent_env.cli import app

    shown = CliRunner().invoke(app, [command[0], "--help"], env={"COLUMNS": "240"})
    assert shown.exit_code == 0, shown.output
    options = [word.split("=")[0] for word in command[1:] if word.startswith("-")]
    assert [option for option in options if option not in shown.stdout] == []
