"""`make matrix`: the test tiers in a clean venv for each supported combination of Python and dependencies.

Rows (docs/versions.md lists the same, from `python .ci/matrix.py readme`; the README the training stack's, from
`python .ci/matrix.py readme --main`):
- floor: Python 3.11 with every direct dependency at the lower bound pyproject.toml gives it (uv's
  `--resolution lowest-direct`), checked after the install: a floor something else pulls higher fails the row.
- newest-3.12 and newest-3.13: uv.lock's versions, the newest releases when it was last locked
  (`uv lock --upgrade` moves them on).

Each row's venv lives in .cache/matrix/<row>/ and is rebuilt only when what it was built from changes: pyproject.toml,
uv.lock for the newest rows, the interpreter, or this script's build steps. Packages come from uv's cache.
A row whose interpreter is missing fails, saying where it looked: supported means tested. To run fewer rows, name
them (`make matrix ROWS=floor`).

Usage: python .ci/matrix.py [ROW ...]   run the rows (all by default)
       python .ci/matrix.py readme [--main]   print docs/versions.md's table (--main: the README's) (needs
                                        `packaging`: run it in the dev venv)
       python .ci/matrix.py check-floors   inside a row's venv: every direct dependency is at its floor
Interpreters: pythonX.Y on PATH, else the newest pyenv X.Y.*; MATRIX_PYTHON_3_12=/path/to/python overrides.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "matrix"
TIERS = [
    "tst/unit",
    "tst/trl",
    "tst/mcp",
]  # the unit, TRL and MCP tiers; `make test` runs the rest on the locked versions
PARALLEL = ["-n", "2", "--dist", "loadfile"]  # two workers, a test file each at a time, as `make test` runs
BUILD = "1"  # bump when the build steps change, so every cached venv is rebuilt
MAIN = ["trl", "transformers", "torch"]  # the training stack; every direct dependency is listed after these


@dataclass(frozen=True)
class Row:
    """One combination: a name, the Python minor version, and where its versions come from."""

    name: str
    python: str
    source: str  # "floors" (pyproject.toml's lower bounds) or "lock" (uv.lock)

    @property
    def venv(self) -> Path:
        return CACHE / self.name


ROWS = [
    Row("floor", "3.11", "floors"),
    Row("newest-3.12", "3.12", "lock"),
    Row("newest-3.13", "3.13", "lock"),
]


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def direct_requirements() -> list[str]:
    """Every requirement pyproject.toml states: the dependencies, each extra's, and the dev group's."""
    project = pyproject()
    lines = list(project["project"]["dependencies"])
    for extra in project["project"]["optional-dependencies"].values():
        lines += extra
    lines += [line for line in project["dependency-groups"]["dev"] if isinstance(line, str)]
    own = project["project"]["name"]
    return [line for line in lines if not line.replace("_", "-").startswith(own)]


# Finding an interpreter -------------------------------------------------------------------------------------


def find_python(version: str) -> tuple[str, str] | tuple[None, str]:
    """A working interpreter for `version` and its full version, or None and where it was looked for."""
    override = os.environ.get(f"MATRIX_PYTHON_{version.replace('.', '_')}")
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = glob.glob(str(pyenv / "versions" / f"{version}.*" / "bin" / f"python{version}"))
    candidates = (
        [override] if override else [shutil.which(f"python{version}"), *sorted(found, key=patch)[::-1]]
    )
    for candidate in filter(None, candidates):
        probe = "import sys; print('%d.%d.%d' % sys.version_info[:3])"
        try:
            result = subprocess.run([candidate, "-c", probe], capture_output=True, text=True)
        except OSError:  # not there, or not executable
            continue
        if result.returncode == 0 and result.stdout.startswith(f"{version}."):
            return candidate, result.stdout.strip()
    where = (
        f"MATRIX_PYTHON_{version.replace('.', '_')}={override}"
        if override
        else (f"python{version} on PATH and {pyenv}/versions/{version}.*")
    )
    return None, where


def patch(path: str) -> tuple[int, ...]:
    release = Path(path).parents[1].name
    return tuple(int(part) for part in release.split(".") if part.isdigit())


# Building a row's venv --------------------------------------------------------------------------------------


def uv() -> list[str]:
    if os.environ.get("UV"):
        return shlex.split(os.environ["UV"])
    return [found] if (found := shutil.which("uv")) else [sys.executable, "-m", "uv"]


def build_key(row: Row, python_version: str) -> str:
    digest = hashlib.sha256(f"{BUILD} {row} {python_version}".encode())
    digest.update((ROOT / "pyproject.toml").read_bytes())
    if row.source == "lock":
        digest.update((ROOT / "uv.lock").read_bytes())
    return digest.hexdigest()


def ensure_venv(row: Row, python: str, python_version: str) -> None:
    """Reuse the row's venv if it was built from the same inputs; otherwise build it afresh."""
    key, stamp = build_key(row, python_version), row.venv / ".matrix-key"
    if stamp.exists() and stamp.read_text() == key:
        print(f"[{row.name}] reusing {row.venv.relative_to(ROOT)} (built from these inputs)", flush=True)
        return
    print(f"[{row.name}] building {row.venv.relative_to(ROOT)} with Python {python_version}", flush=True)
    shutil.rmtree(row.venv, ignore_errors=True)
    if row.source == "lock":
        environment = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(row.venv)}
        command = [*uv(), "sync", "--frozen", "--all-extras", "--python", python]
        subprocess.run(command, cwd=ROOT, env=environment, check=True)
    else:
        subprocess.run([*uv(), "venv", "--quiet", "--python", python, str(row.venv)], cwd=ROOT, check=True)
        extras = ",".join(pyproject()["project"]["optional-dependencies"])
        command = [
            *uv(), "pip", "install", "--python", str(row.venv / "bin" / "python"),
            "--resolution", "lowest-direct", "-e", f"{ROOT}[{extras}]", "--group", f"{ROOT / 'pyproject.toml'}:dev",
        ]  # fmt: skip
        subprocess.run(command, cwd=ROOT, check=True)
        run_in(row, [".ci/matrix.py", "check-floors"])
    stamp.write_text(key)


