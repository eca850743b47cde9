"""Explicit input schemas from issue 10 that crashed tool definition (TypeError, AttributeError, RecursionError) or
were refused in the metaschema's words, each with the place its refusal must name and words it must say.

A Python module rather than JSON because some of the inputs are not JSON: a property name that is not a string,
a set, NaN, and nesting too deep to write out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

SCHEMA_DEPTH = 100
"""The deepest nesting a schema may have (agent_env.schema.MAX_SCHEMA_DEPTH), pinned here so a change is seen."""

TYPES = '"array", "boolean", "integer", "null", "number", "object", "string"'


def nested_items(depth: int) -> dict[str, Any]:
    """An array schema whose `items` nest `depth` levels deep."""
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def chained_refs(length: int) -> dict[str, Any]:
    """`$defs` where each definition is an array of the next: shallow as written, `length` deep once inlined."""
    definitions: dict[str, Any] = {
        f"d{i}": {"type": "array", "items": {"$ref": f"#/$defs/d{i + 1}"}} for i in range(length)
    }
    definitions[f"d{length}"] = {"type": "integer"}
    return definitions


def doubling_refs(length: int) -> dict[str, Any]:
    """`$defs` where each definition uses the next one twice: 2**length subschemas once inlined."""
    definitions: dict[str, Any] = {
        f"d{i}": {
            "type": "array",
            "prefixItems": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}],
        }
        for i in range(length)
    }
    definitions[f"d{length}"] = {"type": "integer"}
    return definitions


@dataclass(frozen=True)
class Malformed:
    """A schema for a tool `f(self, n)` that must be refused with a `ToolDefinitionError` naming `place`."""

    label: str
    schema: Any
    place: str
    says: str


def _with_n(n: Any, **top: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"n": n}, "required": ["n"], "additionalProperties": False, **top}


MALFORMED = [
    Malformed(
        "required is true", {**_with_n({}), "required": True}, "required", "expected array; got boolean true"
    ),
    Malformed(
        "properties is null",
        {"type": "object", "properties": None, "additionalProperties": False},
        "properties",
        "expected object; got null",
    ),
    Malformed("$defs is a list", _with_n({}, **{"$defs": []}), "$defs", "expected object; got array []"),
    Malformed(
        "$ref is a number", _with_n({"$ref": 5}), "properties.n.$ref", "expected string; got integer 5"
    ),
    Malformed(
        "a property name that is not a string",
        _with_n({}) | {"properties": {"n": {}, 1: {"type": "integer"}}},
        "properties",
        "key 1 is not a string",
    ),
    Malformed(
        "items nested 246 levels deep",
        _with_n(nested_items(246)),
        "properties.n.items.items...",
        f"nested more than {SCHEMA_DEPTH} levels deep",
    ),
    Malformed(
        "items nested 10,000 levels deep",
        _with_n(nested_items(10_000)),
        "properties.n.items.items...",
        f"nested more than {SCHEMA_DEPTH} levels deep",
    ),
    Malformed(
        "a misspelt type",
        _with_n({"type": "strin"}),
        "properties.n.type",
        f'expected one of {TYPES}; got "strin"',
    ),
    Malformed(
        "a misspelt type in a list of types",
        _with_n({"type": ["string", "nul"]}),
        "properties.n.type[1]",
        f'expected one of {TYPES}; got "nul"',
    ),
    Malformed(
        "a pattern that is no regex",
        _with_n({"type": "string", "pattern": "("}),
        "properties.n.pattern",
        '"(" is not a "regex"',
    ),
    Malformed("a set", _with_n({"enum": {1, 2}}), "properties.n.enum", "set is not a JSON value"),
    Malformed(
        "NaN",
        _with_n({"type": "number", "maximum": math.nan}),
        "properties.n.maximum",
        "expected a finite number",
    ),
    Malformed(
        "a ref to nowhere",
        _with_n({"$ref": "#/$defs/Missing"}),
        "properties.n",
        "does not point into this schema's $defs",
    ),
    Malformed(
        "refs that nest past the limit once inlined",
        _with_n({"$ref": "#/$defs/d0"}, **{"$defs": chained_refs(SCHEMA_DEPTH + 5)}),
        "properties.n.items.items...",
        f"nested more than {SCHEMA_DEPTH} levels deep once its $refs are inlined",
    ),
    Malformed(
        "refs that only lead to refs, past the limit",
        _with_n(
            {"$ref": "#/$defs/d0"},
            **{
                "$defs": {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(SCHEMA_DEPTH + 5)}
                | {f"d{SCHEMA_DEPTH + 5}": {"type": "integer"}}
            },
        ),
        "properties.n",
        f"$refs lead to $refs more than {SCHEMA_DEPTH} deep",
    ),
    Malformed(
        "a ref to a definition that is no schema",
        _with_n({"$ref": "#/definitions/A"}, definitions={"A": 5}),
        "definitions.A",
        "expected boolean or object; got integer 5",
    ),
    Malformed(
        "refs that double at every level",
        _with_n({"$ref": "#/$defs/d0"}, **{"$defs": doubling_refs(40)}),
        "properties.n",
        "subschemas once its $refs are inlined",
    ),
]
"""Each one is refused at class definition with `tool 'f': ...`, naming `place` and saying `says`."""

NOT_SCHEMAS: list[Any] = [[1], "object", True, 3]
"""Values passed as `input_schema` that are not a schema object at all."""

SEVERAL_PROBLEMS = {
    "type": "object",
    "properties": {"a": {"type": "strin"}, "b": {"type": "integr"}, "c": {"minimum": "0"}},
    "required": "a",
    "additionalProperties": False,
}
"""A schema with four problems, all of which one refusal names."""

NOT_JSON_AND_INVALID = {
    "type": "object",
    "properties": {"a": {"type": "strin"}, "b": {"maximum": math.nan}},
    "required": True,
}
"""A value that is not JSON beside two metaschema problems: one refusal names all three, the first one first."""

LONG_NAMES = {
    "type": "object",
    "properties": {f"k{i}" * 20_000: {"type": "strin"} for i in range(20)},
    "additionalProperties": False,
}
"""Twenty misspelt types under property names of 40,000 to 60,000 characters: the refusal stays short."""

OUT_OF_ORDER_NAMES = {"type": "object", "properties": {f"p{i}": {"type": "strin"} for i in range(12)}}
"""Problems at p0 ... p11: listed as the schema reads (p0, p1, p2, ...), not as strings sort (p0, p1, p10, ...)."""
