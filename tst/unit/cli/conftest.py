"""Run `agent-env` in process with a terminal wide enough that no line the tests look for is wrapped."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from agent_env.cli import app


@pytest.fixture(scope="session")
def invoke() -> Any:
    runner = CliRunner()

    def run(*arguments: str) -> Any:
        return runner.invoke(app, list(arguments), env={"COLUMNS": "240"})

    return run
