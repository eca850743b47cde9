"""Time tool calls with OpenEnv's own client; run by the python of an OpenEnv venv (testbed/openenv_venvs.py), never by
agent_env's: `python _openenv_calls.py BASE_URL ws|mcp TOOL ARGUMENTS_JSON ROW_JSON CALLS WARMUP`. Prints the
seconds of each timed call as a JSON list.

`ws` steps `GenericEnvClient` with call_tool actions over /ws; `mcp` calls `MCPToolClient.call_tool`, which openenv
0.10.0 sends over its POST /mcp dialect (after `openenv/session/create`, with reset over /ws?session_id=).
"""

import asyncio
import json
import sys
import time

from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient


async def main(url: str, mode: str, tool: str, arguments: dict, row: dict, calls: int, warmup: int) -> None:
    client = GenericEnvClient if mode == "ws" else MCPToolClient
    seconds = []
    async with client(base_url=url) as env:
        await env.reset(**row)
        for index in range(warmup + calls):
            start = time.perf_counter()
            if mode == "ws":
                await env.step({"type": "call_tool", "tool_name": tool, "arguments": arguments})
            else:
                await env.call_tool(tool, **arguments)
            if index >= warmup:
                seconds.append(time.perf_counter() - start)
    print(json.dumps(seconds))


if __name__ == "__main__":
    url, mode, tool, arguments, row, calls, warmup = sys.argv[1:]
    asyncio.run(main(url, mode, tool, json.loads(arguments), json.loads(row), int(calls), int(warmup)))
