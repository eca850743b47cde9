"""Evaluations against the scripted server (`scripted.py`) on ToyDesk: no torch, no model, real sockets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.evaluation import Endpoint, Report, evaluate
from testbed.toy import ToyDesk


@pytest.fixture
def toy() -> AgentEnv:
    return AgentEnv.local(ToyDesk)


@pytest.fixture
def run(toy: AgentEnv, tmp_path: Path) -> Callable[..., Report]:
    """`evaluate` ToyDesk against a server URL, with retries that back off for milliseconds, into tmp_path."""

    def play(
        url: str, *, env: AgentEnv | None = None, endpoint: dict[str, Any] | None = None, **options: Any
    ) -> Report:
        settings = {"backoff": 0.001, "max_backoff": 0.01, **(endpoint or {})}
        options.setdefault("out", tmp_path / "run.jsonl")
        return evaluate(env or toy, Endpoint(url, **settings), **options)

    return play
