"""TRL's AsyncGRPO end to end with `env.factory`: its trainer, its rollout worker (a child process, which gets the
factory by pickle) and vLLM's server generating, on τ²-airline with the scripted user and on the GridSim desk.

The tiny model is random, so its sampling is held by vLLM's structured outputs to a set of calls (valid ones,
malformed ones, ones with sampled arguments); AsyncGRPO has no setting for that, so a proxy adds the field to its
requests (testbed/forced_calls.py). Everything the calls meet is real: the chat template, TRL's parser, the
SchemaTools, the sessions, the rewards, the optimizer steps and the weights reaching the server. The stand-ins, for
what needs a GPU, are the `asyncgrpo_on_cpu` fixture's and `FileWeightTransfer` (for NCCL).
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from transformers import TrainerCallback

from agent_env import AgentEnv
from testbed.forced_calls import DESK_CALLS, TAU2_CALLS, StructuredOutputsProxy, structured_outputs
from testbed.gpu_standins import FileWeightTransfer
from tst.vllm import logprobs
from tst.vllm.rollouts import CountedFactory, RecordingQueue, brevity, calls_run, episodes, replay

TEACHING = re.compile(r"^\{'error': Invalid arguments for tool '\w+'; fix these and call it again:\n- ")


@dataclass
class Run:
    """What a two-step AsyncGRPO run left to check."""

    trainer: Any
    factory: CountedFactory
    samples: list[Any]
    """The samples the trainer trained on."""
    worker: int | None
    """The rollout worker's process id."""
    moved: float
    """How far the policy moved, in mean |log p| on a fixed sequence."""
    synced: float
    """How far vLLM's log-probabilities are from the policy's after training."""
    timing: str


def train(
    env: AgentEnv, dataset: Any, pattern: str, model: Path, tokenizer: Any, server: str, out: Path
) -> Run:
    """Two AsyncGRPO optimizer steps with `env.factory` (counted: `CountedFactory`), generating through vLLM with
    `pattern` holding the model's sampling."""
    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

    factory = CountedFactory(env.factory, out / "made.jsonl")
    transfer = FileWeightTransfer(server, out / "weights")
    with StructuredOutputsProxy(server, structured_outputs(pattern)) as proxy:
        args = AsyncGRPOConfig(
            output_dir=str(out / "trainer"),
            per_device_train_batch_size=2,
            num_generations=2,
            max_steps=2,
            max_completion_length=96,
            max_tool_calling_iterations=2,
            learning_rate=1e-2,
            token_budget=0,  # two rollouts a step, however long
            max_inflight_tasks=2,
            queue_maxsize=2,
            vllm_server_base_url=proxy.url,
            report_to="none",
            logging_steps=1,
            save_strategy="no",
            use_cpu=True,
            bf16=False,
            disable_tqdm=True,
        )
        trainer = AsyncGRPOTrainer(
            model=str(model),
            reward_funcs=[brevity],
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            environment_factory=factory,
            weight_transfer=transfer,
        )
        taken = RecordingQueue(trainer.rollout_queue)
        trainer.rollout_queue = taken  # observed: what the trainer trains on
        worker = WorkerProcess(trainer)
        trainer.add_callback(worker)
        ids = tokenizer.apply_chat_template(dataset[0]["prompt"], tokenize=True, return_dict=False)[:96]
        before = logprobs.policy_weights(model, trainer.model, ids)
        started = time.monotonic()
        trainer.train()
    elapsed = time.monotonic() - started
    assert transfer.sent >= 3  # the cold sync, and one after each step
    after = logprobs.policy_weights(model, trainer.model, ids)
    steps = ", ".join(
        f"{e['perf/fwd_bwd_s']:.0f} s" for e in trainer.state.log_history if "perf/fwd_bwd_s" in e
    )
    return Run(
        trainer,
        factory,
        taken.taken,
        worker.pid,
        moved=logprobs.gap(after, before),
        synced=logprobs.gap(after, logprobs.served(server, ids)),
        timing=f"train() {elapsed:.0f} s, forward and backward {steps} a step",
    )


