"""`agent-env tools | render | check --mcp`: will the model see an MCP server's tools whole, under its template?"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_env.cli import app
from tst.mcp.conftest import NODE, node_server, python_server, scripted, servers_left, wait_until


@pytest.fixture
def invoke() -> Iterator[Callable[..., Any]]:
    """Run a command in process; then no server it started may be left (each command closes its environment)."""
    runner = CliRunner()

    def run(*arguments: str) -> Any:
        return runner.invoke(app, list(arguments), env={"COLUMNS": "240"})

    yield run
    assert wait_until(lambda: not servers_left()), f"server processes left running: {servers_left()}"


def memory() -> str:
    return f"{NODE} {node_server('server-memory')}"


def test_tools_lists_a_servers_tools_with_their_schemas(invoke: Callable[..., Any]) -> None:
    result = invoke("tools", "--mcp", memory(), "--json")
    assert result.exit_code == 0, result.output
    listing = json.loads(result.stdout)
    tools = {tool["name"]: tool for tool in listing["tools"]}
    assert tools["create_entities"]["inputSchema"]["properties"]["entities"]["items"]["required"] == [
        "name", "entityType", "observations",
    ]  # fmt: skip
    assert listing["environment"] == "memory-server"


def test_check_says_every_tool_reaches_the_model_whole_under_each_family(invoke: Callable[..., Any]) -> None:
    result = invoke("check", "--mcp", memory(), "-t", "qwen3,gemma4,gptoss", "--json")
    assert result.exit_code == 0, result.output
    verdicts = {
        entry["template"]: {tool["status"] for tool in entry["tools"]}
        for entry in json.loads(result.stdout)["templates"]
    }
    assert verdicts == {"qwen3": {"exact"}, "gemma4": {"lossless"}, "gptoss": {"lossless"}}


def test_check_stock_shows_what_gptoss_would_drop(invoke: Callable[..., Any]) -> None:
    result = invoke("check", "--mcp", memory(), "-t", "gptoss", "--stock")
    assert result.exit_code == 1  # an array of objects is `any[]` under gpt-oss's own template
    assert "create_entities" in result.output


def test_render_shows_the_lowered_prompt(invoke: Callable[..., Any]) -> None:
    result = invoke("render", "--mcp", memory(), "-t", "gptoss")
    assert result.exit_code == 0, result.output
    assert (
        "// An array of items, each an object {name (required; The name of the entity): a string;"
        in result.stdout
    )


def test_render_lossy_marks_each_tool_trls_port_skips_or_cannot_bind(invoke: Callable[..., Any]) -> None:
    result = invoke("render", "--lossy", "--mcp", " ".join(scripted("--odd-names")))
    assert result.exit_code == 0, result.output
    # one line a marked tool ("# NAME: ..."), after the header ("# scripted under qwen3: ..."); a logged warning may
    # come first or not, as the process has logged it before
    marked = {
        found.group(1): line
        for line in result.stderr.splitlines()
        if (found := re.match(r"# ([^\s:]+): ", line))
    }
    assert sorted(marked) == ["café", "get_sum", "whoami"]
    assert marked["café"].startswith(
        "# café: TRL's port of listed tools skips it (its name 'café' is no ASCII"
    )
    assert "(the name it is listed under, 'get-sum', is no ASCII Python identifier" in marked["get_sum"]
    for name in ("café", "get_sum"):
        assert marked[name].endswith(
            "so a plain TRL environment would not offer it; shown in its nearest form"
        )
    assert marked["whoami"].startswith("# whoami: TRL cannot render it as written (SyntaxError: ")
    assert '"name": "get_sum"' in result.stdout and '"name": "café"' in result.stdout


def test_several_named_servers_are_one_environment(invoke: Callable[..., Any]) -> None:
    result = invoke(
        "tools", "--mcp", f"graph={memory()}", "--mcp", f"clock={python_server('mcp-server-time')}", "--json"
    )
    assert result.exit_code == 0, result.output
    names = [tool["name"] for tool in json.loads(result.stdout)["tools"]]
    assert "graph_create_entities" in names and "clock_convert_time" in names


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ("tools", "gridsim-desk", "--mcp", "node index.js"),
            "name either ENV ('gridsim-desk') or --mcp servers, not both",
        ),
        (("tools", "--mcp", "node a.js", "--mcp", "node b.js"), "with several servers, name each one"),
        (("tools", "--mcp", "mcp-server-nowhere"), "command 'mcp-server-nowhere' was not found"),
        (("serve", "--mcp", "mcp-server-nowhere"), "command 'mcp-server-nowhere' was not found"),
    ],
)
def test_what_names_no_server_is_one_line_and_exit_2(
    invoke: Callable[..., Any], arguments: tuple[str, ...], message: str
) -> None:
    result = invoke(*arguments)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
