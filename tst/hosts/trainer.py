"""What the trainer on host A does, job by job, for the tests in the root namespace (`tst.hosts.agent` runs these).

It holds providers and sessions between jobs, by name, so a test can open episodes, start calls, cause a fault on
the network while they are in flight, and then read what each call saw: its outcome, its error's class and message,
and when it started and ended (`time.monotonic()`, one clock for every process on the machine).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agent_env.session import Session

PROVIDERS: dict[str, Any] = {}
SESSIONS: dict[str, list[Session]] = {}


def ray_pool(
    name: str,
    address: str,
    *,
    actors: int,
    resources: dict[str, float],
    episodes_per_actor: int = 4,
    call_timeout: float = 20.0,
    environment: str = "tst.hosts.envs:MarkedDesk",
) -> dict[int, int]:
    """Join the cluster at `address` and make a pool of `actors` placed by custom `resources` (holding no CPU);
    return each actor's pid by slot."""
    from agent_env.ray import RayProvider

    PROVIDERS[name] = RayProvider(
        environment,
        actors=actors,
        pool=name,
        address=address,
        actor_options={"num_cpus": 0, "resources": resources},
        episodes_per_actor=episodes_per_actor,
        call_timeout=call_timeout,
    )
    return actor_pids(name)


def actor_pids(name: str) -> dict[int, int]:
    """The pid of each actor of a pool, by slot."""
    import ray

    provider = PROVIDERS[name]
    pids = {}
    for slot, handle in provider.pool.handles().items():
        pids[slot] = ray.get(handle.describe.remote(), timeout=60)["pid"]
    return pids


def loads(name: str) -> dict[int, int]:
    """The live episodes on each actor of a pool that answers, by slot (as placement sees them)."""
    loads: dict[int, int] = PROVIDERS[name].loads()
    return loads


def alive_nodes(address: str) -> list[str]:
    """The addresses of the live nodes of the cluster at `address` (joined as the pools join it, if not yet)."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, namespace="agent_env", logging_level="WARNING")
    return sorted(node["NodeManagerAddress"] for node in ray.nodes() if node["Alive"])


def served(name: str, url: str, *, token: str | None, timeout: float) -> str:
    """A provider of the environment served at `url`; returns the environment's name, as the server says it."""
    from agent_env.server.client import RemoteProvider

    provider = RemoteProvider(url, token=token, timeout=timeout)
    PROVIDERS[name] = provider
    return provider.name


def reach(url: str, token: str | None) -> str:
    """Whether a served environment at `url` can be reached: its name, or the error's class and message."""
    from agent_env.server.client import RemoteProvider

    try:
        return RemoteProvider(url, token=token, timeout=5.0).name
    except Exception as error:
        return f"{type(error).__name__}: {error}"


def open_sessions(name: str, count: int) -> list[dict[str, Any]]:
    """Open `count` sessions and reset each (seed = its index), one after another; what each reset saw."""
    provider = PROVIDERS[name]
    SESSIONS[name] = [provider.open() for _ in range(count)]
    return reset_each(name)


def reset_each(name: str, count: int | None = None) -> list[dict[str, Any]]:
    """Reset every session of `name` (or the first `count`; seed = its index), one after another, as GRPOTrainer
    resets its rollouts."""
    sessions = SESSIONS[name][:count]
    return [
        _outcome(session, lambda s=session, i=index: s.reset(seed=i))
        for index, session in enumerate(sessions)
    ]


def call_each(
    name: str, tool: str, arguments: dict[str, Any], indexes: list[int] | None = None
) -> list[dict[str, Any]]:
    """Call `tool` on every session of `name` (or those at `indexes`) at once, a thread each; what each call saw."""
    sessions = [SESSIONS[name][index] for index in indexes] if indexes is not None else SESSIONS[name]
    with ThreadPoolExecutor(len(sessions)) as pool:
        futures = [
            pool.submit(_outcome, session, lambda s=session: s.call_tool(tool, arguments))
            for session in sessions
        ]
        return [future.result() for future in futures]


