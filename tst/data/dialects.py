"""Hand-written input schemas in the older JSON Schema dialects, one per construct whose meaning differs from
2020-12's, for what the real servers' listings (`tst/data/mcp/*.json`, all plain draft-07 or 2020-12) do not use:
each with the 2020-12 schema it must normalize to, and instances that tell a right upgrade from a wrong one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DRAFT_04 = "http://json-schema.org/draft-04/schema#"
DRAFT_06 = "http://json-schema.org/draft-06/schema#"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2019_09 = "https://json-schema.org/draft/2019-09/schema"


@dataclass(frozen=True)
class Declared:
    """A tool's input schema in the dialect its `$schema` declares.

    Attributes:
        label: The construct it holds.
        schema: The schema as declared.
        normalized: What `normalize` must make of it (2020-12, no `$schema`).
        accepted: Arguments its own dialect accepts, which a wrong upgrade would refuse.
        refused: Arguments its own dialect refuses, which a wrong upgrade would accept.
    """

    label: str
    schema: dict[str, Any]
    normalized: dict[str, Any]
    accepted: list[Any] = field(default_factory=list)
    refused: list[Any] = field(default_factory=list)


def _tool(dialect: str, **properties: Any) -> dict[str, Any]:
    return {"$schema": dialect, "type": "object", "properties": properties}


DECLARED = [
    Declared(
        "draft-07 tuple items, no more items",
        _tool(DRAFT_07, point={"type": "array", "items": [{"type": "number"}, {"type": "string"}], "additionalItems": False}),
        {"type": "object", "properties": {"point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}], "items": False}}},
        accepted=[{"point": [1, "a"]}, {"point": [1]}],
        refused=[{"point": [1, "a", 2]}, {"point": ["a"]}],
    ),
    Declared(
        "draft-07 tuple items, then integers",
        _tool(DRAFT_07, point={"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}}),
        {"type": "object", "properties": {"point": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}}}},
        accepted=[{"point": ["a", 1, 2]}],
        refused=[{"point": ["a", "b"]}, {"point": [1]}],
    ),
    Declared(
        "draft-07 tuple items and nothing said of more",
        _tool(DRAFT_07, pair={"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}),
        {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}}},
        accepted=[{"pair": ["a", 1, None, {}]}],
        refused=[{"pair": [1]}],
    ),
    Declared(
        "draft-07 additionalItems beside one items schema constrains nothing",
        _tool(DRAFT_07, ns={"type": "array", "items": {"type": "integer"}, "additionalItems": False}),
        {"type": "object", "properties": {"ns": {"type": "array", "items": {"type": "integer"}}}},
        accepted=[{"ns": [1, 2, 3]}],
        refused=[{"ns": ["a"]}],
    ),
    Declared(
        "draft-07 dependencies: names and a schema",
        {
            "$schema": DRAFT_07,
            "type": "object",
            "properties": {"card": {"type": "string"}, "billing": {"type": "string"}, "cvc": {"type": "integer"}},
            "dependencies": {"card": ["billing"], "cvc": {"required": ["card"]}},
        },
        {
            "type": "object",
            "properties": {"card": {"type": "string"}, "billing": {"type": "string"}, "cvc": {"type": "integer"}},
            "dependentRequired": {"card": ["billing"]},
            "dependentSchemas": {"cvc": {"required": ["card"]}},
        },
        accepted=[{"card": "x", "billing": "y"}, {"billing": "y"}, {"cvc": 1, "card": "x", "billing": "y"}],
        refused=[{"card": "x"}, {"cvc": 1}],
    ),
    Declared(
        "draft-07 keywords beside a $ref are ignored, but for annotations",
        {
            "$schema": DRAFT_07,
            "type": "object",
            "properties": {"n": {"$ref": "#/definitions/N", "maximum": 3, "type": "string", "description": "How many."}},
            "definitions": {"N": {"type": "integer", "minimum": 0}},
        },
        {"type": "object", "properties": {"n": {"type": "integer", "description": "How many.", "minimum": 0}}},
        accepted=[{"n": 10}],
        refused=[{"n": -1}, {"n": "a"}],
    ),
    Declared(
        "draft-07 root $ref beside its definitions (zod-to-json-schema's named form)",
        {
            "$schema": DRAFT_07,
            "$ref": "#/definitions/Args",
            "definitions": {
                "Args": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}
            },
        },
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False},
        accepted=[{"a": "x"}],
        refused=[{}, {"a": "x", "b": 1}],
    ),
    Declared(
        "draft-07 keywords it does not know constrain nothing",
        _tool(
            DRAFT_07,
            xs={"type": "array", "prefixItems": [{"type": "string"}], "minContains": 2, "contains": {"type": "integer"}},
            o={"type": "object", "dependentRequired": {"a": ["b"]}, "unevaluatedProperties": False},
        ),
        {
            "type": "object",
            "properties": {"xs": {"type": "array", "contains": {"type": "integer"}}, "o": {"type": "object"}},
        },
        accepted=[{"xs": [1, 1]}, {"xs": [1]}, {"o": {"a": 1, "z": 2}}],
        refused=[{"xs": ["a"]}],
    ),
    Declared(
        "draft-07 property names that are keywords stay names",
        _tool(DRAFT_07, **{"$ref": {"type": "string"}, "items": {"type": "array", "items": [{"type": "string"}]}, "dependencies": {"type": "integer"}}),
        {
            "type": "object",
            "properties": {
                "$ref": {"type": "string"},
                "items": {"type": "array", "prefixItems": [{"type": "string"}]},
                "dependencies": {"type": "integer"},
            },
        },
        accepted=[{"$ref": "a", "items": ["a", 1], "dependencies": 1}],
        refused=[{"$ref": 1}, {"items": [1]}],
    ),
    Declared(
        "draft-06 if, then and else constrain nothing",
        _tool(DRAFT_06, n={"type": "integer", "if": {"minimum": 0}, "then": {"maximum": 5}, "else": False}),
        {"type": "object", "properties": {"n": {"type": "integer"}}},
        accepted=[{"n": 10}, {"n": -3}],
        refused=[{"n": "a"}],
    ),
    Declared(
        "draft-04 boolean exclusive bounds",
        _tool(
            DRAFT_04,
            low={"type": "number", "minimum": 0, "exclusiveMinimum": True},
            high={"type": "number", "maximum": 5, "exclusiveMaximum": False},
        ),
        {"type": "object", "properties": {"low": {"type": "number", "exclusiveMinimum": 0}, "high": {"type": "number", "maximum": 5}}},
        accepted=[{"low": 0.5, "high": 5}],
        refused=[{"low": 0}, {"high": 5.5}],
    ),
    Declared(
        "draft-04 id, and const and contains, which it does not know",
        {
            "$schema": DRAFT_04,
            "id": "https://example.com/args",
            "type": "object",
            "properties": {"mode": {"type": "string", "const": "a"}, "xs": {"type": "array", "contains": {"type": "string"}}},
        },
        {"type": "object", "properties": {"mode": {"type": "string"}, "xs": {"type": "array"}}},
        accepted=[{"mode": "b", "xs": [1]}],
        refused=[{"mode": 1}],
    ),
    Declared(
        "2019-09 tuple items, and keywords beside a $ref that apply",
        {
            "$schema": DRAFT_2019_09,
            "type": "object",
            "properties": {
                "pair": {"type": "array", "items": [{"type": "string"}], "additionalItems": False},
                "n": {"$ref": "#/$defs/N", "maximum": 3},
            },
            "$defs": {"N": {"type": "integer"}},
        },
        {
            "type": "object",
            "properties": {
                "pair": {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
                "n": {"type": "integer", "maximum": 3},
            },
        },
        accepted=[{"pair": ["a"], "n": 3}],
        refused=[{"pair": ["a", "b"]}, {"n": 4}],
    ),
]  # fmt: skip

SPELLINGS = [
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft-07/schema#",
]
"""Ways servers write the draft-07 URI, all read as draft-07."""

UNKNOWN = [
    "http://json-schema.org/draft-03/schema#",
    "https://json-schema.org/schema",
    "https://example.com/my-metaschema",
    "draft-07",
]
"""`$schema` values that name no dialect agent_env reads."""
