"""A tool that never returns, and an episode past its time budget, inside a real GRPO step, on every provider (in
process, served, Ray, OpenEnv, MCP): the step finishes, the model reads the timeout as the tool's error, the episodes
out of time are None (left out of their groups) while the others are scored, and once the stuck call is released
nothing is left running. And more generations at once than a server holds: the ones that find no room are None.

Generation is scripted (no model weights here): rollout 0 calls `hang`, rollout 2 naps three times in one reply (its
third nap runs past the episode's 1.5 s budget), rollouts 1 and 3 count and are scored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.session import abandoned_calls
from testbed.stuck import StuckDesk
from tst.trl.conftest import Script, grpo_config

LIMITS = {"call_timeout": 1.0, "episode_budget": 1.5}


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> str:
    body = "\n".join(
        f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"
        for name, arguments in calls
    )
    return body + "<|im_end|>"


def stuck_reply(index: int, prompt: str) -> str:
    if "<tool_response>" in prompt:
        return "Done.<|im_end|>"
    if index == 0:
        return tool_calls(("hang", {}))
    if index == 2:
        return tool_calls(*[("nap", {"seconds": 0.7})] * 3)
    return tool_calls(("add", {}))


def rows(release: str) -> Any:
    import datasets

    prompt = [{"role": "user", "content": "Count."}]
    return datasets.Dataset.from_list([{"prompt": prompt, "release": release} for _ in range(2)])


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def train_one_step(
    env: AgentEnv,
    dataset: Any,
    reply: Callable[[int, str], str],
    model: Any,
    tokenizer: Any,
    output: Path,
    patch: Any,
) -> tuple[Any, Script]:
    from trl import GRPOTrainer

    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=grpo_config(output, per_device_train_batch_size=4, num_generations=2),
        train_dataset=dataset,
        environment_factory=env.factory,
    )
    script = patch(trainer, reply)
    started = time.monotonic()
    trainer.train()  # the step finishes
    assert time.monotonic() - started < 120
    return trainer, script


def assert_out_of_time_episodes_are_none(trainer: Any, script: Script, *, late: str, spent: str) -> None:
    """The model read the timeout and the budget's error; those two rollouts are None, the others scored."""
    responses = [prompt for prompt in script.prompts if "<tool_response>" in prompt]
    assert any(late in text for text in responses), "no rollout read the timeout"
    budget = next(text for text in responses if "napped 0.7 s" in text)
    assert budget.count("napped 0.7 s") == 2 and spent in budget  # the third nap ran past the budget
    rewards = [environment.get_reward() for environment in trainer.environments]
    assert rewards[0] is None and rewards[2] is None  # left out of their groups
    assert rewards[1] is not None and rewards[3] is not None
    logged = trainer.state.log_history[0]
    assert logged[f"rewards/{trainer.environments[0].__class__.__name__}/mean"] == pytest.approx(
        (rewards[1] + rewards[3]) / 2
    )


