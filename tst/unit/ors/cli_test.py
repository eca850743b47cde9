"""`agent-env serve ENV --ors`: the ORS surface served beside MCP and the control API, said at start-up."""

from __future__ import annotations

import logging
from typing import Any

import uvicorn
from starlette.testclient import TestClient
from typer.testing import CliRunner

from agent_env.cli import app


def test_serve_with_ors_serves_its_routes_at_the_root_and_says_so(monkeypatch, caplog):
    served: dict[str, Any] = {}
    monkeypatch.setattr(
        uvicorn, "run", lambda application, **options: served.update(app=application, **options)
    )
    with caplog.at_level(logging.INFO, logger="agent_env"):
        result = CliRunner().invoke(
            app, ["serve", "testbed.toy:ToyDesk", "--ors", "--openenv", "--port", "9003"]
        )
    assert result.exit_code == 0, result.output
    assert "ORS at the root" in caplog.text and "OpenEnv's at /openenv" in caplog.text
    with TestClient(served["app"], base_url="http://127.0.0.1:9003") as client:
        assert client.get("/list_environments").json() == ["toydesk"]
        assert "input_schema" in client.get("/tools", headers={"X-Session-ID": "s"}).json()["tools"][0]
        assert "inputSchema" in client.get("/tools").json()["tools"][0]
        assert client.get("/openenv/health").json() == {"status": "healthy"}


def test_serve_without_ors_serves_none_of_its_routes(monkeypatch):
    served: dict[str, Any] = {}
    monkeypatch.setattr(
        uvicorn, "run", lambda application, **options: served.update(app=application, **options)
    )
    assert CliRunner().invoke(app, ["serve", "testbed.toy:ToyDesk"]).exit_code == 0
    with TestClient(served["app"], base_url="http://127.0.0.1:9003") as client:
        assert client.get("/list_environments").status_code == 404
        assert "inputSchema" in client.get("/tools", headers={"X-Session-ID": "s"}).json()["tools"][0]
