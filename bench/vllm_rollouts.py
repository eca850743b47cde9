"""AsyncGRPO's rollouts and `agent-env eval`'s turns against vLLM on the CPU: what share of a rollout is agent_env.

Run in the vLLM tier's venv (testbed/vllm_venv.py; the script re-runs itself there when vLLM is missing), against one
vLLM server (vLLM's CPU build serving a tiny random Qwen3 with the real Qwen3 tokenizer; `AGENT_ENV_VLLM_SERVER`
names a running one, else one is started and stopped). Measured in this run:

1. TRL's rollout loop, `_AsyncRolloutLoop` (what AsyncGRPO's rollout worker runs), `ROUNDS` times `SECONDS` an
   arm, the arms in turn, generating through vLLM with sampling held to τ²-airline's calls (testbed/forced_calls.py,
   TAU2_CALLS), on
   - `tau2-airline` through `env.factory` (the scripted user), and
   - the baseline, a do-nothing environment showing the model the same tools and answering every call, reset and
     reward at once.
   From TRL's own rollout metrics (`env/reset_s`, `env/reward_s`, `tools/latency_s`, `rollout/duration_s`): episodes
   a second, each part's time per episode, and agent_env's share of an episode (reset, tools and reward over the
   whole episode; the rest is generation).
2. `agent-env eval` (`evaluate`, concurrency 4) on the desk against the same server, sampling held to the desk's calls:
   turns a second; the baseline, the same requests posted straight to the server, as many in flight.

Needs τ²-airline's data (AGENT_ENV_TAU2_DATA or the cache).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import queue
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SECONDS = 45.0
"""How long each arm of the rollout loop runs in each round."""
ROUNDS = 2
"""The arms take turns (A B A B), so neither has the server's warm-up or a quieter minute of the machine alone."""
IN_FLIGHT = 4
EVAL_EPISODES = 8

if (
    importlib.util.find_spec("vllm") is None
):  # run again in the vLLM tier's venv, building it first if need be
    sys.path.insert(0, str(ROOT))
    from testbed.vllm_venv import python as vllm_python

    interpreter = str(vllm_python())
    os.execv(interpreter, [interpreter, __file__, *sys.argv[1:]])

sys.path.insert(0, str(ROOT))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from agent_env import AgentEnv  # noqa: E402
from agent_env.training import SchemaTool  # noqa: E402
from testbed.forced_calls import DESK_CALLS, TAU2_CALLS, StructuredOutputsProxy, structured_outputs  # noqa: E402

TAU2_TOOLS = AgentEnv.local("tau2-airline").tools()


class Idle:
    """The baseline: τ²-airline's tools as the model sees them (a SchemaTool shows each), each call answered "ok"
    at once, with no session, validation or domain behind it; reset and reward at once."""

    def __init__(self) -> None:
        for tool in TAU2_TOOLS:
            setattr(self, tool["name"], SchemaTool(tool, _ok))

    def reset(self, **row: Any) -> None:
        return None

    def get_reward(self) -> float:
        return 0.0


def _ok(name: str, arguments: dict[str, Any]) -> str:
    return "ok"


for _tool in TAU2_TOOLS:  # TRL lists tools on the class, then takes each from the instance
    setattr(Idle, _tool["name"], lambda self, **arguments: "ok")


class Value:
    """What the loop reads its shared `mp.Value`s through."""

    def __init__(self, value: float) -> None:
        self.value = value


def rollouts(factory: Any, dataset: Any, model: Path, tokenizer: Any, url: str) -> dict[str, float]:
    """Run TRL's rollout loop for `SECONDS` on `factory`'s environments; its metrics, summed."""
    from accelerate.state import PartialState
    from trl.experimental.async_grpo.async_rollout_worker import _AsyncRolloutLoop

    PartialState()  # as TRL's worker process does first: the loop logs through accelerate's logger
    failed = threading.Event()
    metrics: queue.Queue[dict[str, Any]] = queue.Queue()
    buffer: queue.Queue[Any] = queue.Queue()
    loop = _AsyncRolloutLoop(
        model_name=str(model),
        dataset=dataset,
        reward_funcs=[],
        processing_class=tokenizer,
        eos_token_ids=[tokenizer.convert_tokens_to_ids("<|im_end|>")],
        rollout_buffer=buffer,
        model_version_value=Value(0),
        heartbeat_value=Value(0.0),
        failed_event=failed,
        exception_info_queue=queue.Queue(),
        metrics_queue=metrics,
        environment_factory=factory,
        num_generations=2,
        max_inflight_tasks=IN_FLIGHT,
        vllm_server_url=url,
        max_tokens=64,
        max_tool_calling_iterations=3,
    )
    thread = threading.Thread(target=loop.run)
    started = time.monotonic()
    thread.start()
    thread.join(SECONDS)
    if failed.is_set() or not thread.is_alive():
        raise RuntimeError("TRL's rollout loop stopped before its time (its error is printed above)")
    loop._loop.call_soon_threadsafe(loop._stop_event.set)
    thread.join()
    elapsed = time.monotonic() - started
    totals: dict[str, float] = defaultdict(float)
    while not metrics.empty():
        for key, value in metrics.get().items():
            if isinstance(value, tuple):
                totals[key] += value[0]
                totals[f"{key}#"] += value[1]
            elif key == "rollout/duration_s":
                totals[key] += value
                totals[f"{key}#"] += 1
    totals["elapsed"] = elapsed
    return dict(totals)


