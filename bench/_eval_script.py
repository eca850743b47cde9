"""The scripted model `bench/eval_overhead.py` serves: a desk trader who answers instantly, eight turns an episode."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from testbed.scripted import Answer, ScriptedServer, call, completion, tool_results

CURVE = {"hours": "HE19", "points": [[0, 40], [50, 41]]}
PLAN = [
    ("battery_status", {}),
    ("dam_price_forecast", {"hours": "HE17-HE20"}),
    ("check_offers", {"curves": [CURVE]}),
    ("submit_dam_offers", {"curves": [CURVE]}),
    ("list_offers", {}),
    ("system_conditions", {"hours": "HE19"}),
    ("as_product_rules", {}),
    ("end_turn", {}),
]
"""Each episode's calls, one a turn: reads, a check, a submission, the end."""
TURNS = len(PLAN)


def desk_trader(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    name, arguments = PLAN[min(len(tool_results(body)), TURNS - 1)]
    return Answer(completion(tool_calls=[call(name, arguments)], usage=(2500, 30)))


if __name__ == "__main__":  # python bench/_eval_script.py PORT: serve until killed
    asyncio.run(ScriptedServer(desk_trader, record=False).serve(int(sys.argv[1])))
