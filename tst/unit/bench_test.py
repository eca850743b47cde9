"""bench/ stands on its own: it imports nothing from tst/, and testbed/, what both stand on, imports neither."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported(source: str) -> set[str]:
    """Every module `source` imports, at module level or anywhere below, by its full dotted name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def named_by_string(source: str) -> set[str]:
    """String constants that name a tst/ module or file, as an environment name ("tst.x:Env") or a path part."""
    return {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == "tst" or node.value.startswith(("tst.", "tst/")))
    }


def reaches(folder: str, *packages: str) -> list[str]:
    """`file: module` for each import under `folder` of one of `packages`, or of a module inside one."""
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for name in sorted(imported(path.read_text())):
            if name.split(".")[0] in packages:
                found.append(f"{path.relative_to(ROOT)}: {name}")
    return found


def test_no_benchmark_imports_the_tests():
    assert reaches("bench", "tst") == [], "move what bench/ needs from tst/ to testbed/"


OLDER_REVISIONS = {"bench/_served.py: 'tst/data'"}
"""Names of paths inside a `git archive` of an older agent_env (before testbed/ existed, its test environments were
under tst/data/), which --baseline serves: never this checkout's tst/."""


def test_no_benchmark_names_a_test_module_or_file_in_a_string():
    named = {
        f"{path.relative_to(ROOT)}: {value!r}"
        for path in sorted((ROOT / "bench").rglob("*.py"))
        for value in named_by_string(path.read_text())
    }
    assert named - OLDER_REVISIONS == set(), (
        "environments and scripts bench/ starts by name belong in testbed/"
    )
    assert named >= OLDER_REVISIONS, (
        "an older revision's path is no longer named: drop it from OLDER_REVISIONS"
    )


def test_testbed_imports_neither_the_tests_nor_the_benchmarks():
    assert reaches("testbed", "tst", "bench") == []


def test_testbed_is_not_in_the_wheel():
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert build["packages"] == ["agent_env"]


def test_the_checks_see_imports_in_functions_and_names_in_strings():
    source = 'def f():\n    from tst.data import x\n    import tst.support\nSERVE = "tst.data.toy:ToyDesk"\n'
    assert {"tst.data", "tst.data.x", "tst.support"} <= imported(source)
    assert named_by_string(source) == {"tst.data.toy:ToyDesk"}
    assert imported("from . import sibling\n") == set()
