"""A real GRPOTrainer step on a Ray pool: `AgentEnv.ray(...).factory`, with the episodes on actors of a local cluster.

The prompt shows the very schemas it shows in process (the render check ran in this process, on the provider's
tools), a scripted tool call reaches the environment on its actor (and a malformed one is refused there, with the
in-process message), and the pool's reward reaches TRL. AsyncGRPO's rollout loop is built from the pickled factory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agent_env import AgentEnv
from agent_env.errors import ToolArgumentError
from agent_env.session import LocalSession
from agent_env.training import SchemaTool
from agent_env.training._render_check import expected_rendering, tojson
from testbed.toy import ToyDesk
from tst.trl.conftest import async_rollout_loop, grpo_config
from tst.trl.grpo_test import MALFORMED, VALID


def reply(index: int, prompt: str) -> str:
    if "<tool_response>" in prompt:
        return "Done.<|im_end|>"
    arguments = VALID if index % 2 == 0 else MALFORMED
    return f"<tool_call>\n{json.dumps({'name': 'submit_offers', 'arguments': arguments})}\n</tool_call><|im_end|>"


def in_process_refusal() -> str:
    session = LocalSession(ToyDesk())
    session.reset()
    with pytest.raises(ToolArgumentError) as caught:
        session.call_tool("submit_offers", MALFORMED)
    return str(caught.value)


@pytest.fixture(scope="module")
def env(ray_cluster: str) -> Iterator[AgentEnv]:
    env = AgentEnv.ray(ToyDesk, actors=2, pool="trl")
    yield env
    env.provider.shutdown()


def test_a_grpo_step_on_a_ray_pool_sees_its_schemas_and_scores_with_its_reward(
    env, tiny_model, tokenizer, tmp_path, scripted_generation
):
    from trl import GRPOTrainer

    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path),
        train_dataset=env.dataset("train"),
        environment_factory=env.factory,
    )
    script = scripted_generation(trainer, reply)
    trainer.train()

    first_prompt = script.prompts[0]
    for published in ToyDesk.tools.published:  # the in-process schemas, exactly
        assert tojson(expected_rendering(published)) in first_prompt

    episodes = [environment._session.episode_id for environment in trainer.environments]
    assert sorted(episode.split("/")[1] for episode in episodes) == ["0", "1"]  # one per actor
    logged = trainer.state.log_history[0]
    assert logged["rewards/ToyDesk/mean"] == pytest.approx(0.15)  # (3/10 + 0) / 2: the reward from the pool
    assert logged["tools/failure_frequency"] == pytest.approx(0.5)
    responses = [prompt for prompt in script.prompts if "<tool_response>" in prompt]
    refused = next(text for text in responses if "Invalid arguments" in text)
    # TRL's tool message holds the in-process error, to the letter, as written (real lines, not a repr's escapes).
    assert "{'error': " + in_process_refusal() + "}" in refused
    assert any("accepted 3 curves and 1 AS offers" in text for text in responses)


def test_asyncgrpo_rollout_loop_discovers_tools_from_a_pickled_ray_factory(env, tokenizer):
    loop = async_rollout_loop(env, tokenizer)
    tools = {tool.__name__: tool for tool in loop._env_tools[None]}
    assert all(isinstance(tools[name], SchemaTool) for name in tools)
    assert loop.reward_func_names == ["ToyDesk"]
    instance = loop._environment_pool[None][0]
    instance.reset(task="train-0")
    assert instance._session.episode_id.startswith("trl/")
    assert instance.write_note(text="hi") == "1 notes"  # an async tool, run on the actor
    assert instance.submit_offers(**VALID) == "accepted 3 curves and 1 AS offers"
    assert instance.get_reward() == pytest.approx(0.3)
