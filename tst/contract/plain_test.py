"""The lossy arm (`agent_env/training/plain.py`) on every provider: what a plain TRL environment shows of the toy's
tools is its own methods, rendered by TRL, whether the episodes run in process, on a server, on Ray or over OpenEnv
(whose servers name the class, imported here with the served tool set)."""

from __future__ import annotations

import pytest

from agent_env.session import LocalProvider
from testbed.toy import ToyDesk

pytest.importorskip(
    "transformers", reason="the lossy arm is TRL's rendering, with transformers (the trl extra)"
)


def test_the_lossy_arm_is_the_in_process_one_tool_for_tool_on_every_provider(provider):
    from agent_env.training.plain import plain_tools, plain_view

    view = plain_view(provider)
    assert view.tools == plain_tools(LocalProvider(ToyDesk))
    assert {tool.form for tool in view.tools} == {"method"}
    assert view.basis is None or view.basis.startswith(
        "the server's class testbed.toy:ToyDesk, imported here"
    )
