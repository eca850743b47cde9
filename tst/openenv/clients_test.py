"""OpenEnv's real clients on `agent-env serve --openenv`: GenericEnvClient and MCPToolClient of openenv-core 0.3.0
and openenv 0.10.0 see the published schemas byte for byte, the in-process errors, the episode's reward, and
OpenEnv's capacity error (what they saw is recorded by tst/openenv/drive.py, run in each version's venv)."""

from __future__ import annotations

import pytest

from agent_env import LocalSession
from agent_env.openenv import _wire as wire
from testbed.toy import ToyDesk
from tst.openenv.fixtures import VERSIONS, OpenEnvTier

each_version = pytest.mark.parametrize("version", VERSIONS)

MALFORMED = {"curves": [{"hours": "HE07", "points": [[0, 10], [100]]}]}


def in_process_error(name: str, arguments: dict) -> str:
    session = LocalSession(ToyDesk())
    session.reset()
    with pytest.raises(Exception) as caught:
        session.call_tool(name, arguments)
    return str(caught.value)


def published() -> list[dict]:
    return [
        {
            "name": tool["name"],
            "description": tool["description"],
            "input_schema": wire.dumps(tool["inputSchema"]),
        }
        for tool in ToyDesk.tools.published
    ]


@each_version
def test_both_clients_list_the_published_schemas_byte_for_byte(openenv_tier, version):
    report = openenv_tier.client_report(version)
    assert report["generic"]["tools"] == published()  # over /ws
    assert report["mcp"]["tools"] == published()  # over /ws on 0.3.0, over POST /mcp on 0.10.0


@each_version
def test_generic_env_client_runs_an_episode_from_a_row_to_its_reward(openenv_tier, version):
    seen = openenv_tier.client_report(version)["generic"]
    assert seen["reset"] == [
        {"metadata": {}, "text": "Task train-2: submit offers, then end your turn."},
        None,
        False,
    ]
    assert seen["valid"] == wire.call_result("submit_offers", "accepted 3 curves and 1 AS offers")
    assert seen["malformed"] == wire.call_error(
        "submit_offers", "invalid_args", in_process_error("submit_offers", MALFORMED)
    )
    observation, reward, done = seen["end_turn"]
    assert observation["result"]["data"] == "Turn ended."
    assert (reward, done) == (0.3, True)  # three curves booked, over ten: ToyDesk's reward
    assert seen["state"]["step_count"] == 4 and len(seen["state"]["episode_id"]) == 32
    assert seen["not_mcp"].startswith(
        "RuntimeError: Server error: Invalid message: ToyDesk takes MCP actions"
    )
    assert seen["not_mcp"].endswith("(code: VALIDATION_ERROR)")


@each_version
def test_mcp_tool_client_calls_tools_sees_the_in_process_errors_and_gets_the_reward_over_ws(
    openenv_tier, version
):
    seen = openenv_tier.client_report(version)["mcp"]
    assert seen["valid"] == "accepted 3 curves and 1 AS offers"
    assert seen["note"] == "1 notes"  # an async tool, on the episode reset over /ws
    malformed = f"RuntimeError: Tool 'submit_offers' failed: {in_process_error('submit_offers', MALFORMED)}"
    unknown = f"RuntimeError: Tool 'nope' failed: {in_process_error('nope', {})}"
    if version == "0.3.0":  # tool errors arrive in the step's observation, with their type
        malformed, unknown = f"{malformed} (type: invalid_args)", f"{unknown} (type: tool_not_found)"
    assert (seen["malformed"], seen["unknown"]) == (malformed, unknown)
    assert seen["end_turn"] == [0.3, True]
    steps = {"0.3.0": 6, "0.10.0": 5}[version]  # 0.10.0 lists tools over /mcp, which counts no step
    assert seen["state"]["step_count"] == steps


@each_version
def test_past_max_episodes_a_client_gets_capacity_reached_and_a_closed_session_frees_its_slot(
    openenv_tier, version
):
    seen = openenv_tier.client_report(version)["capacity"]
    assert seen["refused"].startswith("RuntimeError: Server error: the server already holds 2 live episodes")
    assert seen["refused"].endswith("(code: CAPACITY_REACHED)")
    assert seen["after"] == {"metadata": {}, "text": "Task train-0: submit offers, then end your turn."}


@pytest.mark.parametrize("version", [version for version in VERSIONS if OpenEnvTier.token(version)])
def test_without_the_token_both_clients_are_refused_before_any_episode_opens(openenv_tier, version):
    seen = openenv_tier.client_report(version)["unauthorized"]
    assert seen["generic"].startswith("ConnectionError: Failed to connect to ws://")
    assert seen["generic"].endswith("server rejected WebSocket connection: HTTP 401")
    assert seen["mcp"].startswith("HTTPStatusError: Client error '401 Unauthorized' for url")
