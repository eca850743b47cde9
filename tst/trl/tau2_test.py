"""A real GRPOTrainer step on τ²-bench's airline domain with the scripted user: the model sees the full nested schemas,
reaches the user through `message_user` (whose reply, a tool result, TRL masks from the loss), and the reward TRL logs
is the environment's, as tau2-bench scores the episode."""

from __future__ import annotations

import json

import pytest

from agent_env import AgentEnv
from agent_env.training import episode_score
from agent_env.training._render_check import expected_rendering, tojson
from agent_env.users import USER_CHANNEL
from tst.trl.conftest import grpo_config


def call(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


def reply(index: int, prompt: str) -> str:
    """First ask the user, then (having read the reply) say goodbye."""
    if "<tool_response>" in prompt:
        return "Thank you, goodbye.<|im_end|>"
    return call(USER_CHANNEL, {"message": "Could you give me your user id, please?"})


def test_a_grpo_step_on_tau2_airline_talks_to_the_user_through_a_tool_and_scores_as_tau2_bench(
    tiny_model, tokenizer, tmp_path, scripted_generation
):
    from trl import GRPOTrainer

    env = AgentEnv.local("tau2-airline")
    dataset = env.dataset("train").select(range(2))
    breakdowns: list[dict] = []

    def database(completions, environments, **kwargs):  # a reward function of the user's: τ²'s DB part alone
        scores = [episode_score(environment) for environment in environments]
        breakdowns.extend(score.breakdown for score in scores)
        return [score.breakdown["parts"]["DB"]["reward"] for score in scores]

    assert dataset[0]["prompt"][0]["role"] == "system" and "<policy>" in dataset[0]["prompt"][0]["content"]
    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path, max_completion_length=256, max_tool_calling_iterations=2),
        train_dataset=dataset,
        reward_funcs=[database],
        environment_factory=env.factory,
    )
    script = scripted_generation(trainer, reply)
    trainer.train()

    first = script.prompts[0]
    book = next(tool for tool in env.tools() if tool["name"] == "book_reservation")
    assert tojson(expected_rendering(book)) in first  # the nested arrays of objects, as published
    assert '"enum": ["basic_economy", "economy", "business"]' in first  # the cabin, an enum
    answered = [prompt for prompt in script.prompts if "<tool_response>" in prompt]
    assert answered and "Yes, please go ahead." in answered[0]  # the scripted user's reply, as a tool result

    episodes = [environment._session.environment for environment in trainer.environments]
    assert all(
        episode.chat.messages[-2].text == "Could you give me your user id, please?" for episode in episodes
    )
    rewards = [environment._session.score().reward for environment in trainer.environments]
    logged = trainer.state.log_history[0]
    assert logged["rewards/Tau2Airline/mean"] == pytest.approx(sum(rewards) / len(rewards), abs=1e-4)
    # the user's own reward function read each episode's breakdown, scored once with the environment's reward
    assert breakdowns and all(set(breakdown["parts"]) == {"DB", "COMMUNICATE"} for breakdown in breakdowns)
    databases = [breakdown["parts"]["DB"]["reward"] for breakdown in breakdowns]
    assert logged["rewards/database/mean"] == pytest.approx(sum(databases) / len(databases), abs=1e-4)
    assert logged["tools/failure_frequency"] == 0.0


def checks_reply(index: int, prompt: str) -> str:
    """On update_task_with_user_tools (DB x ACTION x ENV_ASSERTION): the even rollout marks task_1 completed (two of
    its three checks: the user never dismisses its notification), the odd one only talks to the user (none)."""
    if "<tool_response>" in prompt:
        return "Done.<|im_end|>"
    if index % 2 == 0:
        return call("update_task_status", {"task_id": "task_1", "status": "completed"})
    return call(USER_CHANNEL, {"message": "Nothing to do."})


def test_a_grpo_step_trains_on_the_fraction_of_checks_met_through_get_reward_when_asked(
    tiny_model, tokenizer, tmp_path, scripted_generation
):
    from trl import GRPOTrainer

    env = AgentEnv.local("tau2-mock", reward="checks")
    dataset = env.dataset("base").filter(lambda row: row["task_id"] == "update_task_with_user_tools")
    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path, max_completion_length=256, max_tool_calling_iterations=2),
        train_dataset=dataset,
        environment_factory=env.factory,
    )
    scripted_generation(trainer, checks_reply)
    trainer.train()
    scores = [episode_score(environment) for environment in trainer.environments]
    assert all(score is not None for score in scores)
    rewards = sorted(score.reward for score in scores)  # type: ignore[union-attr]
    assert rewards == [0.0, pytest.approx(2 / 3)]  # partial credit, where the official reward is 0 for both
    assert all(score.breakdown["official_reward"] == 0.0 for score in scores)  # type: ignore[union-attr]
    logged = trainer.state.log_history[0]
    assert logged["rewards/Tau2Mock/mean"] == pytest.approx(1 / 3, abs=1e-4)


