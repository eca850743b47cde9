"""Authoring, for drawn inputs: a tool typed with drawn pydantic models receives every key its published schema
lets through, and an unknown key in any of its objects is refused naming the path (never dropped); and any
schema-shaped value given as an explicit `input_schema` is either published or refused with `ToolDefinitionError`,
never a crash."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator

from agent_env import Environment, ToolArgumentError, ToolDefinitionError, tool
from agent_env.schema import json_path
from agent_env.tools import Tool

from ._schemas import generation_schema
from ._strategies import FIELD_TYPES, JSON, model
from .conftest import PROPERTY, TRIED

Path = tuple[str | int, ...]


def typed_tool(argument: Any) -> Tool:
    def take(self, a):
        return ""

    take.__annotations__ = {"a": argument, "return": str}  # this module's annotations are strings
    return type("Typed", (Environment,), {"take": tool(take)}).tools["take"]


def objects_in(value: Any, path: Path = ()) -> list[Path]:
    """The path of every object inside `value` (`value` itself included)."""
    found = [path] if isinstance(value, dict) else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += objects_in(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += objects_in(item, (*path, index))
    return found


def dumped_keys_cover(sent: Any, received: Any) -> bool:
    """Whether every key of every object in `sent` is in the matching object of `received` (its JSON dump)."""
    if isinstance(sent, dict) and isinstance(received, dict):
        return all(key in received and dumped_keys_cover(sent[key], received[key]) for key in sent)
    if isinstance(sent, list) and isinstance(received, list) and len(sent) == len(received):
        return all(dumped_keys_cover(a, b) for a, b in zip(sent, received, strict=True))
    return True  # a union may turn a value into another shape; the keys of objects are what this checks


def with_key(value: Any, path: Path, key: str) -> Any:
    if not path:
        return {**value, key: 1}
    if isinstance(value, dict):
        return {**value, path[0]: with_key(value[path[0]], path[1:], key)}
    return [with_key(item, path[1:], key) if index == path[0] else item for index, item in enumerate(value)]


@PROPERTY
@given(
    data=st.data(),
    fields=st.lists(st.tuples(FIELD_TYPES, st.booleans(), st.none()), min_size=1, max_size=3),
)
def test_every_key_the_published_schema_lets_through_reaches_the_tool_and_others_are_refused(data, fields):
    try:
        argument = model(fields)
        published = typed_tool(argument)
    except ToolDefinitionError:  # a combination pydantic has no schema for is not what this tests
        assume(False)
        raise
    try:
        arguments = data.draw(from_schema(generation_schema(published.input_schema)))
    except Exception:  # hypothesis-jsonschema reads draft 7, not every 2020-12 schema
        assume(False)
        raise
    assume(Draft202012Validator(published.input_schema).is_valid(arguments))
    received = published.bind(arguments)["a"].model_dump(mode="json", by_alias=True)
    assert dumped_keys_cover(arguments["a"], received), (arguments, received)
    TRIED["authoring/typed tools: valid"] += 1

    path = data.draw(st.sampled_from(objects_in(arguments)))
    broken = with_key(arguments, path, "zz_unknown")
    try:
        published.bind(broken)
    except ToolArgumentError as error:
        named = [line[2:].partition(": ")[0] for line in str(error).splitlines()[1:]]
        target = json_path((*path, "zz_unknown"))
        assert any(p == "(arguments)" or target == p or target.startswith((f"{p}.", f"{p}[")) for p in named)
    else:
        raise AssertionError(f"an unknown key at {json_path(path)} was accepted: {broken}")
    TRIED["authoring/typed tools: an unknown key"] += 1


KEYWORDS = [
    "type", "properties", "items", "required", "$ref", "$defs", "anyOf", "additionalProperties", "enum",
    "minimum", "pattern", "prefixItems", "patternProperties", "const", "default", "not",
]  # fmt: skip
SCHEMA_LIKE = st.recursive(
    JSON | st.sampled_from(["#/$defs/a", "#/$defs/b", "#", "http://x/y", "string", "object", "strin", "("]),
    lambda inner: (
        st.dictionaries(st.sampled_from([*KEYWORDS, "a", "b", "n"]), inner, max_size=5)
        | st.lists(inner, max_size=3)
    ),
    max_leaves=20,
)


@PROPERTY
@given(schema=st.dictionaries(st.sampled_from(KEYWORDS), SCHEMA_LIKE, max_size=6), parameters=st.booleans())
def test_any_schema_shaped_value_is_published_or_refused_with_a_tool_definition_error(schema, parameters):
    def n_tool(self, n=None):
        return ""

    def bare(self):
        return ""

    explicit = {"type": "object", "additionalProperties": False, **schema}
    try:
        type(
            "Explicit",
            (Environment,),
            {"f": tool(name="f", input_schema=explicit)(n_tool if parameters else bare)},
        )
    except ToolDefinitionError as error:
        assert str(error).startswith("tool 'f'")
        TRIED["authoring/schema-shaped values: refused"] += 1
    else:
        TRIED["authoring/schema-shaped values: published"] += 1
