"""`agent-env serve` (`agent_env/cli/serve.py` and `server/_serve.py`): a thin command, and no unauthenticated
exposure."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import agent_env.server._serve as serve_module
from agent_env.cli import app
from agent_env.cli.serve import parse_row
from agent_env.server._serve import check_exposure, is_loopback
from agent_env.server.limits import LOOPBACK_ORIGINS

runner = CliRunner()


@pytest.fixture
def served(monkeypatch) -> dict[str, Any]:
    """What `serve` was asked to do, instead of doing it."""
    calls: dict[str, Any] = {}

    def fake_serve(environment: str, **options: Any) -> None:
        check_exposure(options["host"], options["token"], options["allow_unauthenticated"])
        calls.update(environment=environment, **options)

    monkeypatch.setattr(serve_module, "serve", fake_serve)
    return calls


def test_serve_passes_its_options_through(served, monkeypatch):
    monkeypatch.delenv("AGENT_ENV_TOKEN", raising=False)
    result = runner.invoke(
        app,
        ["serve", "gridsim-desk", "--port", "9001", "--max-episodes", "8", "--call-timeout", "2.5",
         "--episode-budget", "90", "-c", "bundle=desk-v4", "-c", "limit=3", "--mcp-row", '{"seed": 7}'],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert served["environment"] == "gridsim-desk"
    assert (served["host"], served["port"], served["token"]) == ("127.0.0.1", 9001, None)
    assert (served["max_episodes"], served["call_timeout"], served["idle_timeout"]) == (8, 2.5, 600.0)
    assert served["episode_budget"] == 90
    assert (served["bundle"], served["limit"], served["mcp_row"]) == ("desk-v4", 3, {"seed": 7})
    assert (served["header_timeout"], served["body_timeout"], served["max_body_values"]) == (
        10.0,
        30.0,
        20_000,
    )
    assert served["allowed_origins"] == list(LOOPBACK_ORIGINS)


def test_serve_lets_in_the_origins_it_is_told_to_besides_this_machines(served, monkeypatch):
    monkeypatch.delenv("AGENT_ENV_TOKEN", raising=False)
    result = runner.invoke(
        app, ["serve", "--allow-origin", "https://app.example.com", "--allow-origin", "http://lab:*",
              "--header-timeout", "3", "--body-timeout", "4", "--max-body-values", "50"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert served["allowed_origins"] == [*LOOPBACK_ORIGINS, "https://app.example.com", "http://lab:*"]
    assert (served["header_timeout"], served["body_timeout"], served["max_body_values"]) == (3.0, 4.0, 50)


def test_serve_refuses_a_public_host_without_a_token(served, monkeypatch):
    monkeypatch.delenv("AGENT_ENV_TOKEN", raising=False)
    result = runner.invoke(app, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "refusing to serve on 0.0.0.0 without a token" in result.output
    assert not served


def test_a_public_host_is_served_with_a_token_from_the_environment_or_when_allowed(served, monkeypatch):
    monkeypatch.setenv("AGENT_ENV_TOKEN", "tok")
    assert runner.invoke(app, ["serve", "--host", "0.0.0.0"]).exit_code == 0
    assert served["token"] == "tok"
    monkeypatch.delenv("AGENT_ENV_TOKEN")
    assert runner.invoke(app, ["serve", "--host", "10.0.0.5", "--allow-unauthenticated"]).exit_code == 0


def test_a_bad_config_is_reported_without_a_traceback(served):
    result = runner.invoke(app, ["serve", "-c", "no-equals-sign"])
    assert result.exit_code == 2
    assert "config 'no-equals-sign' is not key=value" in result.output


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.1.2.3", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.4", False), ("example.com", False)],
)  # fmt: skip
def test_loopback_hosts_are_told_apart(host, loopback):
    assert is_loopback(host) is loopback


def test_the_mcp_row_must_be_a_json_object():
    assert parse_row(None) is None
    assert parse_row('{"seed": 3}') == {"seed": 3}
    with pytest.raises(ValueError, match="--mcp-row must be a JSON object"):
        parse_row("[1]")


def test_the_command_lists_serve():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "serve" in result.output


def test_serve_openenv_adds_openenvs_surface_at_its_prefix(served, monkeypatch):
    monkeypatch.delenv("AGENT_ENV_TOKEN", raising=False)
    assert runner.invoke(app, ["serve", "--openenv"]).exit_code == 0
    assert [surface.prefix for surface in served["surfaces"]] == ["/openenv"]
    assert runner.invoke(app, ["serve"]).exit_code == 0
    assert served["surfaces"] == []


def test_serve_says_at_start_which_environment_its_tool_set_and_where_it_is_served():
    from agent_env.schema import fingerprint

    from .toy import ToyDesk

    root = Path(__file__).resolve().parents[3]
    with socket.socket() as probe:  # a free port, named in the command so the line can say it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {**os.environ, "PYTHONPATH": f"{root / 'tst' / 'unit'}{os.pathsep}{root}"}
    command = [sys.executable, "-m", "agent_env.cli", "serve", f"{ToyDesk.__module__}:ToyDesk", "--port", str(port),
               "--openenv"]  # fmt: skip
    server = subprocess.Popen(command, env=environment, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        lines = []
        for line in server.stderr:
            lines.append(line.strip())
            if "Uvicorn running on" in line:
                break
        said = [line for line in lines if "agent_env: serving" in line]
        url = f"http://127.0.0.1:{port}"
        assert said == [
            f"INFO:     agent_env: serving ToyDesk ({len(ToyDesk.tools)} tools, tool set "
            f"{fingerprint(ToyDesk.tools.published)}) at "
            f"{url}: MCP at /mcp, the episode API for AgentEnv.connect('{url}'), OpenEnv's at /openenv"
        ], lines
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
