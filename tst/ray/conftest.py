"""The Ray tier's pool: `WhereDesk` on four actors of the shared local cluster, for a whole test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tst.ray.envs import WhereDesk


@pytest.fixture(scope="module")
def where(ray_cluster: str) -> Iterator[object]:
    """A `RayProvider` of `WhereDesk`: 4 actors, 3 episodes each, a 2 s call timeout; joined before the tests run."""
    from agent_env.ray import RayProvider

    provider = RayProvider(WhereDesk, actors=4, episodes_per_actor=3, pool="where", call_timeout=2.0)
    provider.loads()  # join, and start the actors, before any test times anything
    yield provider
    provider.shutdown()
