"""An ORS environment on every provider, as an MCP server's tools are: served by `build_app` (and so by
`agent-env serve module:name`), and evaluated, its lossy arm TRL's own ORS port. (Ray: tst/ors/ray_test.py.)

The ORS server here is agent_env's own (the toy, served with `ORSSurface` on a real loopback socket)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from agent_env import AgentEnv
from agent_env.evaluation import Endpoint, evaluate
from agent_env.ors import ORSEnvironment, ORSSurface
from agent_env.server.app import build_app
from agent_env.server.client import RemoteProvider
from testbed.scripted import scripted, toy_policy
from testbed.toy import VALID, ToyDesk
from tst.unit.server.running import running


@pytest.fixture(scope="module")
def toy() -> Iterator[str]:
    with running(build_app(ToyDesk, surfaces=[ORSSurface()])) as url:
        yield url


def test_an_ors_environment_served_by_build_app_plays_through_its_control_api(toy):
    source = ORSEnvironment(toy, "toydesk", name="RelayedDesk")
    with running(build_app(source)) as relay:
        provider = RemoteProvider(relay)
        assert provider.tools() == ToyDesk.tools.published
        row = provider.dataset_rows("test")[0]
        assert row["task_spec"] == ToyDesk().dataset_rows("test")[0]
        with provider.open() as session:
            assert session.reset(**row) == "Trade.\n\nTask test-0: submit offers, then end your turn."
            assert session.call_tool("submit_offers", VALID) == "accepted 3 curves and 1 AS offers"
            assert session.reward() == 0.3  # read on the relay, from the ORS server's finishing result


def test_an_ors_environment_served_by_build_app_speaks_mcp_too(toy):
    source = ORSEnvironment(toy, "toydesk")
    with TestClient(build_app(source)) as client:
        listed = client.get("/tools").json()
        assert (
            listed["environment"] == "toydesk" and "class" not in listed
        )  # built from a source: no class to import
        assert [tool["name"] for tool in listed["tools"]] == [
            tool["name"] for tool in ToyDesk.tools.published
        ]


def test_an_evaluation_plays_it_and_its_lossy_arm_is_trls_own_ors_port(toy, tmp_path):
    env = AgentEnv.ors(toy, "toydesk")
    with scripted(toy_policy) as server:
        report = evaluate(
            env,
            Endpoint(server.url, backoff=0.001, max_backoff=0.01),
            episodes=2,
            split="train",
            compare_with="lossy",
            out=tmp_path / "run.jsonl",
        )
    full, lossy = report.summaries
    assert full.reward.value == lossy.reward.value == pytest.approx(0.3)  # the same policy scores alike
    assert "TRL's own port of each listed tool (trl.experimental.openreward)" in report.arms[1][1]
    sent = {arm: [] for arm in ("full", "lossy")}
    for body, _ in server.requests:
        curves = _curves(body["tools"])
        sent["full" if "items" in curves and "properties" in curves["items"] else "lossy"].append(curves)
    assert sent["lossy"] and all(
        curves.get("items") in (None, {}) for curves in sent["lossy"]
    )  # a bare array
    assert sent["full"] and all(
        curves["items"]["properties"]["points"]["maxItems"] == 10 for curves in sent["full"]
    )


def _curves(tools: list[dict[str, Any]]) -> dict[str, Any]:
    submit = next(tool for tool in tools if tool["function"]["name"] == "submit_offers")
    curves: dict[str, Any] = submit["function"]["parameters"]["properties"]["curves"]
    return curves
