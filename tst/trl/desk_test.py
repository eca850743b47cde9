"""A real GRPOTrainer step on the GridSim desk: a scripted submission is scored, and the reward reaches TRL."""

from __future__ import annotations

import json

import pytest

from agent_env import AgentEnv
from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.training._render_check import expected_rendering, tojson
from tst.trl.conftest import grpo_config

SUBMISSION = {
    "curves": [
        {"hours": "HE02-HE05", "points": [[-50, 20], [0, 21]]},
        {"hours": "HE18-HE20", "points": [[0, 45], [60, 46]]},
    ],
    "as_offers": [{"product": "regup", "hours": "HE10", "mw": 5, "price": 1}],
}


def reply(index: int, prompt: str) -> str:
    if "<tool_response>" in prompt:
        return "Submitted.<|im_end|>"
    call = {"name": "submit_dam_offers", "arguments": SUBMISSION}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>"


def test_a_grpo_step_on_the_desk_scores_a_scripted_submission(
    tiny_model, tokenizer, tmp_path, scripted_generation
):
    from trl import GRPOTrainer

    env = AgentEnv.local("gridsim-desk")
    dataset = env.dataset("train").select(range(2))
    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path, max_completion_length=384),
        train_dataset=dataset,
        environment_factory=env.factory,
    )
    script = scripted_generation(trainer, reply)
    trainer.train()

    prompt = script.prompts[0]
    for published in GridSimDesk.tools.published:
        assert tojson(expected_rendering(published)) in prompt
    desks = [environment._session.environment for environment in trainer.environments]
    assert all(len(desk.curves) == 2 and desk.score is not None for desk in desks)
    expected = sum(desk.score.reward for desk in desks) / len(desks)
    assert trainer.state.log_history[0]["rewards/GridSimDesk/mean"] == pytest.approx(expected, abs=1e-4)
    assert trainer.state.log_history[0]["tools/failure_frequency"] == 0.0
