"""A real GRPOTrainer step on an OpenEnv environment: `AgentEnv.openenv(url).factory` against OpenEnv's real server.

The server is openenv 0.10.0 serving testbed/openenv_ledger.py in its own venv (the OpenEnv tier's fixture). The prompt
shows the ledger's full nested schema as agent_env publishes it, a scripted call reaches the server (a malformed
one is refused in the trainer's process and never sent), and the reward OpenEnv's environment returned with
`done: true` is the one TRL logs.
"""

from __future__ import annotations

import json

import pytest

from agent_env import AgentEnv
from agent_env.training import SchemaTool
from agent_env.training._render_check import expected_rendering, tojson
from tst.trl.conftest import grpo_config

BUY_3 = {"orders": [{"side": "buy", "qty": 3}]}
HOLD_3 = {"orders": [{"side": "hold", "qty": 3}]}
HOLD_REFUSAL = (
    "Invalid arguments for tool 'place_orders'; fix these and call it again:\n"
    '- orders[0].side: expected one of "buy", "sell"; got "hold"'
)


def tool_call(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


def reply(index: int, prompt: str) -> str:
    """Even prompts buy 3 and submit 3 (reward 1.0); odd ones send a malformed order, then submit 3 (reward 0.25)."""
    answered = prompt.count("<tool_response>")
    if answered == 0:
        return tool_call("place_orders", BUY_3 if index % 2 == 0 else HOLD_3)
    if answered == 1:
        return tool_call("submit", {"total": 3})
    return "Done.<|im_end|>"


def test_a_grpo_step_on_an_openenv_server_shows_its_full_schemas_and_scores_with_its_reward(
    openenv_tier, tiny_model, tokenizer, tmp_path, scripted_generation
):
    import datasets
    from trl import GRPOTrainer

    env = AgentEnv.openenv(openenv_tier.ledger_url("0.10.0"))
    rows = [
        {"prompt": [{"role": "user", "content": "Buy 3 units, then submit the net total."}], "target": 3}
    ] * 2
    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path, max_tool_calling_iterations=3),
        train_dataset=datasets.Dataset.from_list(rows),
        environment_factory=env.factory,
    )
    script = scripted_generation(trainer, reply)
    trainer.train()

    first_prompt = script.prompts[0]
    for published in env.tools():  # nested items, enum, bounds, as published; end_turn (agent_env's own) too
        assert tojson(expected_rendering(published)) in first_prompt
    assert '"enum": ["buy", "sell"]' in first_prompt and '"maximum": 100' in first_prompt
    assert all(isinstance(tool, SchemaTool) for tool in trainer._env_tools[None])

    responses = [prompt for prompt in script.prompts if "<tool_response>" in prompt]
    refused = next(text for text in responses if "Invalid arguments" in text)
    # The model reads the in-process refusal to the letter, inside TRL's {"error": ...}
    assert "{'error': " + HOLD_REFUSAL + "}" in refused
    assert any("1 orders in the book" in text for text in responses)
    logged = trainer.state.log_history[0]
    assert logged["rewards/Ledger/mean"] == pytest.approx((1.0 + 0.25) / 2)  # the server's rewards, with done
    assert logged["tools/failure_frequency"] == pytest.approx(0.25)  # one call in four was refused
    for environment in trainer.environments:
        environment._session.close()