class WorkerProcess(TrainerCallback):
    """Notes the rollout worker's process id while it runs, and when training ends, reads what it still queues.

    AsyncGRPO stops its worker after training; the worker cannot exit while rollouts it queued wait unread in the
    pipe (a `multiprocessing` queue flushes at exit), so TRL waits 15 s and terminates it. Reading them lets it exit.
    """

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.pid: int | None = None

    def on_step_end(self, *args: Any, **kwargs: Any) -> None:
        process = getattr(self.trainer.rollout_worker, "_process", None)
        if process is not None:
            self.pid = process.pid

    def on_train_end(self, *args: Any, **kwargs: Any) -> None:
        process = getattr(self.trainer.rollout_worker, "_process", None)
        source = getattr(self.trainer.rollout_queue, "inner", self.trainer.rollout_queue)
        if process is not None:
            threading.Thread(target=read_until_gone, args=(source, process), daemon=True).start()


def read_until_gone(source: Any, process: Any) -> None:
    while process.is_alive():
        with contextlib.suppress(queue.Empty, OSError, ValueError):
            source.get(timeout=0.2)


SLOW = 1800
"""AsyncGRPO scores every position of a ~2k (desk) or ~6k (τ²) token row over Qwen3's 151,669-token vocabulary on a
CPU (on a GPU, only the completion's): minutes a step on a busy 2-core machine."""


@pytest.mark.timeout(SLOW)
@pytest.mark.parametrize("name", ["gridsim-desk", "tau2-airline"])
def test_asyncgrpo_trains_on_env_factory_with_tools_called_in_its_rollout_worker(
    name, model, tokenizer, served_weights, asyncgrpo_on_cpu, tmp_path, capfd
):
    env = AgentEnv.local(name)
    dataset = env.dataset("train")
    if name == "tau2-airline":
        dataset = dataset.select(range(1))
    pattern = DESK_CALLS if name == "gridsim-desk" else TAU2_CALLS
    run = train(env, dataset, pattern, model, tokenizer, served_weights, tmp_path)
    with capfd.disabled():
        print(
            f"\nAsyncGRPO on {name}: {run.timing}; the policy moved {run.moved:.2e} nats a token, and vLLM serves "
            f"it to {run.synced:.2e}"
        )
    assert run.trainer.state.global_step == 2
    assert run.moved > 1e-3 and run.synced < 1e-4  # the steps moved the policy, and each sync reached vLLM
    column = f"rewards/{env.provider.name}"  # the reward column TRL names after the environment's class

    # Every environment was made in the rollout worker, a child process, with SchemaTools where TRL looks.
    made = run.factory.made()
    assert run.worker is not None and run.worker != os.getpid()
    assert made and {entry["pid"] for entry in made} == {run.worker}
    assert all(set(entry["tools"].values()) == {"SchemaTool"} for entry in made)
    assert env.factory._built == {}  # the trainer's process never built one
    # The render check ran there, under the chat template of TRL's rollout loop (its tokenizer).
    assert re.search(
        r"checked under _AsyncRolloutLoop's chat template \(its \w+\): exact", capfd.readouterr().err
    )

    rollouts = episodes(run.samples)
    played = [(sample, calls_run(sample.completion)) for sample in rollouts]
    assert sum(len(calls) for _, calls in played) >= 2, "the rollouts the trainer took made too few calls"
    for sample, calls in played:
        row = dataset[sample.group_id % len(dataset)]
        again = replay(env, row, calls)
        # each call read what a fresh session gives for the same calls: nothing carried over from another episode
        assert [call.result for call in calls] == again.results
        assert sample.metrics[column] == pytest.approx(
            again.reward
        )  # get_reward() is the environment's score
        if again.breakdown and "parts" in again.breakdown:  # τ²: the reward is the product of its parts
            parts = [part["reward"] for part in again.breakdown["parts"].values()]
            assert again.reward == pytest.approx(math.prod(parts))
    # Environments were pooled: fewer made (the probe, then one per rollout in flight) than episodes played on them.
    assert len(made) <= 3 and len(rollouts) > len(made)
    teaching = [call.result for _, calls in played for call in calls if TEACHING.match(call.result)]
    assert teaching, "no malformed call came back with the teaching error"
