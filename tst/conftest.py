"""Fixtures every tier may share, each started only when first asked for: one local Ray cluster for the whole test
session, the OpenEnv tier's (tst/openenv/fixtures.py) and the ORS tier's (tst/ors/fixtures.py). And where
τ²-bench's data comes from."""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tst.support import local_tau2_data

# τ²-bench's data: the copy beside the project (../shared/data/tau2, as a workspace holds it) where there is one,
# named for every process the tests start; else each test that needs it downloads it at the pinned commit into the
# user's cache, as a user's first run does.
if "AGENT_ENV_TAU2_DATA" not in os.environ and (
    found := local_tau2_data(Path(__file__).resolve().parents[1])
):
    os.environ["AGENT_ENV_TAU2_DATA"] = str(found)

# Ray reads its auth settings when it is first imported, and test modules import it when collected: set them here,
# before any. Token auth is Ray 2.60's default for a new cluster, said out loud, with a fresh token per run; every
# process the tests start inherits it, as a training node would from its environment.
os.environ["RAY_AUTH_MODE"] = "token"
os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(16)
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# Under `uv run` (as `make test` and `make matrix` start pytest), Ray would start its workers with `uv run` in the
# project's default venv, not this interpreter's: a matrix row on Python 3.12 then gets 3.11 actors that never start.
os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"

pytest_plugins = ["tst.openenv.fixtures", "tst.ors.fixtures"]


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """A real local Ray cluster (2 logical CPUs, token auth) joined by this process; its GCS address."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (the `ray` extra)")
    ray.init(
        num_cpus=2,
        object_store_memory=200 * 1024 * 1024,
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
    )
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


RAY_GROUP = "ray-cluster"
"""The one xdist group of every test file that may use the session's Ray cluster (`make test`'s workers)."""


def pytest_configure(config: pytest.Config) -> None:
    # xdist registers it too; here as well, so `--strict-markers` holds where xdist is not loaded (`-p no:xdist`)
    config.addinivalue_line("markers", "xdist_group(name): run these tests on one xdist worker")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `make test`'s workers (`--dist loadgroup`), each test file runs whole on one worker, so its module's
    fixtures and servers start once; and every file that may use the Ray cluster runs on the same worker, so one
    cluster starts, not one a worker (two starting at once on two loaded cores time out)."""
    uses_ray: dict[Path, bool] = {}
    for item in items:
        path = item.path
        if path not in uses_ray:
            uses_ray[path] = _may_use_ray(path)
        item.add_marker(pytest.mark.xdist_group(RAY_GROUP if uses_ray[path] else str(path)))


def _may_use_ray(path: Path) -> bool:
    """Whether the file, or a conftest.py between it and this one, asks for the `ray_cluster` fixture."""
    here = Path(__file__).resolve().parent
    texts = [path]
    folder = path.parent
    while folder != here and here in folder.parents:
        texts.append(folder / "conftest.py")
        folder = folder.parent
    return any(found.is_file() and "ray_cluster" in found.read_text() for found in texts)
