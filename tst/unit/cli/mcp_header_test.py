"""`--mcp-header 'NAME: VALUE'`: the headers every `--mcp` URL is sent (its own credentials, not agent-env's `--token`),
`${VAR}` read from the environment so that no secret is on the command line, and no value ever shown."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agent_env.server import build_app
from tst.unit.server.running import running

TOKEN = "s3cret"


@pytest.fixture(scope="module")
def wants_a_token() -> Iterator[str]:
    """A real MCP server over streamable HTTP that answers 401 without `Authorization: Bearer s3cret`: the desk as
    `agent-env serve --token` serves it."""
    with running(build_app("gridsim-desk", token=TOKEN)) as url:
        yield f"{url}/mcp"


def test_a_header_read_from_the_environment_reaches_a_url_that_wants_a_token(
    invoke, wants_a_token, monkeypatch
):
    monkeypatch.setenv("MCP_TOKEN", TOKEN)
    result = invoke(
        "tools", "--mcp", wants_a_token, "--mcp-header", "Authorization: Bearer ${MCP_TOKEN}", "--json"
    )
    assert result.exit_code == 0, result.output
    assert "submit_dam_offers" in [tool["name"] for tool in json.loads(result.stdout)["tools"]]
    assert TOKEN not in result.output


def test_without_the_header_the_refusal_names_the_command_line_way(invoke, wants_a_token, monkeypatch):
    monkeypatch.setenv("AGENT_ENV_TOKEN", TOKEN)  # agent-env's own token is not the MCP server's
    result = invoke("tools", "--mcp", wants_a_token)
    assert result.exit_code == 2
    assert "refused the credentials (HTTP 401)" in result.output
    assert "--mcp-header 'Authorization: Bearer ${TOKEN}'" in result.output


def test_an_unset_variable_is_named_and_no_value_is_shown(invoke, wants_a_token, monkeypatch):
    monkeypatch.delenv("MCP_TOKEN", raising=False)
    monkeypatch.setenv("OTHER", TOKEN)
    result = invoke(
        "tools",
        "--mcp",
        wants_a_token,
        "--mcp-header",
        "X-Other: ${OTHER}",
        "--mcp-header",
        "Authorization: Bearer ${MCP_TOKEN}",
    )
    assert result.exit_code == 2
    assert (
        "--mcp-header 'Authorization' reads ${MCP_TOKEN}, but the environment variable MCP_TOKEN is not set"
        in (result.output)
    )
    assert TOKEN not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("command", ["tools", "render", "check", "serve", "eval"])
def test_every_command_that_takes_mcp_takes_headers_and_refuses_them_without_a_url(invoke, command):
    result = invoke(command, "--mcp", "node index.js", "--mcp-header", f"Authorization: Bearer {TOKEN}")
    assert result.exit_code == 2, result.output
    assert "--mcp-header applies to --mcp URLs only" in result.output
    assert TOKEN not in result.output
