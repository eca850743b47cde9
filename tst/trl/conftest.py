"""The TRL tier: a real GRPOTrainer on the CPU with a tiny Qwen3 model built from a config and the real tokenizer.

No model weights can be downloaded here, and a randomly initialised model cannot write a tool call, so the tests
script what the model "generates" (`scripted_generation`); everything else (the chat template, parse_response,
TRL's tool loop, the environments, the rewards and the optimizer step) is the real thing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    from transformers import AutoTokenizer

    from agent_env.training.templates import load_template
    from tst.support import qwen3_tokenizer_folder

    tokenizer = AutoTokenizer.from_pretrained(qwen3_tokenizer_folder())
    tokenizer.chat_template = load_template(
        "qwen3"
    )  # TRL recognises its own Qwen3 template and adds its parser
    return tokenizer


FAMILY_TOKENS = {
    "gemma4": {
        "bos_token": "<bos>",
        "additional_special_tokens": [
            "<|turn>", "<turn|>", "<|tool>", "<tool|>", "<|tool_call>", "<tool_call|>", '<|"|>',
            "<|tool_response>", "<tool_response|>", "<|channel>", "<channel|>", "<eos>",
        ],
    },
    "gptoss": {
        "additional_special_tokens": [
            "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>", "<|call|>",
        ],
    },
}  # fmt: skip
"""The special tokens each family's own tokenizer has, which its chat template writes and its calls use."""


def family_tokenizer(template: str) -> Any:
    """The real Qwen3 vocabulary with a family's special tokens and TRL's shipped template for it: the nearest to
    that family's tokenizer that can be had here (no Gemma or gpt-oss tokenizer can be downloaded)."""
    from transformers import AutoTokenizer

    from agent_env.training.templates import load_template
    from tst.support import qwen3_tokenizer_folder

    tokenizer = AutoTokenizer.from_pretrained(qwen3_tokenizer_folder())
    family = "gemma4" if "gemma" in template else template.split("_v")[0]
    tokenizer.add_special_tokens(FAMILY_TOKENS[family])
    tokenizer.chat_template = load_template(template)
    return tokenizer


@pytest.fixture(scope="session")
def tiny_model(tokenizer: Any) -> Any:
    from agent_env.inspection.grpo import tiny_qwen3

    return tiny_qwen3(tokenizer)


def grpo_config(output_dir: Any, **overrides: Any) -> Any:
    from trl import GRPOConfig

    settings: dict[str, Any] = {
        "output_dir": str(output_dir),
        "per_device_train_batch_size": 2,
        "num_generations": 2,
        "max_completion_length": 512,
        "max_steps": 1,
        "learning_rate": 1e-4,
        "report_to": "none",
        "logging_steps": 1,
        "save_strategy": "no",
        "use_cpu": True,
        "bf16": False,
        "max_tool_calling_iterations": 2,
        "seed": 0,
        "gradient_checkpointing": False,  # a two-layer model has no activations worth recomputing
    }
    return GRPOConfig(**{**settings, **overrides})


class Script:
    """Stands in for generation: for each prompt, decides the completion text from what the prompt holds so far."""

    def __init__(self, tokenizer: Any, reply: Callable[[int, str], str]) -> None:
        self.tokenizer = tokenizer
        self.reply = reply
        self.prompts: list[str] = []

    def __call__(
        self, prompt_ids: list[list[int]], *args: Any, **kwargs: Any
    ) -> tuple[list[list[int]], None]:
        completions = []
        for index, ids in enumerate(prompt_ids):
            text = self.tokenizer.decode(ids)
            self.prompts.append(text)
            completions.append(self.tokenizer(self.reply(index, text), add_special_tokens=False)["input_ids"])
        return completions, None


@pytest.fixture
def scripted_generation(tokenizer: Any) -> Callable[[Any, Callable[[int, str], str]], Script]:
    """Patch a trainer's generation with a script (the one part of a rollout that needs real model weights)."""

    def patch(trainer: Any, reply: Callable[[int, str], str]) -> Script:
        script = Script(tokenizer, reply)
        trainer._generate_single_turn = script
        return script

    return patch


def async_rollout_loop(env: Any, tokenizer: Any, split: str = "train") -> Any:
    """AsyncGRPO's rollout loop built in process from `env.factory` after a pickle round trip, as its spawned
    worker gets it. It needs vLLM only to generate, so discovery and the environments are real here."""
    import pickle

    from trl.experimental.async_grpo.async_rollout_worker import _AsyncRolloutLoop

    return _AsyncRolloutLoop(
        model_name="tiny",
        dataset=env.dataset(split),
        reward_funcs=[],
        processing_class=tokenizer,
        eos_token_ids=[tokenizer.eos_token_id],
        rollout_buffer=None,
        model_version_value=None,
        heartbeat_value=None,
        failed_event=None,
        exception_info_queue=None,
        metrics_queue=None,
        environment_factory=pickle.loads(pickle.dumps(env.factory)),
    )
