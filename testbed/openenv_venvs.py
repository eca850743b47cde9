"""OpenEnv's real packages, each in its own venv built with uv from PyPI and cached across runs under `.cache/`, and
OpenEnv's real server run by one of them on our ledger environment (openenv_ledger.py).

Current OpenEnv (`openenv` 0.4.2 to 0.10.0) pins `fastmcp<4`, hence `mcp<2`, and cannot be installed beside
agent_env's mcp 2.x; `openenv-core` and `openenv` install the same `openenv` module. So each version gets a venv of
its own, and the tests run its servers and clients as subprocesses. `openenv-core` 0.3.0 is installed slim (without
its ~100 dependencies, gradio among them, which it imports only if present) plus what its server and clients need;
`openenv` 0.10.0 as users install it. Resolution is pinned to packages uploaded before `EXCLUDE_NEWER`, so a venv
is the same on every machine, and its folder name carries a hash of its spec: change the spec, get a new venv.
"""

from __future__ import annotations

from pathlib import Path

from testbed.processes import Server, free_port
from testbed.venvs import EXCLUDE_NEWER, ROOT, PyPIUnreachableError, Spec, index_reachable, uv, venv_python

CACHE = ROOT / ".cache" / "openenv"
IMPORTS = "import openenv.core.env_server.http_server, openenv.core.mcp_client, openenv.core.generic_client"

SPECS = {
    "0.3.0": Spec(
        without_deps=("openenv-core==0.3.0",),
        with_deps=("fastapi", "uvicorn", "websockets", "fastmcp", "httpx", "requests", "pydantic"),
    ),
    "0.10.0": Spec(with_deps=("openenv==0.10.0",)),
}
"""The OpenEnv versions the tests run, by version."""


LEDGER = Path(__file__).with_name("openenv_ledger.py")
LEDGER_SESSIONS = 4
"""The ledger servers' `max_concurrent_envs`."""


def python(version: str) -> Path:
    """The python of the venv for an OpenEnv version, built (or taken from the cache) with its packages importable.

    Raises:
        PyPIUnreachableError: The venv is not cached and the package index cannot be reached.
        RuntimeError: Building the venv failed for another reason; the message holds uv's output.
    """
    return venv_python(CACHE, f"openenv-{version}", SPECS[version], IMPORTS, "openenv")


def ledger(python: Path, name: str, log: Path) -> Server:
    """OpenEnv's real server on openenv_ledger.py, started by an OpenEnv venv's `python` on a free port; `url()`
    waits for it."""
    port = free_port()
    command = [str(python), str(LEDGER), str(port), str(LEDGER_SESSIONS)]
    return Server(name, command, f"http://127.0.0.1:{port}", log)


__all__ = [
    "CACHE",
    "EXCLUDE_NEWER",
    "LEDGER",
    "LEDGER_SESSIONS",
    "ROOT",
    "SPECS",
    "PyPIUnreachableError",
    "index_reachable",
    "ledger",
    "python",
    "uv",
]
