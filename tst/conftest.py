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
