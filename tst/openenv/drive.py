"""Drive an agent_env server's OpenEnv surface with OpenEnv's own clients, and print what they saw as one JSON line.

Run by the python of an OpenEnv venv (testbed/openenv_venvs.py), never by agent_env's:
`python drive.py BASE_URL MAX_SESSIONS [TOKEN]`, against `agent-env serve testbed.toy:ToyDesk --openenv` (the
desk-shaped toy: `submit_offers` with nested curves, an async `write_note`, a reward of the curves booked over 10).
Each scenario records what the client returned or raised; the tests compare it with what agent_env does in process.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

# ToyDesk's calls, from the file testbed/toy.py reads them from too: this script runs where agent_env is not installed.
CALLS = json.loads((Path(__file__).parents[2] / "testbed" / "toy_calls.json").read_text())
VALID, MALFORMED = CALLS["valid"], CALLS["malformed"]


def failure(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def schemas(tools: list[Any]) -> list[dict[str, Any]]:
    """Each tool as the client holds it; the schema as compact JSON text, so its key order (its bytes) shows."""
    return [
        {
            "name": tool["name"] if isinstance(tool, dict) else tool.name,
            "description": tool["description"] if isinstance(tool, dict) else tool.description,
            "input_schema": json.dumps(
                tool["input_schema"] if isinstance(tool, dict) else tool.input_schema, separators=(",", ":")
            ),
        }
        for tool in tools
    ]


async def generic(url: str, options: dict[str, Any]) -> dict[str, Any]:
    """`GenericEnvClient`: dict actions over /ws."""
    seen: dict[str, Any] = {}
    async with GenericEnvClient(base_url=url, **options) as env:
        result = await env.reset(task="train-2")
        seen["reset"] = [result.observation, result.reward, result.done]
        seen["tools"] = schemas((await env.step({"type": "list_tools"})).observation["tools"])
        call = {"type": "call_tool", "tool_name": "submit_offers"}
        seen["valid"] = (await env.step({**call, "arguments": VALID})).observation
        seen["malformed"] = (await env.step({**call, "arguments": MALFORMED})).observation
        result = await env.step({"type": "call_tool", "tool_name": "end_turn", "arguments": {}})
        seen["end_turn"] = [result.observation, result.reward, result.done]
        seen["state"] = await env.state()
        try:
            await env.step({"message": "hi"})
        except Exception as error:
            seen["not_mcp"] = failure(error)
    return seen


async def mcp(url: str, options: dict[str, Any]) -> dict[str, Any]:
    """`MCPToolClient`: over /ws on 0.3.0; over POST /mcp and /ws?session_id= on 0.10.0."""
    seen: dict[str, Any] = {}
    async with MCPToolClient(base_url=url, **options) as env:
        await env.reset(task="train-1")
        seen["tools"] = schemas(await env.list_tools())
        seen["valid"] = await env.call_tool("submit_offers", **VALID)
        for name, arguments in (("malformed", MALFORMED), ("unknown", None)):
            try:
                await env.call_tool("submit_offers" if arguments else "nope", **(arguments or {}))
            except Exception as error:
                seen[name] = failure(error)
        seen["note"] = await env.call_tool("write_note", text="hi")
        result = await env.step(CallToolAction(tool_name="end_turn", arguments={}))
        seen["end_turn"] = [result.reward, result.done]
        state = await env.state()
        seen["state"] = {"episode_id": state.episode_id, "step_count": state.step_count}
    return seen


async def capacity(url: str, options: dict[str, Any], sessions: int) -> dict[str, Any]:
    """`sessions` clients reset, the next one is refused; once they close, another gets in."""
    seen: dict[str, Any] = {}
    clients = [GenericEnvClient(base_url=url, **options) for _ in range(sessions + 1)]
    try:
        for client in clients[:sessions]:
            await reset_once_a_slot_is_free(
                client
            )  # the server frees a slot when it has seen the last socket go
        try:
            await clients[-1].reset()
            seen["refused"] = None
        except Exception as error:
            seen["refused"] = failure(error)
    finally:
        for client in clients:
            await client.close()
    async with GenericEnvClient(base_url=url, **options) as env:
        seen["after"] = (await reset_once_a_slot_is_free(env, task="train-0")).observation
    return seen


async def reset_once_a_slot_is_free(client: Any, seconds: float = 20.0, **row: Any) -> Any:
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        try:
            return await client.reset(**row)
        except RuntimeError as error:
            if "CAPACITY_REACHED" not in str(error) or asyncio.get_running_loop().time() > deadline:
                raise
            await client.disconnect()
            await asyncio.sleep(0.1)


async def unauthorized(url: str) -> dict[str, Any]:
    """Both clients without the bearer token (openenv 0.10.0 clients can send one: `headers=`)."""
    seen: dict[str, Any] = {}
    for name, client in (("generic", GenericEnvClient), ("mcp", MCPToolClient)):
        try:
            async with client(base_url=url) as env:
                await env.reset()
            seen[name] = None
        except Exception as error:
            seen[name] = failure(error)
    return seen


async def main(url: str, sessions: int, token: str | None) -> None:
    options = {"headers": {"Authorization": f"Bearer {token}"}} if token else {}
    report = {
        "generic": await generic(url, options),
        "mcp": await mcp(url, options),
        "capacity": await capacity(url, options, sessions),
    }
    if token:
        report["unauthorized"] = await unauthorized(url)
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None))