def test_asyncgrpo_scores_each_rollout_by_the_environments_get_reward_the_fraction_of_checks_met(tokenizer):
    import asyncio

    from trl.experimental.async_grpo.async_rollout_worker import RolloutGroup, TrainingSequence

    from tst.trl.conftest import async_rollout_loop

    env = AgentEnv.local("tau2-mock", reward="checks")
    loop = async_rollout_loop(env, tokenizer, split="base")
    assert loop.reward_func_names == ["Tau2Mock"]  # the environment owns its reward, its reward funcs none
    row = next(row for row in env.dataset("base") if row["task_id"] == "update_task_with_user_tools")
    env_rewards = []
    for marks in (True, False):  # as its generation loop does: a pooled instance reset, its tools, get_reward
        instance = (
            loop._environment_pool[None].pop()
            if loop._environment_pool[None]
            else loop.environment_factories[None]()
        )
        instance.reset(**row)
        if marks:
            instance.update_task_status(task_id="task_1", status="completed")
        env_rewards.append((type(instance), instance.get_reward()))
    sequence = TrainingSequence(
        input_ids=[1, 2], completion_mask=[0, 1], old_log_probs=[0.0, 0.0], rollout_id=0
    )
    group = RolloutGroup(
        prompts=[row["prompt"]] * 2, reward_kwargs={}, completions=[[], []], completions_ids=[[2], [2]],
        completions_sequences=[[sequence], [sequence]], tool_call_counts=[1, 0], tool_failure_counts=[0, 0],
        model_version=0, group_id=0, env_rewards=env_rewards, rollout_rewards=[None, None],
    )  # fmt: skip
    samples = asyncio.run(loop._score_group(group))
    assert [sample.metrics["reward"] for sample in samples] == [pytest.approx(2 / 3), 0.0]
    assert (
        samples[0].advantage > 0 > samples[1].advantage
    )  # partial credit separates them; the official ties at 0


def ask_then_thank(index: int, prompt: str) -> str:
    """Ask the user to act on its phone; then (having read what it did) say goodbye."""
    if "<tool_response>" in prompt:
        return "Thank you, goodbye.<|im_end|>"
    return call(USER_CHANNEL, {"message": "Please turn on data roaming in your phone's settings."})


def test_a_grpo_step_on_tau2_telecom_has_the_user_act_on_its_phone_inside_message_users_reply(
    tiny_model, tokenizer, tmp_path, scripted_generation
):
    from datasets import Dataset
    from trl import GRPOTrainer

    env = AgentEnv.local("tau2-telecom")
    # John Smith abroad, data roaming off on his phone. The row keeps the user's opening but not the system prompt:
    # its 23 kB policy would make this step several times slower on a CPU, and the airline step checks the prompt.
    [row] = [
        row
        for row in env.provider.dataset_rows("small")
        if row["task_id"].startswith("[mobile_data_issue]user_abroad_roaming_enabled_off")
    ]
    dataset = Dataset.from_list([{**row, "prompt": row["prompt"][-1:]}] * 2)
    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path, max_completion_length=256, max_tool_calling_iterations=2),
        train_dataset=dataset,
        environment_factory=env.factory,
    )
    script = scripted_generation(trainer, ask_then_thank)
    trainer.train()

    first = script.prompts[0]
    assert '"name": "refuel_data"' in first and '"exclusiveMinimum": 0' in first  # the carrier's tools, full
    assert '"name": "toggle_roaming"' not in first  # the user's tools are the user's
    answered = [prompt for prompt in script.prompts if "<tool_response>" in prompt]
    assert answered and "Data Roaming is now ON." in answered[0]  # what the user saw, in its own words
    episodes = [environment._session.environment for environment in trainer.environments]
    for episode in episodes:
        [made] = [call for call in episode.calls if call.requestor == "user"]
        assert made.name == "toggle_roaming" and episode.user_db.device["user"].roaming_enabled
    logged = trainer.state.log_history[0]
    assert logged["rewards/Tau2Telecom/mean"] == 1.0  # fixed by the user's own call, as tau2-bench scores it
