"""Episodes `agent-env eval` plays for `bench/tau2_upstream.py`: the agent's replies scripted per task (transfers,
and replies whose calls pass a limit), answered by a scripted OpenAI-compatible server, each run through the real
`evaluate` with the scripted user (telecom's base split, its user never working its phone); and each played episode as tau2-bench records one (its messages), to score again
with its `evaluate_simulation` and to replay through its own orchestrator.

The shapes, each for every task of a domain:

- `transfer halfway, then finish`: the reference actions, one a reply, with a transfer halfway through them; then a
  message to the user saying what the task wants said (upstream: 1 wherever the reference is reached);
- `transfer, then a write the reference never makes` (task 13's shape): the reference actions, the transfer, then a
  reservation or an order the task never touches cancelled (upstream: 0, the database differs);
- `transfer, then stop`: the transfer, then the message, no other call;
- `one reply of every call, at max_steps` and `one step more`: the reference actions in a single reply, then the
  message (the user's goodbye lands on step 5: `max_steps=5` ends it there, 6 lets the user end it);
- `errors past max_errors in one reply`: three calls that fail, then the reference actions, all in one reply, under
  `max_errors=3` (every call runs; the limit ends the episode after the last);
- `a message reaching max_steps`: a reply of calls then a message under `max_steps=4` (the user is never asked).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_env import AgentEnv
from agent_env.envs.tau2.tasks import Task
from agent_env.evaluation import Endpoint, evaluate
from agent_env.users import ScriptedUser
from testbed.scripted import Answer, completion, scripted

TRANSFER_MESSAGE = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."
FAILING = {  # a call that fails in each domain, whatever the task
    "airline": ("get_reservation_details", {"reservation_id": "NOPE00"}),
    "retail": ("get_order_details", {"order_id": "#W0000000"}),
    "mock": ("update_task_status", {"task_id": "task_99", "status": "completed"}),
    "telecom": ("get_customer_by_id", {"customer_id": "C0000"}),
}
TRANSFER_SUMMARY = {"summary": "The user asks for a human agent."}


@dataclass
class Plan:
    """One episode to play: the agent's replies, in order (each its text and its calls), and the limits."""

    shape: str
    replies: list[dict[str, Any]]
    config: dict[str, Any] = field(default_factory=dict)


