"""The main job on the built-in default: the desk through the TRL factory, exactly as a trainer would use it.

Run `python -m agent_env.demo` (or `make demo`): it builds `AgentEnv.local("gridsim-desk").factory` (render
check included), shows what the model sees for `submit_dam_offers` against what TRL's method schema would give,
plays one test-split episode through the SchemaTools with a malformed call first, and scores it.
"""

from __future__ import annotations

import json
import time
from typing import Any

from agent_env import AgentEnv, ToolError
from agent_env.envs.gridsim.baselines import arbitrage_with_as
from agent_env.envs.gridsim.bundle import load_bundle


def _section(title: str) -> None:
    print(f"\n== {title}")


def main(task_id: str = "desk-v4/test/0000") -> None:
    from transformers.utils import get_json_schema

    env = AgentEnv.local("gridsim-desk")
    start = time.perf_counter()
    desk: Any = env.factory()
    print(
        f"Built the TRL factory for gridsim-desk ({len(env.tools())} tools, render check passed under Qwen3's"
    )
    print(f"chat template) in {time.perf_counter() - start:.2f} s.")

    _section("What the model sees for submit_dam_offers (its published schema, via SchemaTool)")
    print(json.dumps(dict(desk.submit_dam_offers)["function"]["parameters"], indent=1)[:1800])
    _section("What TRL's method schema alone would give it (the lossy path)")
    print(json.dumps(get_json_schema(type(desk).submit_dam_offers)["function"]["parameters"], indent=1))

    _section(f"One episode: {task_id}")
    print(desk.reset(task_id=task_id))
    malformed = {"curves": [{"hours": "HE18", "points": [[0, 40], ["60", 45, 1]]}]}
    print(f"\nA malformed call: submit_dam_offers({json.dumps(malformed)})")
    try:
        desk.submit_dam_offers(**malformed)
    except ToolError as error:  # TRL catches this and gives the model {"error": str(error)}
        print(f"The model gets back:\n{error}")
    offers = arbitrage_with_as(load_bundle("desk-v4").day(task_id).forecast, load_bundle("desk-v4").battery)
    print(
        f"\nThe arbitrage-with-AS baseline submits {len(offers['curves'])} curves, {len(offers['as_offers'])} AS offers:"
    )
    print(desk.submit_dam_offers(**offers))
    print(desk.end_turn())
    print(f"Reward reaching the trainer (get_reward): {desk.get_reward():.3f}")


if __name__ == "__main__":
    main()
