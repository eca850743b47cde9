"""`GET /schema` on `agent-env serve --openenv` publishes OpenEnv's own action, observation and state schemas, byte
for byte what OpenEnv's real servers publish for an MCP environment, of either version."""

from __future__ import annotations

import json

import httpx
import pytest

from tst.openenv.fixtures import VERSIONS


@pytest.mark.parametrize("version", VERSIONS)
def test_schema_is_openenvs_own_for_an_mcp_environment(openenv_tier, version):
    ours = httpx.get(f"{openenv_tier.agent_envs['0.3.0'].url()}/schema").json()
    theirs = httpx.get(f"{openenv_tier.ledger_url(version)}/schema").json()
    for key in ("action", "observation", "state"):
        assert json.dumps(ours[key]) == json.dumps(theirs[key])  # same keys in the same order: the same bytes
    assert ours["reset_observation"]["title"] == "ResetObservation"
