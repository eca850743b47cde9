"""`agent-env tools` (`agent_env/inspection/listing.py`): the published tools and the fingerprints the factory logs."""

from __future__ import annotations

import json
import logging

from agent_env import AgentEnv
from agent_env.schema import fingerprint
from agent_env.server import build_app
from testbed.toy import ToyDesk
from tst.unit.server.running import running


def test_tools_lists_every_tool_with_its_schema_and_fingerprints(invoke):
    published = AgentEnv.local("gridsim-desk").tools()
    result = invoke("tools")
    assert result.exit_code == 0, result.output
    assert f"GridSimDesk: {len(published)} tools, tool set {fingerprint(published)}" in result.stdout
    for tool in published:
        assert f"{tool['name']}  schema {fingerprint(tool['inputSchema'])}" in result.stdout
        assert tool["description"] in result.stdout
    assert '"prefixItems": [' in result.stdout


def test_the_json_listing_carries_the_tool_set_fingerprint_the_factory_logs(invoke, caplog):
    result = invoke("tools", "--json")
    assert result.exit_code == 0, result.output
    listing = json.loads(result.stdout)
    env = AgentEnv.local("gridsim-desk")
    with caplog.at_level(logging.INFO, logger="agent_env"):
        env.factory()
    assert f"tool set {listing['tool_set']}" in caplog.text
    assert [tool["inputSchema"] for tool in listing["tools"]] == [tool["inputSchema"] for tool in env.tools()]


def test_a_class_reference_and_a_served_url_list_the_same_tools(invoke):
    local = json.loads(invoke("tools", "testbed.toy:ToyDesk", "--json").stdout)
    assert [tool["name"] for tool in local["tools"]] == [tool["name"] for tool in ToyDesk.tools.published]
    with running(build_app(ToyDesk)) as url:
        served = json.loads(invoke("tools", url, "--json").stdout)
    assert served["tool_set"] == local["tool_set"]


def test_an_unknown_environment_is_one_line_on_stderr(invoke):
    result = invoke("tools", "no-such-desk")
    assert result.exit_code == 2
    assert (
        "agent-env tools: unknown environment 'no-such-desk'; the built-in ones are gridsim-desk"
        in result.stderr
    )
