"""The providers the session contract runs against: each is one fixture named `<kind>_provider`, listed in PROVIDERS.

To add a provider, write a fixture that yields a `Provider` of `testbed.toy.ToyDesk` (with its defaults) and add
its kind to PROVIDERS; every contract test then runs against it too.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent_env.session import LocalProvider, Provider
from testbed.toy import ToyDesk

PROVIDERS = ["local", "served", "ray", "openenv"]


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> Provider:
    """Each provider in turn."""
    found: Provider = request.getfixturevalue(f"{request.param}_provider")
    return found


@pytest.fixture(scope="session")
def local_provider() -> Provider:
    """Sessions in this process."""
    return LocalProvider(ToyDesk)


@pytest.fixture(scope="session")
def served_provider() -> Iterator[Provider]:
    """Sessions of the toy served by `build_app` under uvicorn on a free loopback port."""
    pytest.importorskip("uvicorn", reason="the server extra is not installed")
    from agent_env.server.app import build_app
    from agent_env.server.client import RemoteProvider
    from tst.unit.server.running import running

    with running(build_app(ToyDesk)) as url:
        yield RemoteProvider(url)


@pytest.fixture(scope="session")
def ray_provider(ray_cluster: str) -> Iterator[Provider]:
    """Sessions whose episodes live on a pool of two Ray actors of the shared local cluster."""
    from agent_env.ray import RayProvider

    provider = RayProvider(ToyDesk, actors=2, pool="contract")
    yield provider
    provider.shutdown()


@pytest.fixture(scope="session")
def openenv_provider() -> Iterator[Provider]:
    """Sessions of the toy over OpenEnv's /ws: `build_app` with its OpenEnv surface, under uvicorn on a free port."""
    pytest.importorskip("websockets", reason="the server extra is not installed")
    from agent_env.openenv import OpenEnvProvider, OpenEnvSurface
    from agent_env.server.app import build_app
    from tst.unit.server.running import running

    with running(build_app(ToyDesk, surfaces=[OpenEnvSurface()])) as url:
        yield OpenEnvProvider(f"{url}/openenv")
