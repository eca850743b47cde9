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

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from testbed.processes import Server, free_port

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "openenv"
EXCLUDE_NEWER = "2026-11-29T00:00:00Z"
IMPORTS = "import openenv.core.env_server.http_server, openenv.core.mcp_client, openenv.core.generic_client"


@dataclass(frozen=True)
class Spec:
    """What one venv holds: packages installed without their dependencies, then packages installed with them."""

    without_deps: tuple[str, ...] = ()
    with_deps: tuple[str, ...] = ()


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


class PyPIUnreachableError(RuntimeError):
    """The package index cannot be reached, so a venv cannot be built; the tests that need one skip."""


def python(version: str) -> Path:
    """The python of the venv for an OpenEnv version, built (or taken from the cache) with its packages importable.

    Raises:
        PyPIUnreachableError: The venv is not cached and the package index cannot be reached.
        RuntimeError: Building the venv failed for another reason; the message holds uv's output.
    """
    spec = SPECS[version]
    key = hashlib.sha256(
        json.dumps([asdict(spec), EXCLUDE_NEWER, sys.version_info[:2]]).encode()
    ).hexdigest()[:10]
    folder = CACHE / f"openenv-{version}-{key}"
    interpreter = folder / "bin" / "python"
    CACHE.mkdir(parents=True, exist_ok=True)
    with _locked(CACHE / f"{folder.name}.lock"):
        if not (folder / "ready").exists():
            _build(folder, spec)
            (folder / "ready").write_text(f"{version}\n")
    return interpreter


def ledger(python: Path, name: str, log: Path) -> Server:
    """OpenEnv's real server on openenv_ledger.py, started by an OpenEnv venv's `python` on a free port; `url()`
    waits for it."""
    port = free_port()
    command = [str(python), str(LEDGER), str(port), str(LEDGER_SESSIONS)]
    return Server(name, command, f"http://127.0.0.1:{port}", log)


def _build(folder: Path, spec: Spec) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    interpreter = str(folder / "bin" / "python")
    steps = [["venv", "--quiet", "--python", sys.executable, str(folder)]]
    install = ["pip", "install", "--quiet", "--python", interpreter, "--exclude-newer", EXCLUDE_NEWER]
    if spec.without_deps:
        steps.append([*install, "--no-deps", *spec.without_deps])
    if spec.with_deps:
        steps.append([*install, *spec.with_deps])
    for step in steps:
        result = subprocess.run([*uv(), *step], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            shutil.rmtree(folder, ignore_errors=True)
            if not index_reachable():
                raise PyPIUnreachableError(f"the package index cannot be reached to build {folder.name}")
            raise RuntimeError(f"uv {' '.join(step)} failed:\n{result.stdout}\n{result.stderr}")
    check = subprocess.run([interpreter, "-c", IMPORTS], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"OpenEnv does not import in {folder.name}:\n{check.stderr}")


def uv() -> list[str]:
    """The uv command: on PATH, or as the `uv` module of this or the system's python (as the Makefile finds it)."""
    found = shutil.which("uv")
    if found:
        return [found]
    for candidate in (sys.executable, shutil.which("python3")):
        if (
            candidate
            and subprocess.run([candidate, "-m", "uv", "--version"], capture_output=True).returncode == 0
        ):
            return [candidate, "-m", "uv"]
    raise RuntimeError("uv is not installed: `make test` installs it (pip install uv)")


def index_reachable() -> bool:
    """Whether the package index uv uses answers."""
    index = os.environ.get("UV_INDEX_URL") or os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple/"
    try:
        with urllib.request.urlopen(f"{index.rstrip('/')}/openenv/", timeout=15):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path`, so two test runs in one checkout never build the same venv at once."""
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
