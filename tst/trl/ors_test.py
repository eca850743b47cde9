"""A real GRPOTrainer step on an ORS environment: `AgentEnv.ors(url).factory` against the openreward SDK's own server.

The server is the SDK's, serving testbed/ors_orders.py (written with its own tools and pydantic inputs) in its own
venv (the ORS tier's fixture). The prompt shows the nested schema as agent_env publishes it, with no `$ref`, no
`title`; the task's prompt comes from its session; a malformed call is refused in the trainer's process and never
sent; and the reward the SDK's environment returned with `finished: true` is the one TRL logs.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import pickle
import re
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.training import SchemaTool
from agent_env.training._render_check import expected_rendering, tojson
from tst.trl.conftest import async_rollout_loop, grpo_config


def awaited(answer: Any) -> Any:
    """A tool's answer: on Python 3.12+ its tools are coroutine functions, which AsyncGRPO awaits."""
    return asyncio.run(answer) if inspect.isawaitable(answer) else answer


def tool_call(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


def reply(index: int, prompt: str) -> str:
    """Even rollouts buy the target and submit it (1.0); odd ones send a malformed order, then submit it anyway with
    nothing bought (0.0)."""
    target = int(re.search(r"net quantity is (\d+)", prompt).group(1))
    answered = prompt.count("<tool_response>")
    if answered == 0:
        side = "buy" if index % 2 == 0 else "hold"
        return tool_call("place_orders", {"orders": [{"side": side, "qty": target}]})
    if answered == 1:
        return tool_call("submit", {"total": target})
    return "Done.<|im_end|>"


def test_a_grpo_step_on_the_sdks_server_shows_full_schemas_and_scores_with_its_reward(
    ors_tier, tiny_model, tokenizer, tmp_path, scripted_generation
):
    from trl import GRPOTrainer

    env = AgentEnv.ors(ors_tier.sdk.url(), "orders")
    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path, max_tool_calling_iterations=3),
        train_dataset=env.dataset("train").select(range(1)),
        environment_factory=env.factory,
    )
    script = scripted_generation(trainer, reply)
    trainer.train()

    first_prompt = script.prompts[0]
    for published in env.tools():  # nested items, enums, bounds, as published; end_turn (agent_env's own) too
        assert tojson(expected_rendering(published)) in first_prompt
    assert '"enum": ["lit", "dark"]' in first_prompt and '"maximum": 100' in first_prompt
    assert "$ref" not in first_prompt and '"title"' not in first_prompt
    assert (
        "Place orders whose net quantity is 3, then submit it." in first_prompt
    )  # from the session's /prompt
    assert all(isinstance(tool, SchemaTool) for tool in trainer._env_tools[None])

    responses = [prompt for prompt in script.prompts if "<tool_response>" in prompt]
    refused = next(text for text in responses if "Invalid arguments" in text)
    assert "Invalid arguments for tool 'place_orders'; fix these and call it again:" in refused
    assert "orders[0].side: expected one of" in refused and "hold" in refused
    logged = trainer.state.log_history[0]
    assert logged["rewards/orders/mean"] == pytest.approx(0.5)  # 1.0 and 0.0: the server's, with finished
    assert logged["tools/failure_frequency"] == pytest.approx(0.25)  # one call in four was refused
    for environment in trainer.environments:
        environment._session.close()


def test_asyncgrpos_rollout_worker_gets_the_factory_pickled_and_plays_an_episode(ors_tier, tokenizer):
    env = AgentEnv.ors(ors_tier.sdk.url(), "orders", chat_template="qwen3")
    loop = async_rollout_loop(env, tokenizer)  # the factory after a pickle round trip, as the worker gets it
    tools = {tool.__name__: tool for tool in loop._env_tools[None]}
    assert sorted(tools) == ["end_turn", "explode", "peek", "place_orders", "submit"]
    assert all(isinstance(tool, SchemaTool) for tool in tools.values())
    assert loop.reward_func_names == ["orders"]
    instance = loop._environment_pool[None][0]
    row = env.provider.dataset_rows("train")[1]
    assert instance.reset(**row) == "Place orders whose net quantity is 5, then submit it."
    assert awaited(instance.place_orders(orders=[{"side": "buy", "qty": 5}])) == "1 orders in the book"
    assert awaited(instance.submit(total=5)) == "right"
    assert instance.get_reward() == 1.0
    instance._session.close()
    assert b"secret" not in pickle.dumps(env.factory)
