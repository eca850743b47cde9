"""A few real `trl.GRPOTrainer` steps on an environment: a tiny random Qwen3 on the CPU, or a local model."""

from __future__ import annotations

import importlib.util
import os
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

from agent_env._agent_env import AgentEnv


class TrainingUnavailableError(ImportError):
    """`--train` needs TRL and torch, which are not part of agent-env's extras."""


def require_training_stack() -> None:
    """Raise `TrainingUnavailableError`, saying what to install, unless TRL and torch can be imported."""
    missing = [name for name in ("trl", "torch") if importlib.util.find_spec(name) is None]
    if missing:
        from agent_env.training.trl import MIN_TRL

        raise TrainingUnavailableError(
            f"--train runs a real trl.GRPOTrainer and needs {' and '.join(missing)}: "
            f"pip install 'trl>={MIN_TRL}' torch (agent-env's extras leave the training stack to you)"
        )


def tiny_qwen3(tokenizer: Any) -> Any:
    """A randomly initialised two-layer Qwen3 small enough to train on a CPU in seconds."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=16384,
        tie_word_embeddings=True,
    )
    return Qwen3ForCausalLM(config)


def train(
    env: AgentEnv,
    *,
    model: str | None = None,
    steps: int = 2,
    max_completion_length: int = 24,
    on_step: Callable[[dict[str, Any]], None] = lambda entry: None,
) -> list[dict[str, Any]]:
    """Run `steps` GRPO steps with `env.factory` and `env.dataset("train")`, exactly as a training script would.

    Args:
        env: The environment.
        model: A local model folder (its own tokenizer and chat template), or None for a tiny random Qwen3 with the
            real Qwen3 tokenizer and TRL's Qwen3 template.
        steps: Optimizer steps.
        max_completion_length: Most tokens a completion may have.
        on_step: Called with each step's log entry (loss, reward, tool-call counts, ...) as it is written.

    Returns:
        The trainer's log, one entry per step (loss, reward, tool-call counts, ...).
    """
    require_training_stack()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers import AutoTokenizer
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from trl import GRPOConfig, GRPOTrainer

    from agent_env.inspection.tokens import qwen3_tokenizer_folder
    from agent_env.training.templates import load_template

    if model is None:
        tokenizer = AutoTokenizer.from_pretrained(qwen3_tokenizer_folder())
        tokenizer.chat_template = load_template(
            "qwen3"
        )  # TRL recognises its own template and adds its parser
        policy: Any = tiny_qwen3(tokenizer)
    else:
        tokenizer = AutoTokenizer.from_pretrained(model)
        policy = model
    with tempfile.TemporaryDirectory(prefix="agent-env-demo-") as output_dir, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # transformers' renames that TRL still uses
        config = GRPOConfig(
            output_dir=output_dir,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=max_completion_length,
            max_steps=steps,
            learning_rate=1e-4,
            report_to="none",
            logging_steps=1,
            save_strategy="no",
            use_cpu=True,
            bf16=False,
            max_tool_calling_iterations=2,
            seed=0,
            disable_tqdm=True,
            # A two-layer model has no activations worth recomputing; a real one keeps TRL's default.
            gradient_checkpointing=model is not None,
        )
        trainer = GRPOTrainer(
            model=policy,
            processing_class=tokenizer,
            args=config,
            train_dataset=env.dataset("train"),
            environment_factory=env.factory,
        )
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(_step_reporter(on_step))
        trainer.train()
    return [entry for entry in trainer.state.log_history if "loss" in entry]


def _step_reporter(on_step: Callable[[dict[str, Any]], None]) -> Any:
    """A `TrainerCallback` that hands each step's log entry to `on_step`."""
    from transformers import TrainerCallback

    class StepReporter(TrainerCallback):
        def on_log(
            self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
        ) -> None:
            if logs and "loss" in logs:
                on_step({**logs, "step": state.global_step})

    return StepReporter()
