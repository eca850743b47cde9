"""The public surface of `agent_env.ray`, pinned."""

from __future__ import annotations

import agent_env.ray


def test_the_public_names_are_pinned_and_sorted_and_exist():
    assert agent_env.ray.__all__ == ["PoolMismatchError", "RayProvider", "RaySession"]
    for name in agent_env.ray.__all__:
        assert getattr(agent_env.ray, name) is not None
