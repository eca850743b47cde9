"""Walk a 2020-12 schema's subschemas: the one traversal every normalization pass builds on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Schema = dict[str, Any]
Steps = tuple[str | int, ...]

# Keywords whose value is a map of names to subschemas, a single subschema, or a list of subschemas.
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_VALUES = (
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def map_subschemas(schema: Schema, function: Callable[[Schema], Schema]) -> Schema:
    """Return `schema` with `function` applied to each of its direct subschemas (not to `schema` itself)."""
    return map_subschemas_at(schema, lambda subschema, _: function(subschema))


def map_subschemas_at(schema: Schema, function: Callable[[Schema, Steps], Schema]) -> Schema:
    """`map_subschemas`, telling `function` where each subschema is: `("properties", "n")`, `("anyOf", 0)`."""
    result: Schema = {}
    for keyword, value in schema.items():
        if keyword in SCHEMA_MAPS and isinstance(value, dict):
            result[keyword] = {name: _apply(function, sub, (keyword, name)) for name, sub in value.items()}
        elif keyword in SCHEMA_VALUES:
            result[keyword] = _apply(function, value, (keyword,))
        elif keyword in SCHEMA_LISTS and isinstance(value, list):
            result[keyword] = [_apply(function, sub, (keyword, index)) for index, sub in enumerate(value)]
        else:
            result[keyword] = value
    return result


def _apply(function: Callable[[Schema, Steps], Schema], value: Any, steps: Steps) -> Any:
    # Booleans are schemas too; leave them be.
    return function(value, steps) if isinstance(value, dict) else value
