"""What `agent-env eval` on τ²-bench costs a turn, against two scripted OpenAI-compatible servers that answer at once:
one plays the agent, one the user (the official protocol: the agent's plain replies go to the user endpoint).

Each episode of tau2-airline's test split: the agent reads (`list_all_airports`, then the user's profile), writes
to the user, reads again, writes again; the user opens, answers once, then says goodbye (###STOP###). Every call is
validated and run on the episode's copy-on-write database, each episode scored as tau2-bench scores it, the JSONL
written. Prints agent turns a second, user turns a second and episodes a minute, at 32 episodes in flight.

Run: PYTHONPATH=. uv run python bench/tau2_eval.py [--trials 4]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_env import AgentEnv
from agent_env.evaluation import Endpoint, evaluate
from testbed.scripted import Answer, call, completion, scripted


def agent(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    turn = sum(message["role"] == "assistant" for message in body["messages"])
    if turn == 0:
        return Answer(completion(tool_calls=[call("list_all_airports", {}, f"c{turn}")]))
    if turn == 1:
        return Answer(completion("Could you tell me your user id?"))
    if turn == 2:
        return Answer(
            completion(tool_calls=[call("get_user_details", {"user_id": "mia_li_3668"}, f"c{turn}")])
        )
    return Answer(completion("Thank you, I have everything I need."))


def user(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    said = sum(message["role"] == "assistant" for message in body["messages"])
    text = ("Hi, I need help with a reservation.", "It is mia_li_3668.", "Thanks. ###STOP###")[min(said, 2)]
    return Answer(completion(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    with (
        scripted(agent) as model,
        scripted(user, models=("user",)) as simulated,
        tempfile.TemporaryDirectory() as folder,
    ):
        model.record = simulated.record = False
        env = AgentEnv.local("tau2-airline", user={"base_url": simulated.url, "model": "user"})
        out = Path(folder) / "run.jsonl"
        start = time.perf_counter()
        report = evaluate(env, Endpoint(model.url), split="test", trials=args.trials,
                          concurrency=args.concurrency, out=out)  # fmt: skip
        elapsed = time.perf_counter() - start
        episodes = [
            line for line in map(json.loads, out.read_text().splitlines()) if line["type"] == "episode"
        ]
    turns = sum(episode["turns"] for episode in episodes)
    user_turns = sum(message["role"] == "user" for episode in episodes for message in episode["transcript"])
    summary = report.summaries[0]
    print(f"{len(episodes)} episodes of tau2-airline test ({args.trials} trials), {args.concurrency} in flight: "
          f"{elapsed:.1f} s")  # fmt: skip
    print(f"{turns / elapsed:,.0f} agent turns/s, {user_turns / elapsed:,.0f} user turns/s, "
          f"{len(episodes) / elapsed * 60:,.0f} episodes/min; ended by {summary.ended_by}, faults {summary.faults}")  # fmt: skip


if __name__ == "__main__":
    main()