@pytest.fixture
def release(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "release"
    yield str(path)
    path.touch()


def test_in_process(release, tiny_model, tokenizer, tmp_path, scripted_generation):
    env = AgentEnv.local(StuckDesk, **LIMITS)
    trainer, script = train_one_step(
        env, rows(release), stuck_reply, tiny_model, tokenizer, tmp_path, scripted_generation
    )
    assert_out_of_time_episodes_are_none(
        trainer,
        script,
        late="{'error': tool 'hang' did not finish within its call timeout of 1 s",
        spent="{'error': tool 'nap' was still running when the episode's time budget of 1.5 s",
    )
    assert abandoned_calls() == 1  # the hang's thread: a Python thread cannot be stopped, so it is counted
    stuck = trainer.environments[0]._session
    assert stuck._retired  # and its instance is never used again
    Path(release).touch()
    assert eventually(lambda: abandoned_calls() == 0)


def test_served(release, tiny_model, tokenizer, tmp_path, scripted_generation):
    from agent_env.server.app import build_app
    from tst.unit.server.running import running

    app = build_app(StuckDesk, **LIMITS)
    with running(app) as url:
        trainer, script = train_one_step(
            AgentEnv.connect(url),
            rows(release),
            stuck_reply,
            tiny_model,
            tokenizer,
            tmp_path,
            scripted_generation,
        )
        assert_out_of_time_episodes_are_none(
            trainer,
            script,
            late="{'error': tool 'hang' did not finish within the server's call timeout of 1 s",
            spent="{'error': tool 'nap' was still running when the episode's time budget of 1.5 s",
        )
        assert app.state.episodes.health()["stuck_calls"] == 1
        Path(release).touch()
        assert eventually(lambda: app.state.episodes.health()["stuck_calls"] == 0)


def test_ray(release, ray_cluster, tiny_model, tokenizer, tmp_path, scripted_generation):
    env = AgentEnv.ray(StuckDesk, actors=1, pool="trl-deadlines", **LIMITS)
    try:
        trainer, script = train_one_step(
            env, rows(release), stuck_reply, tiny_model, tokenizer, tmp_path, scripted_generation
        )
        assert_out_of_time_episodes_are_none(
            trainer,
            script,
            late="{'error': tool 'hang' did not finish within the Ray pool's call timeout of 1 s",
            spent="{'error': tool 'nap' was still running when the episode's time budget of 1.5 s",
        )
        assert env.provider.stuck_calls() == 1
        Path(release).touch()
        assert eventually(lambda: env.provider.stuck_calls() == 0)
    finally:
        env.provider.shutdown()


def test_openenv(release, tiny_model, tokenizer, tmp_path, scripted_generation):
    from agent_env.openenv import OpenEnvSurface
    from agent_env.server.app import build_app
    from tst.unit.server.running import running

    app = build_app(StuckDesk, surfaces=[OpenEnvSurface()], **LIMITS)
    with running(app) as url:
        env = AgentEnv.openenv(f"{url}/openenv")
        trainer, script = train_one_step(
            env, rows(release), stuck_reply, tiny_model, tokenizer, tmp_path, scripted_generation
        )
        assert_out_of_time_episodes_are_none(
            trainer,
            script,
            late="{'error': tool 'hang' did not finish within the server's call timeout of 1 s",
            spent="{'error': tool 'nap' was still running when the episode's time budget of 1.5 s",
        )
        assert app.state.episodes.health()["stuck_calls"] == 1
        Path(release).touch()
        assert eventually(lambda: app.state.episodes.health()["stuck_calls"] == 0)
        for environment in trainer.environments:
            environment._session.close()


def mcp_reply(index: int, prompt: str) -> str:
    if "<tool_response>" in prompt:
        return "Done.<|im_end|>"
    if index == 0:
        return tool_calls(("sleep", {"seconds": 3600}))
    if index == 2:
        return tool_calls(*[("sleep", {"seconds": 1.5})] * 3)
    return tool_calls(("count", {}))


def test_mcp(tiny_model, tokenizer, tmp_path, scripted_generation):
    from agent_env.mcp import StdioServer
    from tst.mcp.conftest import scripted, servers_left

    prompt = [{"role": "user", "content": "Count."}]
    command = scripted()
    env = AgentEnv.mcp(
        StdioServer(command[0], command[1:]),
        tools=["count", "sleep"],
        reward="score",
        rows=[{"prompt": prompt}] * 2,
        call_timeout=2.0,  # the MCP server's own: past it the server is stopped
        episode_budget=4.5,  # its reset (taking a started server, or starting one) counts too
    )
    try:
        trainer, script = train_one_step(
            env, env.dataset("train"), mcp_reply, tiny_model, tokenizer, tmp_path, scripted_generation
        )
        responses = [prompt for prompt in script.prompts if "<tool_response>" in prompt]
        assert any(
            "{'error': tool 'sleep' got no answer from MCP server 'scripted'" in text for text in responses
        )
        said = "{'error': tool 'sleep' was still running when the episode's time budget of 4.5 s"
        assert any(said in text for text in responses)
        rewards = [environment.get_reward() for environment in trainer.environments]
        assert rewards == [None, 0.25, None, 0.25]
        for environment in trainer.environments:
            environment._session.close()
    finally:
        env.close()
    assert eventually(lambda: not servers_left()), f"MCP servers left running: {servers_left()}"
    assert eventually(lambda: abandoned_calls() == 0)


def count_reply(index: int, prompt: str) -> str:
    return "Done.<|im_end|>" if "<tool_response>" in prompt else tool_calls(("add", {}))


def test_more_generations_at_once_than_the_server_holds(tiny_model, tokenizer, tmp_path, scripted_generation):
    from agent_env.server.app import build_app
    from tst.unit.server.running import running

    app = build_app(StuckDesk, max_episodes=3)
    with running(app) as url:
        env = AgentEnv.connect(url, capacity_wait=1.0)
        trainer, _ = train_one_step(
            env, rows("unused"), count_reply, tiny_model, tokenizer, tmp_path, scripted_generation
        )
        rewards = [environment.get_reward() for environment in trainer.environments]
        assert rewards.count(1.0) == 3 and rewards.count(None) == 1  # the one that found no room: left out
        assert app.state.episodes.health() == {"episodes": 3, "max_episodes": 3, "stuck_calls": 0}
        for environment in trainer.environments:
            environment._session.close()
