"""The `agent-env` command (the console script `agent_env.cli:main`)."""

from __future__ import annotations

from agent_env.cli.eval import app, eval_command, main

__all__ = ["app", "eval_command", "main"]
