"""Venvs of their own for third-party packages that cannot be installed beside agent_env, built with uv from PyPI
and cached across runs under `.cache/`.

A venv is pinned to packages uploaded before `EXCLUDE_NEWER`, so it is the same on every machine, and its folder name
carries a hash of its spec: change the spec, get a new venv. Two test runs in one checkout never build the same venv
at once (a file lock), and a venv is used only once it is whole (a `ready` mark) and its packages import.
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

ROOT = Path(__file__).resolve().parents[1]
EXCLUDE_NEWER = "2026-11-29T00:00:00Z"


@dataclass(frozen=True)
class Spec:
    """What one venv holds: packages installed without their dependencies, then packages installed with them."""

    without_deps: tuple[str, ...] = ()
    with_deps: tuple[str, ...] = ()


class PyPIUnreachableError(RuntimeError):
    """The package index cannot be reached, so a venv cannot be built; the tests that need one skip."""


def venv_python(cache: Path, name: str, spec: Spec, imports: str, probe: str) -> Path:
    """The python of the venv `name` under `cache`, built (or taken from the cache) with `spec`, once `imports`
    (Python statements) run in it.

    Args:
        cache: The folder the venvs are cached in.
        name: The venv's name (its folder adds a hash of the spec).
        spec: Its packages.
        imports: What must import in it.
        probe: A package name the index is asked about when building fails, to tell an unreachable index apart.

    Raises:
        PyPIUnreachableError: The venv is not cached and the package index cannot be reached.
        RuntimeError: Building the venv failed for another reason; the message holds uv's output.
    """
    key = hashlib.sha256(
        json.dumps([asdict(spec), EXCLUDE_NEWER, sys.version_info[:2]]).encode()
    ).hexdigest()[:10]
    folder = cache / f"{name}-{key}"
    interpreter = folder / "bin" / "python"
    cache.mkdir(parents=True, exist_ok=True)
    with _locked(cache / f"{folder.name}.lock"):
        if not (folder / "ready").exists():
            _build(folder, spec, imports, probe)
            (folder / "ready").write_text(f"{name}\n")
    return interpreter


def _build(folder: Path, spec: Spec, imports: str, probe: str) -> None:
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
            if not index_reachable(probe):
                raise PyPIUnreachableError(f"the package index cannot be reached to build {folder.name}")
            raise RuntimeError(f"uv {' '.join(step)} failed:\n{result.stdout}\n{result.stderr}")
    check = subprocess.run([interpreter, "-c", imports], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"{imports!r} fails in {folder.name}:\n{check.stderr}")


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


def index_reachable(package: str) -> bool:
    """Whether the package index uv uses answers for `package`."""
    index = os.environ.get("UV_INDEX_URL") or os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple/"
    try:
        with urllib.request.urlopen(f"{index.rstrip('/')}/{package}/", timeout=15):
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
