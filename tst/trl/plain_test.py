"""`agent_env/training/plain.py` against a real GRPOTrainer: the lossy arm is what TRL itself renders from the
environment's own methods when a plain TRL environment (no agent_env) has them, tool by tool; and a tool TRL cannot
render stops such a trainer before its first step, as the arm says."""

from __future__ import annotations

from typing import Any

import pytest
from transformers.utils.chat_template_utils import DocstringParsingException, TypeHintParsingException

from agent_env import AgentEnv
from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.training.plain import plain_tools
from tst.trl.conftest import grpo_config

PROBE = [{"role": "user", "content": "Begin."}]


class PlainDesk:
    """The desk as a plain TRL environment: its own tool methods, and the reset and get_reward TRL needs."""

    def reset(self, **row: Any) -> str:
        return "Trade."

    def get_reward(self) -> float:
        return 0.0


for _tool in GridSimDesk.tools.values():
    setattr(PlainDesk, _tool.name, _tool.function)


def test_a_real_trainer_renders_each_desk_method_as_the_lossy_arm_shows_it_and_cannot_start_with_two(
    tiny_model: Any, tokenizer: Any, tmp_path: Any
) -> None:
    from trl import GRPOTrainer

    env = AgentEnv.local("gridsim-desk")
    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path),
        train_dataset=env.dataset("train"),
        environment_factory=PlainDesk,
    )
    discovered = {tool.__name__: tool for tool in trainer._env_tools[None]}  # TRL's own discovery
    shown = {tool.name: tool for tool in plain_tools(env.provider)}
    assert sorted(discovered) == sorted(shown)
    for name, method in discovered.items():
        try:
            trl_prompt = tokenizer.apply_chat_template(PROBE, tools=[method], tokenize=False)
        except (
            TypeHintParsingException,
            DocstringParsingException,
        ) as error:  # which, by transformers' version
            assert shown[name].refused is not None and shown[name].refused.startswith(type(error).__name__)
            continue
        assert shown[name].refused is None
        assert tokenizer.apply_chat_template(PROBE, tools=[shown[name].schema], tokenize=False) == trl_prompt
    assert sorted(name for name, tool in shown.items() if tool.refused) == [
        "check_offers",
        "submit_dam_offers",
    ]
    with pytest.raises(
        (TypeHintParsingException, DocstringParsingException)
    ):  # the first prompt it builds: the run cannot even start
        trainer.train()
