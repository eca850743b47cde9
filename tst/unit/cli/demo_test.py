"""`agent-env demo` (`agent_env/demo.py`): the README's first command (`make demo`) runs end to end."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import agent_env.inspection.grpo as grpo


def test_agent_env_demo_builds_the_factory_shows_both_tool_blocks_and_scores_an_episode():
    command = Path(sys.executable).with_name("agent-env")  # the console script, as `make demo` runs it
    result = subprocess.run(
        [str(command), "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "the render check passed" in out
    assert '"prefixItems"' in out  # the published schema is shown
    assert "TRL's method schema, the lossy path (" in out
    assert '- curves[0].points[1][0]: expected number; got string "60"' in out
    assert "Day settled. Profit $" in out
    assert "Reward reaching the trainer (get_reward): " in out
    assert "agent-env demo --train" in out


def test_train_without_trl_and_torch_says_what_to_install(invoke, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        grpo.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch" else real_find_spec(name, *a),
    )
    result = invoke("demo", "--train")
    assert result.exit_code == 2
    assert "Reward reaching the trainer (get_reward): " in result.stdout  # the short form ran first
    assert "agent-env demo: --train runs a real trl.GRPOTrainer and needs torch: pip install" in result.stderr
