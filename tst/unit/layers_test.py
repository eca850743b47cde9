"""The package's import graph, read with `ast`: no module imports itself back through others, no room imports one
above it in the layer order docs/architecture.md states, and no room but the server imports the server's private
modules (a surface takes what it needs from `agent_env.server.surface`).

Every import counts: at module level, inside functions, and under `TYPE_CHECKING` (a type-only circle is a circle).
So does a module named in a string where the package imports by name: a dict's values (the lazy-export tables of
package `__init__`s, `envs`' built-in names, as `package.module` or `package.module:attribute`) and the argument of
`importlib.import_module`. An edge goes to the module an import names (`from agent_env.server import errors` names
`agent_env.server.errors`; `from agent_env.server import build_app` names the package `agent_env.server`); loading a
module's parent packages is not an edge.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "agent_env"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

KNOWN_CIRCLES: set[frozenset[str]] = set()
"""Circles that exist and are known; any other fails, and so does one of these once it is gone."""

Graph = Mapping[str, set[str]]


def module_names(package: Path) -> dict[str, Path]:
    """Every module of the package under `package`, by dotted name (a package by its `__init__.py`)."""
    names = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imported(name: str, path: Path, modules: Iterable[str]) -> set[str]:
    """The package's modules that module `name` (at `path`) imports anywhere in its body."""
    known = set(modules)
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def deepest(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Dict):
            found |= {named_module(value, known) for value in node.values}
        elif isinstance(node, ast.Call) and _called(node) == "import_module" and node.args:
            found.add(named_module(node.args[0], known))
        elif isinstance(node, ast.Import):
            found |= {deepest(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:
                member = f"{base}.{alias.name}"
                found.add(member if member in known else deepest(base))
    return {target for target in found if target is not None and target != name}


def named_module(node: ast.expr | None, known: set[str]) -> str | None:
    """The package's module a string constant names (`package.module`, or `package.module:attribute` as `envs`
    names its environments), or None: any other string (a logger's name is not in a dict), or no string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        module = node.value.partition(":")[0]
        return module if module in known else None
    return None


def _called(call: ast.Call) -> str | None:
    """The name a call calls: `import_module` for `importlib.import_module(...)` and `import_module(...)` alike."""
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    modules = module_names(package)
    return {name: imported(name, path, modules) for name, path in modules.items()}


def circles(graph: Graph) -> list[list[str]]:
    """One circle through each group of modules that import each other (each strongly connected component of more
    than one module), as a path that starts and ends at its first module: `[a, b, c, a]`."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative: no recursion limit on a deep graph
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_path_round(group, graph) for group in sorted(groups)]


def _path_round(group: list[str], graph: Graph) -> list[str]:
    """The shortest path from the group's first module back to it, through the group."""
    start, members = group[0], set(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph.get(node, set()) & members):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"{group} is not a circle")


