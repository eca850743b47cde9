"""Drive `agent-env serve --ors` with the openreward SDK's own client and TRL's own ORS adapter, and print what they saw
as one JSON line.

Run by the python of the ORS venv (testbed/ors_venv.py), never by agent_env's: `python drive.py BASE_URL TOKEN`,
against `agent-env serve testbed.toy:ToyDesk --ors --token TOKEN` (the desk-shaped toy: `submit_offers` with nested
curves, an async `write_note`, a reward of the curves booked over 10). Each scenario records what the client returned
or raised; the tests compare it with what agent_env does in process.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
os.environ["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"

from openreward import OpenReward
from openreward.api.environments.client import Task

# ToyDesk's calls, from the file testbed/toy.py reads them from too: this script runs where agent_env is not installed.
CALLS = json.loads((Path(__file__).parents[2] / "testbed" / "toy_calls.json").read_text())
VALID, MALFORMED = CALLS["valid"], CALLS["malformed"]
CURVE = {"hours": "HE07-HE10", "points": [[-50, 20], [50, 40]]}


def failure(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def output(result: Any) -> dict[str, Any]:
    return {
        "text": "\n".join(block.text for block in result.blocks),
        "reward": result.reward,
        "finished": result.finished,
        "metadata": result.metadata,
    }


def sdk_client(url: str, token: str) -> dict[str, Any]:
    """The SDK's client, with the variant form (`/toydesk/...`) and the bare one (what TRL's adapter asks for)."""
    seen: dict[str, Any] = {}
    client = OpenReward(api_key=token)
    env = client.environments.get("toydesk", base_url=url, variant="toydesk")
    seen["tools"] = [
        {
            "name": tool.name,
            "description": tool.description,
            "input_schema": json.dumps(tool.input_schema, separators=(",", ":")),
        }
        for tool in env.list_tools()
    ]
    seen["splits"] = env.list_splits()
    tasks = env.list_tasks("train")
    seen["tasks"] = [task.task_spec for task in tasks]
    seen["num_tasks"] = env.num_tasks("test")
    seen["task"] = env.get_task("test", 1).task_spec
    seen["range"] = [task.task_spec for task in env.get_task_range("train", -2, None)]
    with env.session(task=tasks[0]) as session:
        seen["prompt"] = [block.text for block in session.get_prompt()]
        seen["valid"] = output(session.call_tool("submit_offers", VALID))
        try:
            session.call_tool("submit_offers", MALFORMED)
        except Exception as error:
            seen["malformed"] = [
                type(error).__name__,
                getattr(error, "reason", None),
                getattr(error, "detail", None),
            ]
        try:
            session.call_tool("no_such_tool", {})
        except Exception as error:
            seen["unknown"] = [
                type(error).__name__,
                getattr(error, "reason", None),
                getattr(error, "detail", None),
            ]
        seen["note"] = output(session.call_tool("write_note", {"text": "ünïcode"}))
        seen["end_turn"] = output(session.call_tool("end_turn", {}))
        try:
            session.call_tool("battery_status", {})
        except Exception as error:
            seen["after_end"] = [
                type(error).__name__,
                getattr(error, "reason", None),
                getattr(error, "detail", None),
            ]
    with env.session(split="test", index=2) as session:
        seen["indexed_prompt"] = [block.text for block in session.get_prompt()]
        seen["messages"] = [
            [message.role, [block.text for block in message.blocks]] for message in session.get_messages()
        ]
    down = Task(
        server_name="toydesk",
        environment_name="toydesk",
        task_spec={"task": "t5", "down": ["battery"]},
        namespace=None,
    )
    with env.session(task=down) as session:
        seen["tool_raised"] = output(session.call_tool("battery_status", {}))
        seen["after_raise"] = output(session.call_tool("submit_offers", {"curves": [CURVE]}))
    broken = Task(
        server_name="toydesk",
        environment_name="toydesk",
        task_spec={"task": "t6", "raise_in": "reward"},
        namespace=None,
    )
    with env.session(task=broken) as session:
        try:
            session.call_tool("end_turn", {})
        except Exception as error:
            seen["unscored"] = failure(error)
    bare = client.environments.get("toydesk", base_url=url)  # variant None: bare paths, /tools among them
    seen["bare_tools"] = [tool.name for tool in bare.list_tools()]
    client.close()
    return seen


def trl_adapter(url: str, token: str) -> dict[str, Any]:
    """TRL's `OpenRewardSpec`, as its docs show it for a URL, driving whole episodes."""
    from trl.experimental.openreward import OpenRewardSpec

    os.environ["OPENREWARD_SESSION_URL"] = url  # the SDK otherwise asks sessions.<host> (see docs/ors.md)
    spec = OpenRewardSpec(url, split="train", num_tasks=3, api_key=token)
    dataset = spec.train_dataset
    seen: dict[str, Any] = {"rows": dataset.to_list()}
    episodes = []
    for index in range(3):
        environment = spec.environment_factory()
        observation = environment.reset(task_index=index)
        texts = [environment.submit_offers(curves=[CURVE] * (index + 1))]
        texts.append(environment.submit_offers(curves=[{"hours": "all", "points": [[0, 9], [1, 2]]}]))
        texts.append(environment.end_turn())
        texts.append(environment.battery_status())  # after the end: TRL's adapter returns the error as text
        episodes.append(
            {
                "observation": observation,
                "texts": texts,
                "reward": environment.reward,
                "rewards": environment.rewards,
                "finished": environment.finished,
                "reward_func": spec.reward_funcs([environment])[0],
            }
        )
        environment._close()
    seen["episodes"] = episodes
    seen["signatures"] = {
        name: str(inspect.signature(getattr(type(environment), name)))
        for name in ("submit_offers", "battery_status", "write_note", "end_turn")
    }
    return seen


def main() -> None:
    url, token = sys.argv[1], sys.argv[2]
    report: dict[str, Any] = {}
    for name, scenario in (("sdk", sdk_client), ("trl", trl_adapter)):
        try:
            report[name] = scenario(url, token)
        except Exception as error:  # the test says which scenario failed, and how
            import traceback

            report[name] = {"failed": failure(error), "traceback": traceback.format_exc()}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
