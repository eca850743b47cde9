"""`agent-env demo --train`: real GRPOTrainer steps through `env.factory` on the desk, with a tiny random model.

Nothing is scripted here: a random model writes no tool calls, so the steps train on the desk's reward for the
text it does write; what is asserted is that the command runs the trainer end to end and reports each step.
"""

from __future__ import annotations

import re

from typer.testing import CliRunner

from agent_env.cli import app


def test_demo_train_runs_a_real_grpo_step_and_reports_it():
    result = CliRunner().invoke(app, ["demo", "--train", "--steps", "1"])
    assert result.exit_code == 0, result.output
    assert "Reward reaching the trainer (get_reward): " in result.output  # the short form ran first
    assert re.search(
        r"^step 1: loss -?\d+\.\d{4}, reward \d\.\d{3}, tool calls per completion", result.output, re.M
    )
