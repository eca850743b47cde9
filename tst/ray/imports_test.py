"""The Ray layer at work (joining a cluster, making a pool, playing an episode) imports only what the core and the
`ray` extra declare: no torch, TRL, transformers or server stack."""

from __future__ import annotations

import textwrap

from tst.unit.imports_test import imported_top_level_modules, undeclared

RAY_OWN = {"colorama", "psutil", "starlette", "anyio", "pyarrow", "tqdm", "uvloop"}
"""What Ray itself imports beyond its declared dependencies: colorama and psutil it ships inside its wheel
(`ray/thirdparty_files`); starlette (with anyio), pyarrow and tqdm it imports only when they happen to be installed
(they are here, for the server and trl extras), to register serializers and progress bars, and uvloop (the server
extra's) for its actors' event loops (`ray/_private/async_compat.py`)."""


def test_the_ray_layer_at_work_imports_only_what_the_ray_extra_declares(ray_cluster):
    code = textwrap.dedent(
        f"""
        from agent_env import AgentEnv
        from testbed.toy import ToyDesk
        env = AgentEnv.ray(ToyDesk, actors=1, pool="imports", address={ray_cluster!r})
        session = env.open()
        assert session.reset() and session.call_tool("battery_status", {{}})
        session.close()
        env.provider.shutdown()
        """
    )
    modules = imported_top_level_modules(code) - RAY_OWN
    assert "ray" in modules
    assert not modules & {"torch", "trl", "transformers", "mcp", "uvicorn", "httpx"}
    assert undeclared(modules, ("ray",)) == set()
