"""Every tool of every shipped environment, called with arguments drawn from its published schema: what the schema
allows is accepted and reaches the tool's own checks; what breaks it is refused, naming the path, changing nothing.

The oracle for "valid" is the reference `jsonschema` implementation (2020-12), not the jsonschema-rs validator that
`Tool.bind` uses, so the two are checked against each other too. Arguments are drawn with hypothesis-jsonschema,
which reads draft 7: `generation_schema` rewrites the few 2020-12 keywords the published schemas use.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator

from agent_env.envs import ENVIRONMENTS, load_environment
from agent_env.envs.tau2 import Tau2Environment
from agent_env.envs.tau2.store import canonical
from agent_env.errors import ToolArgumentError, ToolError
from agent_env.schema import json_path
from agent_env.session import LocalProvider, LocalSession
from agent_env.tools import Tool

from ._schemas import generation_schema
from .conftest import PROPERTY, TRIED

TOOLS = [(environment, name) for environment in ENVIRONMENTS for name in load_environment(environment).tools]

Path = tuple[str | int, ...]


@cache
def strategy(environment: str, name: str) -> st.SearchStrategy[Any]:
    return from_schema(generation_schema(load_environment(environment).tools[name].input_schema))


@cache
def oracle(environment: str, name: str) -> Draft202012Validator:
    return Draft202012Validator(load_environment(environment).tools[name].input_schema)


@cache
def first_row(environment: str) -> dict[str, Any]:
    """The first row of the environment's train split (or of its only split, `base`, for τ²'s mock domain)."""
    provider = LocalProvider(load_environment(environment))
    try:
        return provider.dataset_rows("train")[0]
    except LookupError:
        return provider.dataset_rows("base")[0]


def running_session(environment: str) -> LocalSession:
    session = LocalSession(load_environment(environment)())
    session.reset(**first_row(environment))
    return session


def snapshot(environment: object) -> dict[str, Any]:
    """A deep copy of an environment's plain state (containers, numbers, strings), and the identity of every other
    attribute (a loaded bundle, a day: read-only objects that are replaced, not changed, when state moves).

    A τ²-bench environment's state is its databases and its conversation; its record of calls counts a refused call
    by design (tau2-bench ends an episode after too many failed calls, and matches actions against every call)."""
    if isinstance(environment, Tau2Environment):
        return {
            "db": {name: {key: canonical(table[key]) for key in table.changed()} for name, table in environment.db.tables.items()},
            "user_db": None if environment.user_db is None else environment.user_db.changed(),
            "chat": None if environment.chat is None else list(environment.chat.messages),
        }  # fmt: skip
    plain = (list, dict, tuple, set, str, int, float, bool, type(None))
    return {
        name: copy.deepcopy(value) if isinstance(value, plain) else ("object", id(value))
        for name, value in vars(environment).items()
    }


def nodes(value: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    """Every value inside `value` with its path, `value` itself first."""
    found = [(path, value)]
    if isinstance(value, dict):
        for key, item in value.items():
            found += nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += nodes(item, (*path, index))
    return found


def replaced(value: Any, path: Path, new: Any) -> Any:
    """A copy of `value` with the value at `path` replaced by `new`."""
    if not path:
        return new
    copied = copy.deepcopy(value)
    parent = copied
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = new
    return copied


def removed(value: Any, path: Path) -> Any:
    copied = copy.deepcopy(value)
    parent = copied
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    return copied


OTHER_TYPES: list[Any] = ["text", 7, 2.5, True, None, [], {}]


def json_kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


@st.composite
def mutated(draw: st.DrawFn, environment: str, name: str) -> tuple[str, Path, dict[str, Any]]:
    """Arguments drawn from the schema, then broken one way: (how, where, the broken arguments)."""
    arguments = draw(strategy(environment, name))
    assume(oracle(environment, name).is_valid(arguments))
    inner = nodes(arguments)[1:]
    candidates: dict[str, list[tuple[Path, Any]]] = {
        "wrong type": inner,
        "missing key": [
            ((*path, key), None)
            for path, value in nodes(arguments)
            if isinstance(value, dict)
            for key in value
        ],
        "out of range": [(p, v) for p, v in inner if isinstance(v, int | float) and not isinstance(v, bool)],
        "bad enum value": [(p, v) for p, v in inner if isinstance(v, str)],
        "unknown argument": [((key,), None) for key in ("__class__", "../../etc/passwd", "self")],
        "unknown property": [
            ((*path, key), None)
            for path, value in inner
            if isinstance(value, dict)
            for key in ("__class__", "zz", "Hours")
            if key not in value
        ],
    }
    how = draw(st.sampled_from(sorted(kind for kind, found in candidates.items() if found)))
    path, value = draw(st.sampled_from(candidates[how]))
    if how == "wrong type":
        broken = replaced(
            arguments,
            path,
            draw(st.sampled_from([v for v in OTHER_TYPES if json_kind(v) != json_kind(value)])),
        )
    elif how == "missing key":
        broken = removed(arguments, path)
    elif how == "out of range":
        offset = draw(st.sampled_from([10**6, -(10**6), 10**12]))
        broken = replaced(arguments, path, type(value)(value + offset))
    elif how == "bad enum value":
        broken = replaced(arguments, path, f"not-{value}-at-all")
    else:  # an unknown key, at the top level or in a nested object
        broken = replaced(arguments, path, 1)
    assume(not oracle(environment, name).is_valid(broken))  # every object is closed, so this rarely filters
    return how, path, broken


def named_paths(message: str) -> list[str]:
    """The paths a `ToolArgumentError` message names, one per problem line."""
    return [line[2:].partition(": ")[0] for line in message.splitlines()[1:] if line.startswith("- ")]


@pytest.mark.parametrize(("environment", "name"), TOOLS)
@PROPERTY
@given(data=st.data())
def test_arguments_drawn_from_the_schema_are_accepted_and_reach_the_tools_own_checks(environment, name, data):
    arguments = data.draw(strategy(environment, name))
    assume(oracle(environment, name).is_valid(arguments))  # hypothesis-jsonschema's own slips are not ours
    TRIED[f"{environment}/{name}: valid"] += 1
    tool: Tool = load_environment(environment).tools[name]
    tool.bind(arguments)  # a ToolArgumentError here is a schema the validator reads differently
    session = running_session(environment)
    try:
        session.call_tool(name, arguments)
    except ToolError as error:  # the tool's own rules may refuse it: never as bad arguments
        assert not isinstance(error, ToolArgumentError), str(error)


@pytest.mark.parametrize(("environment", "name"), TOOLS)
@settings(PROPERTY, max_examples=100)  # six ways of breaking a call share these
@given(data=st.data())
def test_arguments_broken_against_the_schema_are_refused_naming_the_path_and_change_nothing(
    environment, name, data
):
    how, path, broken = data.draw(mutated(environment, name))
    TRIED[f"{environment}/{name}: {how}"] += 1
    session = running_session(environment)
    before = snapshot(session.environment)
    with pytest.raises(ToolArgumentError) as refused:
        session.call_tool(name, broken)
    assert snapshot(session.environment) == before
    target = json_path(path)
    named = named_paths(str(refused.value))
    assert any(p == "(arguments)" or target == p or target.startswith((f"{p}.", f"{p}[")) for p in named), (
        f"{how} at {target}, but the message names {named}:\n{refused.value}"
    )
