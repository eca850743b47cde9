"""A real GRPOTrainer step on an MCP server: the README's knowledge-graph example on `server-memory`.

As in the TRL tier (tst/trl/conftest.py), generation is scripted, because no model weights can be had here and a
random model writes no tool calls; the chat template, TRL's parser and tool loop, the environment factory, the
server and the reward are all real.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import inspect
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.training import SchemaTool
from agent_env.training._render_check import expected_rendering, tojson
from tst.mcp.conftest import EXAMPLES, servers_left, wait_until
from tst.trl.conftest import Script, async_rollout_loop, grpo_config

sys.path.insert(0, str(EXAMPLES))
import knowledge_graph


def call(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def team_in(prompt: str) -> dict[str, Any]:
    return next(team for team in knowledge_graph.TEAMS if all(name in prompt for name in team["people"]))


def reply(index: int, prompt: str) -> str:
    """Rollout 0 builds the graph the prompt describes in one turn; rollout 1 sends entities without a type."""
    if "<tool_response>" in prompt:
        return "Done.<|im_end|>"
    team = team_in(prompt)
    people = [
        {"name": name, "entityType": "person", "observations": [role]}
        for name, role in team["people"].items()
    ]
    if index % 2 == 1:
        return (
            call("create_entities", {"entities": [{"name": name} for name in team["people"]]}) + "<|im_end|>"
        )
    relations = [{"from": a, "to": b, "relationType": "works_with"} for a, b in team["works_with"]]
    return (
        call("create_entities", {"entities": people})
        + "\n"
        + call("create_relations", {"relations": relations})
        + "<|im_end|>"
    )


@pytest.fixture
def env() -> Iterator[AgentEnv]:
    env = AgentEnv.local(knowledge_graph.environment)
    yield env
    env.close()
    assert wait_until(lambda: not servers_left()), f"server processes left running: {servers_left()}"


def test_a_grpo_step_calls_the_server_and_scores_its_graph(
    env: AgentEnv, tiny_model: Any, tokenizer: Any, tmp_path: Any
) -> None:
    from trl import GRPOTrainer

    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path),
        train_dataset=env.dataset("train"),
        environment_factory=env.factory,
    )
    script = Script(tokenizer, reply)
    trainer._generate_single_turn = script
    trainer.train()

    first = script.prompts[0]
    create = tojson(expected_rendering(env.provider.environment.tools["create_entities"].published()))
    assert create in first  # the server's nested schema, exactly as published
    logged = trainer.state.log_history[0]
    assert logged["rewards/knowledge_graph/mean"] == pytest.approx(
        0.5
    )  # graph F1 read off the servers: 1 and 0
    responses = [prompt for prompt in script.prompts if "<tool_response>" in prompt]
    refused = next(text for text in responses if "Invalid arguments" in text)
    assert "- entities[0]: missing required property 'entityType'" in refused
    assert "- entities[0]: missing required property 'observations'" in refused
    built = next(text for text in responses if "Invalid arguments" not in text)
    assert '"relationType":"works_with"' in built  # the server's own answer to create_relations
    assert logged["tools/failure_frequency"] == pytest.approx(1 / 3)  # the malformed call, of three


def test_the_example_make_mcp_example_runs_trains_with_plain_trl(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from trl.trainer import grpo_trainer

    imported = {
        node.module
        for node in ast.walk(ast.parse((EXAMPLES / "knowledge_graph.py").read_text()))
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert {module for module in imported if module.startswith("agent_env")} == {"agent_env", "agent_env.mcp"}
    assert {
        "trl",
        "transformers",
    } <= imported  # GRPOTrainer(..., environment_factory=env.factory), as docs/mcp.md
    generate = Script(
        tokenizer, reply
    )  # the example's own tiny random model writes no call (see the docstring)
    monkeypatch.setattr(
        grpo_trainer.GRPOTrainer, "_generate_single_turn", lambda self, *a, **k: generate(*a, **k)
    )
    knowledge_graph.main(["--steps", "1"])
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("5 tools from server-memory: create_entities, create_relations")
    # one optimizer step, its reward read off the servers' graphs
    assert printed[-1].startswith("step 1: loss ")
    assert printed[-1].endswith(", reward 0.500, tool calls per rollout 1.50")
    assert wait_until(lambda: not servers_left()), f"server processes left running: {servers_left()}"


def strict_graph_match(episode: Any) -> float:
    """The example's reward, with a bug: it fails on an episode whose calls never reached the server."""
    if not episode.calls:
        raise LookupError("no call reached the server: nothing to score")
    return knowledge_graph.graph_match(episode)


def test_a_reward_function_that_raises_on_one_rollout_scores_it_0_and_the_step_goes_on(
    tiny_model: Any, tokenizer: Any, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from trl import GRPOTrainer

    source = dataclasses.replace(knowledge_graph.environment, reward=strict_graph_match, name="strict_graph")
    env = AgentEnv.local(source)
    try:
        trainer = GRPOTrainer(
            model=tiny_model,
            processing_class=tokenizer,
            args=grpo_config(tmp_path),
            train_dataset=env.dataset("train"),
            environment_factory=env.factory,
        )
        trainer._generate_single_turn = Script(tokenizer, reply)  # rollout 1's only call is refused
        with caplog.at_level(logging.WARNING, logger="agent_env"):
            trainer.train()  # the step runs to the optimizer, though one reward function raised
    finally:
        env.close()
    logged = trainer.state.log_history[0]
    assert logged["rewards/strict_graph/mean"] == pytest.approx(0.5)  # 1.0 for rollout 0, 0.0 for rollout 1
    (warning,) = [record for record in caplog.records if record.name == "agent_env.training"]
    assert warning.getMessage().startswith(
        'agent_env: strict_graph could not score the episode of task_id="team-'
    )
    assert "its reward function raised LookupError: no call reached the server: nothing to score" in (
        warning.getMessage()
    )
    assert wait_until(lambda: not servers_left()), f"server processes left running: {servers_left()}"


def test_asyncgrpo_rollout_loop_discovers_and_calls_the_tools_from_a_pickled_factory(
    env: AgentEnv, tokenizer: Any
) -> None:
    loop = async_rollout_loop(env, tokenizer)
    tools = {tool.__name__: tool for tool in loop._env_tools[None]}
    assert sorted(tools) == [
        "add_observations",
        "create_entities",
        "create_relations",
        "end_turn",
        "read_graph",
    ]
    assert all(isinstance(tool, SchemaTool) for tool in tools.values())
    assert loop.reward_func_names == ["knowledge_graph"]
    instance = loop._environment_pool[None][0]
    instance.reset(**knowledge_graph.ROWS[0])
    entity = {"name": "Ada", "entityType": "person", "observations": ["engineer"]}
    answer = instance.create_entities(entities=[entity])
    if inspect.isawaitable(answer):  # Python 3.12+: a coroutine function, which AsyncGRPO awaits
        answer = asyncio.run(answer)
    assert '"name":"Ada"' in answer
    assert instance.get_reward() == pytest.approx(0.5)  # F1: 1 of the 3 wanted found, and nothing else
    type(instance._session.environment).shutdown()  # the unpickled factory's class, with servers of its own
