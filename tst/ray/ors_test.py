"""An ORS environment on Ray actors, as an MCP server's tools run there: each actor builds the class from the
description (asking the server for the tools itself) and plays its episodes as ORS sessions of its own."""

from __future__ import annotations

from agent_env import AgentEnv
from agent_env.ors import ORSEnvironment, ORSSurface
from agent_env.server.app import build_app
from testbed.toy import VALID, ToyDesk
from tst.unit.server.running import running


def test_an_ors_environment_runs_on_ray_actors(ray_cluster: str) -> None:
    with running(build_app(ToyDesk, surfaces=[ORSSurface()])) as url:
        env = AgentEnv.ray(ORSEnvironment(url, "toydesk"), actors=1, pool="ors-toy")
        try:
            assert env.tools() == ToyDesk.tools.published
            row = env.provider.dataset_rows("train")[2]
            with env.open() as session:
                assert session.reset(**row) == "Trade.\n\nTask train-2: submit offers, then end your turn."
                assert session.call_tool("submit_offers", VALID) == "accepted 3 curves and 1 AS offers"
                assert session.reward() == 0.3  # the ORS server's, read on the actor
        finally:
            env.provider.shutdown()