def run_in(row: Row, arguments: list[str], check: bool = True) -> int:
    """Run the row's Python with `arguments` in the checkout, with the venv first on PATH."""
    bin_dir = row.venv / "bin"
    environment = {
        **os.environ,
        "VIRTUAL_ENV": str(row.venv),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    environment.pop("UV_PROJECT_ENVIRONMENT", None)
    return subprocess.run(
        [str(bin_dir / "python"), *arguments], cwd=ROOT, env=environment, check=check
    ).returncode


# Inside a row's venv ----------------------------------------------------------------------------------------


def check_floors() -> int:
    """Every direct requirement that applies here is installed at its `>=` bound; print each that is not."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import Requirement
    from packaging.version import Version

    problems = []
    for line in direct_requirements():
        requirement = Requirement(line)
        if requirement.marker and not requirement.marker.evaluate():
            continue
        floors = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        try:
            installed = version(requirement.name)
        except PackageNotFoundError:
            problems.append(f"{requirement.name} is not installed")
            continue
        if not floors:
            problems.append(f"{line!r} has no >= floor, so the floor row cannot test one; give it one")
        elif Version(installed) != Version(floors[0]):
            problems.append(
                f"{requirement.name}: pyproject.toml's floor is {floors[0]} but the floor row installs {installed}"
                f" (something requires more: see `uv pip tree --invert --package {requirement.name}` in"
                f" {sys.prefix}); raise the floor to what is tested"
            )
    for problem in problems:
        print(f"floor check: {problem}", file=sys.stderr)
    return 1 if problems else 0


def print_versions(row: Row) -> None:
    names = [*MAIN, *sorted({requirement_name(line) for line in direct_requirements()} - set(MAIN))]
    script = (
        "import importlib.metadata as m, platform\n"
        f"names = {names!r}\n"
        "versions = []\n"
        "for name in names:\n"
        "    try: versions.append(f'{name} {m.version(name)}')\n"
        "    except m.PackageNotFoundError: pass\n"
        "print('Python ' + platform.python_version() + ', ' + ', '.join(versions))\n"
    )
    print(f"[{row.name}] ", end="", flush=True)
    run_in(row, ["-c", script])


def requirement_name(line: str) -> str:
    for stop in "<>=!~;[ ":
        line = line.split(stop)[0]
    return line.strip().lower().replace("_", "-")


# The versions tables ------------------------------------------------------------------------------------


def readme_table(main_only: bool = False) -> str:
    """The versions table: each package's version per row, from pyproject.toml's floors and uv.lock; the training
    stack alone (the README's) when `main_only`, every direct dependency (docs/versions.md's) otherwise."""
    from packaging.markers import Marker
    from packaging.requirements import Requirement

    floors = {}
    for line in direct_requirements():
        requirement = Requirement(line)
        floors[requirement.name.lower().replace("_", "-")] = next(
            spec.version for spec in requirement.specifier if spec.operator == ">="
        )
    lock = tomllib.loads((ROOT / "uv.lock").read_text())["package"]

    def locked(name: str, python: str) -> str:
        environment = {
            "python_full_version": f"{python}.0",
            "python_version": python,
            "sys_platform": "linux",
        }
        for package in lock:
            markers = package.get("resolution-markers")
            if package["name"] == name and (
                not markers or any(Marker(m).evaluate(environment) for m in markers)
            ):
                return str(package["version"])
        raise LookupError(f"uv.lock has no {name} for Python {python}")

    names = [*MAIN] if main_only else [*MAIN, *sorted(set(floors) - set(MAIN))]
    header = ["", *(f"{row.name}" for row in ROWS)]
    lines = [header, ["---"] * len(header), ["Python", *(row.python for row in ROWS)]]
    for name in names:
        lines.append(
            [name, *(floors[name] if row.source == "floors" else locked(name, row.python) for row in ROWS)]
        )
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


# Running the rows -------------------------------------------------------------------------------------------


def run(rows: list[Row]) -> int:
    results = []
    for row in rows:
        python, found = find_python(row.python)
        if python is None:
            message = (
                f"FAILED: no working Python {row.python} (looked at {found}); install it, point"
                f" MATRIX_PYTHON_{row.python.replace('.', '_')} at one, or run the other rows (make matrix ROWS=...)"
            )
            print(f"[{row.name}] {message}", flush=True)
            results.append((row, message))
            continue
        started = time.monotonic()
        try:
            ensure_venv(row, python, found)
        except subprocess.CalledProcessError as error:
            results.append((row, f"FAILED to build its venv ({shlex.join(map(str, error.cmd))})"))
            continue
        print_versions(row)
        print(f"[{row.name}] pytest {' '.join(TIERS)}", flush=True)
        code = run_in(row, ["-m", "pytest", *TIERS, *PARALLEL, "-p", "no:cacheprovider"], check=False)
        minutes = (time.monotonic() - started) / 60
        results.append((row, f"{'passed' if code == 0 else 'FAILED'} in {minutes:.1f} min (Python {found})"))
    print("\nmake matrix:")
    for row, outcome in results:
        print(f"  {row.name:<12} {outcome}")
    return 1 if any("FAILED" in outcome for _, outcome in results) else 0


def main(arguments: list[str]) -> int:
    if arguments in (["readme"], ["readme", "--main"]):
        print(readme_table(main_only="--main" in arguments))
        return 0
    if arguments == ["check-floors"]:
        return check_floors()
    by_name = {row.name: row for row in ROWS}
    unknown = [name for name in arguments if name not in by_name]
    if unknown:
        print(f"unknown row {', '.join(unknown)}; the rows are {', '.join(by_name)}", file=sys.stderr)
        return 2
    return run([by_name[name] for name in arguments] or ROWS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