def play(name: str, *, episodes: int, calls: int) -> dict[str, Any]:
    """Play `episodes` whole episodes one after another on one session (reset, `calls` adds, reward), as a rollout
    does; the rewards and how long each episode and call took."""
    provider = PROVIDERS[name]
    rewards, episode_seconds, call_seconds = [], [], []
    with provider.open() as session:
        for episode in range(episodes):
            started = time.monotonic()
            session.reset(seed=episode)
            for amount in range(calls):
                call_started = time.monotonic()
                session.call_tool("add", {"amount": amount})
                call_seconds.append(time.monotonic() - call_started)
            rewards.append(session.reward())
            episode_seconds.append(time.monotonic() - started)
    return {"rewards": rewards, "episode_seconds": episode_seconds, "call_seconds": call_seconds}


def call_rate(name: str, seconds: float) -> dict[str, Any]:
    """Calls per second one session makes, one call after another, for `seconds`; and where its episode is."""
    provider = PROVIDERS[name]
    with provider.open() as session:
        session.reset(seed=0)
        count, started = 0, time.monotonic()
        while time.monotonic() - started < seconds:
            session.call_tool("add", {"amount": 1})
            count += 1
        return {"rate": count / (time.monotonic() - started), "episode": session.episode_id, "calls": count}


def close_all(name: str) -> None:
    """Close every session of `name` (a lost episode's close does not raise)."""
    for session in SESSIONS.pop(name, []):
        session.close()


def shutdown(name: str) -> None:
    """End a Ray pool's actors and forget it."""
    close_all(name)
    provider = PROVIDERS.pop(name)
    if hasattr(provider, "shutdown"):
        provider.shutdown()


def join_ray(address: str) -> str:
    """Try to join the cluster at `address` through the provider, with whatever token this process has; what it said."""
    from agent_env.ray import RayProvider

    try:
        RayProvider(
            "tst.hosts.envs:MarkedDesk", actors=1, pool="intruder", address=address, connect_timeout=30
        ).loads()
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return "joined"


def grpo_step(address: str, resources: dict[str, float]) -> dict[str, Any]:
    """One real `trl.GRPOTrainer` step whose episodes run on a Ray pool placed by `resources`: the tiny Qwen3 model,
    the real tokenizer and chat template, and scripted generation (no weights can be had here)."""
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    from agent_env import AgentEnv
    from agent_env.inspection.grpo import tiny_qwen3
    from agent_env.training.templates import load_template
    from tst.support import qwen3_tokenizer_folder
    from tst.trl.conftest import Script, grpo_config

    tokenizer = AutoTokenizer.from_pretrained(qwen3_tokenizer_folder())
    tokenizer.chat_template = load_template("qwen3")
    env = AgentEnv.ray(
        "testbed.toy:ToyDesk", actors=2, pool="grpo", address=address,
        actor_options={"num_cpus": 0, "resources": resources},
    )  # fmt: skip
    PROVIDERS["grpo"] = env.provider
    with tempfile.TemporaryDirectory() as output:
        trainer = GRPOTrainer(
            model=tiny_qwen3(tokenizer),
            processing_class=tokenizer,
            args=grpo_config(output),
            train_dataset=env.dataset("train"),
            environment_factory=env.factory,
        )
        script = Script(tokenizer, _scripted_reply)
        trainer._generate_single_turn = script
        trainer.train()
    responses = [prompt for prompt in script.prompts if "<tool_response>" in prompt]
    return {
        "logged": trainer.state.log_history[0],
        "episodes": [environment._session.episode_id for environment in trainer.environments],
        "actors": actor_pids("grpo"),
        "responses": responses,
        "first_prompt": script.prompts[0],
    }


def _scripted_reply(index: int, prompt: str) -> str:
    """The "model": a valid tool call in even rollouts, a malformed one in odd ones, then it ends its turn."""
    from testbed.toy import MALFORMED, VALID

    if "<tool_response>" in prompt:
        return "Done.<|im_end|>"
    arguments = VALID if index % 2 == 0 else MALFORMED
    return f"<tool_call>\n{json.dumps({'name': 'submit_offers', 'arguments': arguments})}\n</tool_call><|im_end|>"


def _outcome(session: Any, action: Callable[[], Any]) -> dict[str, Any]:
    before = getattr(session, "episode_id", None)
    started = time.monotonic()
    try:
        value = action()
    except Exception as error:
        return {
            "ok": False, "error": type(error).__name__, "message": str(error), "episode": before,
            "started": started, "ended": time.monotonic(), "after": getattr(session, "episode_id", None),
        }  # fmt: skip
    return {
        "ok": True, "value": value, "episode": before, "started": started, "ended": time.monotonic(),
        "after": getattr(session, "episode_id", None),
    }  # fmt: skip
