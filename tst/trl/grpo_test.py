"""A real GRPOTrainer step through `environment_factory`: the model sees full schemas, calls reach the environment."""

from __future__ import annotations

import inspect
import json
import re
from typing import Any, ClassVar

import pytest

from agent_env import AgentEnv, Environment
from agent_env.training import SchemaTool
from agent_env.training._render_check import expected_rendering, tojson
from testbed.toy import MALFORMED, VALID, ToyDesk
from tst.trl.conftest import async_rollout_loop, grpo_config


def tool_call(arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': 'submit_offers', 'arguments': arguments})}\n</tool_call><|im_end|>"


def reply(index: int, prompt: str) -> str:
    if "<tool_response>" in prompt:
        return "Done.<|im_end|>"
    return tool_call(VALID if index % 2 == 0 else MALFORMED)


@pytest.fixture
def trainer(tiny_model, tokenizer, tmp_path):
    from trl import GRPOTrainer

    env = AgentEnv.local(ToyDesk)
    ToyDesk.property_reads = 0
    return GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path),
        train_dataset=env.dataset("train"),
        environment_factory=env.factory,
    )


def test_a_grpo_step_shows_full_schemas_and_scores_with_the_environments_reward(trainer, scripted_generation):
    script = scripted_generation(trainer, reply)
    trainer.train()

    first_prompt = script.prompts[0]
    # the reset observation, which TRL appends to the user's message as is, reads as a paragraph of its own
    assert re.search(r"<\|im_start\|>user\nTrade\.\n\nTask train-\d: submit offers", first_prompt)
    submit = tojson(expected_rendering(ToyDesk.tools["submit_offers"].published()))
    assert submit in first_prompt  # the nested schema, exactly as published
    end_turn = tojson(expected_rendering(ToyDesk.tools["end_turn"].published()))
    assert end_turn in first_prompt  # end_turn too: its published schema says it takes no arguments

    books = [len(environment._session.environment.book) for environment in trainer.environments]
    assert books == [3, 0]  # the valid call reached its environment; the malformed one changed nothing
    logged = trainer.state.log_history[0]
    assert logged["rewards/ToyDesk/mean"] == pytest.approx(0.15)  # (3/10 + 0) / 2: the environment's reward
    assert logged["tools/failure_frequency"] == pytest.approx(0.5)

    responses = [prompt for prompt in script.prompts if "<tool_response>" in prompt]
    malformed = next(text for text in responses if "Invalid arguments" in text)
    assert "curves[0].points[1]: [100] has less than 2 items" in malformed
    # The model reads the error as written, inside TRL's {"error": ...}: real lines, not a repr's escapes.
    assert (
        "{'error': Invalid arguments for tool 'submit_offers'; fix these and call it again:\n- curves[0]"
        in (malformed)
    )
    assert any("accepted 3 curves and 1 AS offers" in text for text in responses)
    assert ToyDesk.property_reads == 0  # discovery never evaluated the environment's property


def test_trl_discovers_schema_tools_on_every_pooled_instance(trainer):
    tools = {tool.__name__: tool for tool in trainer._env_tools[None]}
    assert sorted(tools) == sorted(ToyDesk.tools)
    assert all(isinstance(tools[name], SchemaTool) for name in tools)


def test_asyncgrpo_rollout_loop_discovers_tools_from_a_pickled_factory(tokenizer):
    env = AgentEnv.local(ToyDesk)
    loop = async_rollout_loop(env, tokenizer)
    tools = {tool.__name__: tool for tool in loop._env_tools[None]}
    assert isinstance(tools["submit_offers"], SchemaTool) and isinstance(tools["write_note"], SchemaTool)
    assert loop.reward_func_names == ["ToyDesk"]
    instance = loop._environment_pool[None][0]
    instance.reset()
    # AsyncGRPO runs a tool that is not a coroutine function in a thread pool, synchronously: the async tool works so.
    if not inspect.iscoroutinefunction(tools["write_note"]):
        assert instance.write_note(text="hi") == "1 notes"
    assert instance.submit_offers(**VALID) == "accepted 3 curves and 1 AS offers"


class Roster(Environment):
    """Rows that Arrow cannot hold as they are: a list of mixed types, a column of mixed types, dicts of other keys."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def reset(self, **row: Any) -> str:
        type(self).seen.append(row)
        return "Name the people."

    def reward(self) -> float:
        return 1.0

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        return [
            {
                "prompt": [{"role": "user", "content": "Go."}],
                "people": [["ada", 36]],
                "x": 1,
                "meta": {"a": 1},
            },
            {
                "prompt": [{"role": "user", "content": "Go."}],
                "people": [["bob", 41]],
                "x": "one",
                "meta": {"b": "x"},
            },
        ]


def test_rows_arrow_cannot_hold_as_they_are_reach_reset_as_given(
    tiny_model, tokenizer, tmp_path, scripted_generation
):
    from trl import GRPOTrainer

    env = AgentEnv.local(Roster)
    Roster.seen.clear()
    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path, per_device_train_batch_size=4, num_generations=2),
        train_dataset=env.dataset("train"),
        environment_factory=env.factory,
    )
    scripted_generation(trainer, lambda index, prompt: "Nobody.<|im_end|>")
    trainer.train()
    given = {json.dumps(row, sort_keys=True) for row in Roster().dataset_rows("train")}
    reached = [{key: value for key, value in row.items()} for row in Roster.seen if "people" in row]
    assert reached and all(json.dumps(row, sort_keys=True) in given for row in reached)
    assert {type(row["x"]) for row in reached} <= {int, str} and all(
        type(row["people"][0][1]) is int for row in reached
    )
