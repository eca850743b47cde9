"""An evaluation tells the model what TRL tells it: the same calls, run by a real GRPOTrainer's tool loop and by
`agent_env.evaluation.run_call`, leave the same tool message text."""

from __future__ import annotations

import asyncio
import json

from agent_env import AgentEnv, LocalSession
from agent_env.evaluation import ToolCall, run_call
from testbed.toy import MALFORMED, VALID, ToyDesk
from tst.trl.conftest import grpo_config

DECREASING = {"curves": [{"hours": "HE07", "points": [[0, 50], [10, 40]]}]}
CALLS = [
    ("submit_offers", MALFORMED),  # breaks the published schema
    ("submit_offer", VALID),  # no such tool
    ("submit_offers", DECREASING),  # the tool's own ToolError
    ("submit_offers", VALID),  # accepted
    ("battery_status", {}),  # accepted, a dict result
]
"""TRL never runs a call whose arguments are not JSON (its parser reads the reply as text), so none is here."""


def reply(index: int, prompt: str) -> str:
    if "<tool_response>" in prompt:
        return "Done.<|im_end|>"
    calls = "\n".join(
        f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"
        for name, arguments in CALLS
    )
    return calls + "<|im_end|>"


def test_each_tool_message_of_an_evaluation_is_the_one_trls_tool_loop_writes(
    tiny_model, tokenizer, tmp_path, scripted_generation
):
    from trl import GRPOTrainer

    env = AgentEnv.local(ToyDesk)
    trainer = GRPOTrainer(
        model=tiny_model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path, max_completion_length=2048),  # room for five calls and their answers
        train_dataset=env.dataset("train"),
        environment_factory=env.factory,
    )
    script = scripted_generation(trainer, reply)
    trainer.train()
    answered = next(prompt for prompt in script.prompts if "<tool_response>" in prompt)

    session = LocalSession(ToyDesk())
    session.reset()
    schemas = {name: found.input_schema for name, found in ToyDesk.tools.items()}
    texts = [
        asyncio.run(
            run_call(session, ToolCall(f"c{i}", "function", name, json.dumps(arguments)), schemas)
        ).content
        for i, (name, arguments) in enumerate(CALLS)
    ]
    trl_block = "\n".join(f"<tool_response>\n{text}\n</tool_response>" for text in texts)
    assert trl_block in answered
    assert texts[1] == "{'error': 'Tool submit_offer not found.'}"
    assert texts[0].startswith("{'error': Invalid arguments for tool 'submit_offers'")
