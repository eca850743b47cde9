"""The `openreward` SDK (the Open Reward Standard's reference client and server) and TRL's ORS adapter, in a venv of
their own built with uv from PyPI and cached under `.cache/ors/`, and the SDK's own server run by it.

`openreward` 0.1.167 pins `sse-starlette==2.3.6`, and agent_env's mcp 2.x needs `sse-starlette>=3`: the two cannot
share a venv (`uv lock` refuses the dev group with it). So the SDK gets one of its own, with TRL 1.16 beside it, for
its `trl.experimental.openreward` adapter, which imports only the SDK, `datasets` and `packaging` (TRL is installed
without its dependencies: no torch, no transformers); the tests run its server and clients as subprocesses.
"""

from __future__ import annotations

import os
from pathlib import Path

from testbed.processes import Server, free_port
from testbed.venvs import ROOT, PyPIUnreachableError, Spec, venv_python

CACHE = ROOT / ".cache" / "ors"
SDK = "openreward==0.1.167"
TRL = "trl==1.16.0"
SPEC = Spec(without_deps=(TRL,), with_deps=(SDK, "datasets", "packaging"))
IMPORTS = (
    "import openreward.environments.server, openreward.api.environments.client, trl.experimental.openreward"
)
ORDERS = Path(__file__).with_name("ors_orders.py")
QUIET = {"OPENREWARD_DISABLE_UPDATE_CHECK": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
"""What every process of the venv is started with: no PyPI version check, no experimental-API notice."""


def python() -> Path:
    """The python of the ORS venv, built (or taken from the cache) with the SDK and TRL's adapter importable.

    Raises:
        PyPIUnreachableError: The venv is not cached and the package index cannot be reached.
        RuntimeError: Building the venv failed for another reason; the message holds uv's output.
    """
    return venv_python(CACHE, "openreward-0.1.167", SPEC, IMPORTS, "openreward")


def orders(python: Path, log: Path) -> Server:
    """The SDK's own server on ors_orders.py, started by the ORS venv's `python` on a free port; `url()` waits for it.
    The SDK's PyPI version check is off, so the server never reaches for the network."""
    port = free_port()
    command = [str(python), str(ORDERS), str(port)]
    environment = {**os.environ, **QUIET}
    return Server("the openreward SDK's server", command, f"http://127.0.0.1:{port}", log, env=environment)


__all__ = ["CACHE", "ORDERS", "QUIET", "SDK", "SPEC", "TRL", "PyPIUnreachableError", "orders", "python"]