def reply(*calls: tuple[str, dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    return {"content": text, "calls": list(calls)}


def plans(domain: str, task: Task, base: Any) -> Iterator[Plan]:
    criteria = task.evaluation_criteria
    actions = (
        [(a.name, a.arguments) for a in (criteria.actions or []) if a.requestor == "assistant"]
        if criteria
        else []
    )
    info = list(criteria.communicate_info or []) if criteria else []
    said = "; ".join(info) or "Your request is handled."
    transfer = ("transfer_to_human_agents", TRANSFER_SUMMARY)
    half = len(actions) // 2
    yield Plan(
        "transfer halfway, then finish",
        [*(reply(a) for a in actions[:half]), reply(transfer), *(reply(a) for a in actions[half:]),
         reply(text=f"{said}. {TRANSFER_MESSAGE}")],
    )  # fmt: skip
    extra = untouched_write(domain, task, base)
    if extra is not None:
        yield Plan(
            "transfer, then a write the reference never makes",
            [
                *(reply(a) for a in actions),
                reply(transfer),
                reply(extra),
                reply(text=f"{said}. {TRANSFER_MESSAGE}"),
            ],
        )
    yield Plan("transfer, then stop", [reply(transfer), reply(text=TRANSFER_MESSAGE)])
    if actions:
        whole = [reply(*actions), reply(text=said)]
        yield Plan("one reply of every call, at max_steps", whole, {"max_steps": 5})
        yield Plan("one reply of every call, one step more", whole, {"max_steps": 6})
        failing = [FAILING[domain]] * 3
        yield Plan("errors past max_errors in one reply", [reply(*failing, *actions), reply(text=said)],
                   {"max_errors": 3})  # fmt: skip
        yield Plan("a message reaching max_steps", [reply(*actions), reply(text=said)], {"max_steps": 4})


def untouched_write(domain: str, task: Task, base: Any) -> tuple[str, dict[str, Any]] | None:
    """A write the task's reference never makes, which succeeds from its initial state: a reservation (airline) or a
    pending order (retail) it never names, cancelled; a task created (mock)."""
    named = json.dumps(task.model_dump())
    if domain == "airline":
        found = next(
            (key for key, r in base.reservations.items() if r.status != "cancelled" and key not in named),
            None,
        )
        return ("cancel_reservation", {"reservation_id": found}) if found else None
    if domain == "retail":
        found = next(
            (key for key, o in base.orders.items() if o.status == "pending" and key not in named), None
        )
        return ("cancel_pending_order", {"order_id": found, "reason": "no longer needed"}) if found else None
    if (
        domain == "telecom"
    ):  # its rewards assert on the two sides' state, which another customer's line never is
        return None
    return ("create_task", {"user_id": "user_1", "title": "Not asked for"})


class Agent:
    """The scripted server's script: the current plan's replies, the n-th for the n-th request of its episode (eval
    plays one episode at a time here)."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.asked = 0

    def start(self, replies: list[dict[str, Any]]) -> None:
        self.replies, self.asked = replies, 0

    def __call__(self, body: dict[str, Any], headers: dict[str, str]) -> Answer:
        index, self.asked = self.asked, self.asked + 1
        if index >= len(self.replies):
            return Answer(completion("(the script has ended)"))
        planned = self.replies[index]
        calls = [
            {"id": f"call_{index}_{number}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments)}}
            for number, (name, arguments) in enumerate(planned["calls"])
        ]  # fmt: skip
        return Answer(completion(planned["content"], tool_calls=calls or None))


class Speaking(ScriptedUser):
    """A scripted user who never calls its own tools (telecom's phone): the shapes here are the agent's."""

    def reply(self, chat: Any, tools: Any = (), run_tool: Any = None) -> Any:
        return super().reply(chat)


class Player:
    """Plays plans through `evaluate` against one scripted server, with the scripted user."""

    def __init__(self, domain: str) -> None:
        self.domain = domain
        self.agent = Agent()
        self._server = scripted(self.agent)
        self.url = self._server.__enter__().url
        self.folder = Path(tempfile.mkdtemp(prefix="tau2-played-"))

    def play(self, task: Task, plan: Plan) -> dict[str, Any]:
        """The episode's JSONL record."""
        # its opening, then it stops (or, transferred, says so), never working its phone (telecom's): the
        # orchestrator's replayed user says words only
        user = Speaking([task.scenario().script[0]])
        env = AgentEnv.local(f"tau2-{self.domain}", user=user, **plan.config)
        row = next(row for row in env.provider.dataset_rows("base") if row["task_id"] == task.id)
        self.agent.start(plan.replies)
        out = self.folder / f"{task.id}-{len(list(self.folder.iterdir()))}.jsonl"
        evaluate(env, Endpoint(self.url, backoff=0.001), rows=[row], out=out, max_turns=len(plan.replies) + 2)
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        return next(line for line in lines if line["type"] == "episode")

    def close(self) -> None:
        self._server.__exit__(None, None, None)
        shutil.rmtree(self.folder, ignore_errors=True)


def upstream_messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A played episode's messages as tau2-bench records them (the bench's JSON form): the agent's greeting (where
    no conversation came before), the user's opening, then every message after it."""
    transcript = record["transcript"]
    opening = record["opening"]
    errors = {call["id"]: call["verdict"] != "accepted" for call in record["calls"]}
    messages: list[dict[str, Any]] = []
    if not any(message["role"] == "assistant" for message in transcript[:opening]):
        messages.append({"role": "assistant", "content": "Hi! How can I help you today?"})
    messages.append({"role": "user", "content": transcript[opening - 1]["content"]})
    for message in transcript[opening:]:
        if message["role"] == "tool":
            messages.append({"role": "tool", "id": message["tool_call_id"], "content": message["content"],
                             "requestor": "assistant", "error": errors[message["tool_call_id"]]})  # fmt: skip
        elif message["role"] == "assistant":
            calls = [
                {"id": c["id"], "name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"]),
                 "requestor": "assistant"}
                for c in message.get("tool_calls") or []
            ]  # fmt: skip
            messages.append(
                {"role": "assistant", "content": message.get("content") or None, "tool_calls": calls or None}
            )
        else:
            messages.append({"role": "user", "content": message["content"]})
    return messages


def scripts(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The agent's replies (after the greeting) and the user's words, in order, for tau2-bench's orchestrator to
    replay."""
    opening = next(index for index, m in enumerate(messages) if m["role"] == "user")
    agent = [
        {"content": m.get("content"), "tool_calls": m.get("tool_calls")}
        for m in messages[opening + 1 :]
        if m["role"] == "assistant"
    ]
    return agent, [m["content"] for m in messages if m["role"] == "user"]
