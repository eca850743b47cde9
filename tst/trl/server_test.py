"""A real GRPOTrainer step on a served environment: `AgentEnv.connect(url).factory` against a server on loopback.

The prompt shows the very schemas it shows in process, a scripted tool call reaches the served environment (and a
malformed one is refused there, with the in-process message), and the served environment's reward reaches TRL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agent_env import AgentEnv
from agent_env.errors import ToolArgumentError
from agent_env.server.app import build_app
from agent_env.session import LocalSession
from agent_env.training import SchemaTool
from agent_env.training._render_check import expected_rendering, tojson
from testbed.toy import ToyDesk
from tst.trl.conftest import async_rollout_loop, grpo_config
from tst.trl.grpo_test import MALFORMED, VALID
from tst.unit.server.running import running


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
def served() -> Iterator[tuple[object, str]]:
    app = build_app(ToyDesk)
    with running(app) as url:
        yield app, url


def test_a_grpo_step_on_a_served_environment_sees_its_schemas_and_scores_with_its_reward(
    served, tiny_model, tokenizer, tmp_path, scripted_generation
):
    from trl import GRPOTrainer

    app, url = served
    env = AgentEnv.connect(url)
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

    registry = app.state.episodes
    served_desks = [
        registry._episodes[environment._session.episode_id].session.environment
        for environment in trainer.environments
    ]
    assert [len(desk.book) for desk in served_desks] == [
        3,
        0,
    ]  # the valid call reached its served environment
    logged = trainer.state.log_history[0]
    assert logged["rewards/ToyDesk/mean"] == pytest.approx(0.15)  # (3/10 + 0) / 2: the served reward
    assert logged["tools/failure_frequency"] == pytest.approx(0.5)
    responses = [prompt for prompt in script.prompts if "<tool_response>" in prompt]
    refused = next(text for text in responses if "Invalid arguments" in text)
    # TRL's tool message: the in-process error, to the letter, as written inside TRL's {"error": ...}
    assert "{'error': " + in_process_refusal() + "}" in refused
    assert any("accepted 3 curves and 1 AS offers" in text for text in responses)


def test_asyncgrpo_rollout_loop_discovers_tools_from_a_pickled_remote_factory(served, tokenizer):
    _, url = served
    env = AgentEnv.connect(url)
    loop = async_rollout_loop(env, tokenizer)
    tools = {tool.__name__: tool for tool in loop._env_tools[None]}
    assert all(isinstance(tools[name], SchemaTool) for name in tools)
    assert loop.reward_func_names == ["ToyDesk"]
    instance = loop._environment_pool[None][0]
    instance.reset(task="train-0")
    assert instance.write_note(text="hi") == "1 notes"  # an async tool, run by the server
    assert instance.submit_offers(**VALID) == "accepted 3 curves and 1 AS offers"
    assert instance.get_reward() == pytest.approx(0.3)