def report(name: str, totals: dict[str, float]) -> tuple[float, float]:
    episodes = totals.get("rollout/duration_s#", 0.0)
    if not episodes:
        print(f"  {name}: no episode finished")
        return 0.0, 0.0
    reset = totals.get("env/reset_s", 0.0) / episodes
    reward = totals.get("env/reward_s", 0.0) / episodes
    tools = totals.get("tools/latency_s", 0.0) / episodes
    calls = totals.get("tools/latency_s#", 0.0) / episodes
    duration = totals["rollout/duration_s"] / episodes
    share = (reset + tools + reward) / (reset + duration + reward)
    rate = episodes / totals["elapsed"]
    print(
        f"  {name:<13} {rate:6.2f} episodes/s ({episodes:.0f} in {totals['elapsed']:.0f} s); per episode: "
        f"{duration * 1000:7.0f} ms rolling out, {calls:.1f} calls taking {tools * 1000:6.1f} ms, reset "
        f"{reset * 1000:6.1f} ms, reward {reward * 1000:6.1f} ms; environment share {share:6.1%}"
    )
    return rate, share


def eval_turns(url: str, model: Path) -> None:
    """`evaluate` on the desk against the server, then the same requests posted straight to it."""
    import httpx

    from agent_env.evaluation import Endpoint, Sampling, arms, evaluate

    desk = AgentEnv.local("gridsim-desk")
    tools = arms(desk)[0].tools
    sampling = Sampling(temperature=1.0, max_tokens=96, extra_body=structured_outputs(DESK_CALLS))
    with tempfile.TemporaryDirectory() as folder:
        started = time.monotonic()
        result = evaluate(
            desk, Endpoint(f"{url}/v1"), episodes=EVAL_EPISODES, concurrency=IN_FLIGHT, max_turns=4,
            sampling=sampling, out=Path(folder) / "desk.jsonl",
        )  # fmt: skip
        elapsed = time.monotonic() - started
        lines = [json.loads(line) for line in (Path(folder) / "desk.jsonl").read_text().splitlines()]
        records = [line for line in lines if line["type"] == "episode"]
    turns = sum(record["turns"] for record in records)
    bodies = []
    for record in records:
        messages = record["transcript"]
        for index, message in enumerate(messages):
            if message["role"] == "assistant":
                turn = sum(earlier["role"] == "assistant" for earlier in messages[:index]) + 1
                fields = sampling.fields(0, turn)  # what eval sent: its limit, its structured outputs
                bodies.append({"model": str(model), "messages": messages[:index], "tools": tools, **fields})
    del result

    async def post_all() -> float:
        async with httpx.AsyncClient(timeout=600) as client:
            pending = list(bodies)
            start = time.monotonic()

            async def worker() -> None:
                while pending:
                    body = pending.pop()
                    (await client.post(f"{url}/v1/chat/completions", json=body)).raise_for_status()

            await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
            return time.monotonic() - start

    straight = asyncio.run(post_all())
    print(
        f"  eval: {turns / elapsed:.2f} turns/s ({turns} turns, {len(records)} episodes); the same requests posted "
        f"straight to vLLM: {len(bodies) / straight:.2f} requests/s; eval runs at "
        f"{(turns / elapsed) / (len(bodies) / straight):.0%} of that"
    )


def main() -> None:
    from transformers import AutoTokenizer

    from testbed.vllm_server import VLLMServer, served_model, tiny_qwen3

    airline = AgentEnv.local("tau2-airline")  # τ²-bench's data first: without it, this fails in seconds
    dataset = airline.dataset("train").select(range(1))
    with tempfile.TemporaryDirectory(prefix="vllm-bench-") as folder:
        given = os.environ.get("AGENT_ENV_VLLM_SERVER")
        server = None
        if given:
            url, model = given.rstrip("/"), served_model(given)
        else:
            model = tiny_qwen3(Path(folder) / "model")
            server = VLLMServer(model, Path(folder) / "server.log")
            url = server.url()
        try:
            tokenizer = AutoTokenizer.from_pretrained(model)
            print(
                f"AsyncGRPO's rollout loop (TRL's own metrics), {IN_FLIGHT} rollouts in flight, {ROUNDS} rounds of "
                f"{SECONDS:.0f} s an arm, the arms in turn:"
            )
            arms: dict[str, Any] = {"do-nothing": Idle, "tau2-airline": airline.factory}
            summed: dict[str, dict[str, float]] = {name: defaultdict(float) for name in arms}
            with StructuredOutputsProxy(url, structured_outputs(TAU2_CALLS)) as proxy:
                for _ in range(ROUNDS):
                    for name, factory in arms.items():
                        for key, value in rollouts(factory, dataset, model, tokenizer, proxy.url).items():
                            summed[name][key] += value
            idle = report("do-nothing", summed["do-nothing"])
            tau2 = report("tau2-airline", summed["tau2-airline"])
            if idle[0]:
                print(
                    f"  tau2-airline runs {tau2[0] / idle[0]:.0%} of the do-nothing environment's episodes/s"
                )
            print("agent-env eval against vLLM:")
            eval_turns(url, model)
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