def room(module: str) -> str:
    """The room a module lives in: `agent_env.server._guard` -> `server`, `agent_env.errors` -> `errors`, and the
    package's own `__init__` (its public face) -> `agent_env`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_order(text: str) -> list[set[str]]:
    """The layers a ```layers block of architecture.md lists, bottom first, one a line (rooms apart by spaces; `#`
    starts a comment)."""
    block = re.search(r"^```layers\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert block, "docs/architecture.md has no ```layers block"
    lines = (line.split("#")[0].split() for line in block.group(1).splitlines())
    return [set(rooms) for rooms in lines if rooms]


def upward_imports(graph: Graph, layers: list[set[str]]) -> list[str]:
    """Every import from one room into another that is not below it (a higher layer, or a peer on the same one)."""
    level = {name: number for number, rooms in enumerate(layers) for name in rooms}
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            source_room, target_room = room(module), room(target)
            if source_room != target_room and level[target_room] >= level[source_room]:
                found.append(f"{module} ({source_room}) imports {target} ({target_room})")
    return found


def private_imports(graph: Graph, package: str) -> list[str]:
    """Every import of one of `package`'s private modules (`package._x`, and anything under one) by a module
    outside `package`."""
    found = []
    for module, targets in sorted(graph.items()):
        if module == package or module.startswith(f"{package}."):
            continue
        for target in sorted(targets):
            if target.startswith(f"{package}._"):
                found.append(f"{module} imports {target}")
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE)


@pytest.fixture(scope="module")
def layers() -> list[set[str]]:
    return layer_order(ARCHITECTURE.read_text("utf-8"))


def test_no_module_imports_itself_back_through_others(graph):
    found = {frozenset(circle): " -> ".join(circle) for circle in circles(graph)}
    new = [text for members, text in found.items() if members not in KNOWN_CIRCLES]
    assert not new, (
        "import circles (move what both modules need to the one below, see docs/architecture.md):\n"
        + ("\n".join(new))
    )
    gone = [sorted(members) for members in KNOWN_CIRCLES if members not in found]
    assert not gone, f"these circles are gone: take them out of KNOWN_CIRCLES: {gone}"


def test_every_room_has_one_place_in_the_layer_order(graph, layers):
    placed = [name for rooms in layers for name in rooms]
    assert len(placed) == len(set(placed)), (
        f"a room is listed twice in docs/architecture.md: {sorted(placed)}"
    )
    rooms = {room(module) for module in graph}
    assert rooms - set(placed) == set(), "rooms docs/architecture.md's layer order does not place"
    assert set(placed) - rooms == set(), "rooms docs/architecture.md's layer order lists that no longer exist"


def test_no_room_imports_one_above_it_or_beside_it(graph, layers):
    assert upward_imports(graph, layers) == []


def test_no_module_outside_the_server_imports_its_private_modules(graph):
    assert private_imports(graph, "agent_env.server") == [], (
        "a surface takes what it needs from agent_env.server.surface (the seam), and other rooms from the server's "
        "public modules (errors, limits, app, client) or its package; make what is missing public there"
    )


def test_the_private_import_check_finds_an_import_of_a_private_module_from_outside_only():
    graph = {
        "agent_env.server": {"agent_env.server._serve"},
        "agent_env.server._http": {"agent_env.server._json"},
        "agent_env.server.surface": {"agent_env.server._http"},
        "agent_env.openenv.server._socket": {"agent_env.server._json", "agent_env.server.surface"},
        "agent_env.cli.serve": {
            "agent_env.server",
            "agent_env.server.limits",
            "agent_env.server._serve.inner",
        },
        "agent_env.serverless": {"agent_env.server._serve"},
    }
    assert private_imports(graph, "agent_env.server") == [
        "agent_env.cli.serve imports agent_env.server._serve.inner",
        "agent_env.openenv.server._socket imports agent_env.server._json",
        "agent_env.serverless imports agent_env.server._serve",
    ]


def test_the_circle_check_finds_and_names_a_circle_in_a_small_graph():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}}
    assert circles(graph) == [["a", "b", "c", "a"], ["e", "e2", "e"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_layer_check_finds_an_import_upward_and_one_between_peers():
    graph = {
        "agent_env.schema._x": {"agent_env.session"},
        "agent_env.session": {"agent_env.schema._x"},
        "agent_env.mcp": {"agent_env.ray"},
        "agent_env.ray": set(),
    }
    assert upward_imports(graph, [{"schema"}, {"session"}, {"mcp", "ray"}]) == [
        "agent_env.mcp (mcp) imports agent_env.ray (ray)",
        "agent_env.schema._x (schema) imports agent_env.session (session)",
    ]


def test_imports_in_functions_under_type_checking_and_relative_ones_all_count(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from pkg.sub import thing\n")
    (package / "sub" / "__init__.py").write_text("thing = 1\n")
    (package / "low.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import High\n"
    )
    (package / "high.py").write_text("def build():\n    from . import low\n    import pkg.sub\n")
    (package / "sub" / "deep.py").write_text(
        "from ..low import x\nfrom .. import high\nfrom pkg import sub\n"
    )
    assert import_graph(package) == {
        "pkg": {"pkg.sub"},
        "pkg.sub": set(),
        "pkg.low": {"pkg.high"},
        "pkg.high": {"pkg.low", "pkg.sub"},
        "pkg.sub.deep": {"pkg.low", "pkg.high", "pkg.sub"},
    }
    assert circles(import_graph(package)) == [["pkg.high", "pkg.low", "pkg.high"]]


def test_modules_named_in_strings_where_the_package_imports_by_name_count(tmp_path):
    package = tmp_path / "pkg"
    (package / "high").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "high" / "__init__.py").write_text("")
    (package / "high" / "thing.py").write_text("")
    (package / "low.py").write_text(
        "import importlib\nimport logging\n"
        '_LAZY = {"Thing": "pkg.high.thing"}\n'  # a lazy-export table with no TYPE_CHECKING copy
        'BUILT_IN = {"name": "pkg.high:Class", "other": "pkg.nowhere:Class"}\n'
        'logger = logging.getLogger("pkg.high")\n'  # a logger's name, not an import
        'def load():\n    return importlib.import_module("pkg")\n'
    )
    assert import_graph(package)["pkg.low"] == {"pkg.high.thing", "pkg.high", "pkg"}
    assert upward_imports(import_graph(package), [{"low"}, {"high"}, {"pkg"}]) == [
        "pkg.low (low) imports pkg (pkg)",
        "pkg.low (low) imports pkg.high (high)",
        "pkg.low (low) imports pkg.high.thing (high)",
    ]
