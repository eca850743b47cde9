"""Normalize a JSON Schema into the compact, self-contained form that tools publish, as a list of pure passes."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

Schema = dict[str, Any]

# Keywords whose value is a map of names to subschemas, a single subschema, or a list of subschemas.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_VALUES = (
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
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")

# Annotations that cost the model tokens and tell it nothing: pydantic's generated titles, OpenAPI's discriminator
# (its mapping points into `$defs`, which are gone once refs are inlined), and the dialect marker.
_NOISE = frozenset({"title", "discriminator", "$schema", "$id", "$comment", "examples"})

# The order keywords are written in, so a schema reads top-down: what it is, what it means, what it holds.
_ORDER = (
    "type",
    "description",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "anyOf",
    "oneOf",
    "allOf",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "default",
)
_RANK = {keyword: rank for rank, keyword in enumerate(_ORDER)}


class SchemaNormalizationError(ValueError):
    """A schema cannot be made self-contained (for example, a recursive type)."""


def map_subschemas(schema: Schema, function: Callable[[Schema], Schema]) -> Schema:
    """Return `schema` with `function` applied to each of its direct subschemas (not to `schema` itself)."""
    result: Schema = {}
    for keyword, value in schema.items():
        if keyword in _SCHEMA_MAPS and isinstance(value, dict):
            result[keyword] = {name: _apply(function, sub) for name, sub in value.items()}
        elif keyword in _SCHEMA_VALUES:
            result[keyword] = _apply(function, value)
        elif keyword in _SCHEMA_LISTS and isinstance(value, list):
            result[keyword] = [_apply(function, sub) for sub in value]
        else:
            result[keyword] = value
    return result


def _apply(function: Callable[[Schema], Schema], value: Any) -> Any:
    return function(value) if isinstance(value, dict) else value  # booleans are schemas too; leave them be


def inline_refs(schema: Schema) -> Schema:
    """Inline every local `$ref` (`#/$defs/...`) and drop `$defs`; refuse a recursive type, which cannot be inlined."""
    definitions = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    root = {keyword: value for keyword, value in schema.items() if keyword not in ("$defs", "definitions")}
    return _inline(root, definitions, ())


_ANNOTATIONS = frozenset(
    {"description", "default", "title", "examples", "deprecated", "readOnly", "writeOnly"}
)


def _inline(schema: Schema, definitions: dict[str, Schema], seen: tuple[str, ...]) -> Schema:
    reference = schema.get("$ref")
    if reference is None:
        return map_subschemas(schema, lambda sub: _inline(sub, definitions, seen))
    name = _definition_name(reference)
    if name not in definitions:
        raise SchemaNormalizationError(f"$ref {reference!r} does not point into this schema's $defs")
    if name in seen:
        raise SchemaNormalizationError(
            f"type {name!r} refers to itself, and a recursive type cannot be inlined into a self-contained schema; "
            "use a non-recursive type, or give the tool an explicit input_schema"
        )
    resolved = _inline(definitions[name], definitions, (*seen, name))
    siblings = {keyword: value for keyword, value in schema.items() if keyword != "$ref"}
    if _interfere(siblings.keys() - _ANNOTATIONS, resolved.keys()):  # keep both apart, as 2020-12 reads them
        return {"allOf": [resolved], **map_subschemas(siblings, lambda sub: _inline(sub, definitions, seen))}
    return {**resolved, **map_subschemas(siblings, lambda sub: _inline(sub, definitions, seen))}


# Keywords that read their neighbours in the same schema object: `additionalProperties` applies to the properties
# that `properties` and `patternProperties` beside it do not name, `items` to the items after `prefixItems`, and so
# on. Merged into one object with the referenced schema, a $ref's sibling would see the definition's neighbours.
_NEIGHBOURS = (
    frozenset({"properties", "patternProperties", "additionalProperties"}),
    frozenset({"prefixItems", "items"}),
    frozenset({"contains", "minContains", "maxContains"}),
    frozenset({"if", "then", "else"}),
)


def _interfere(constraining: Collection[str], resolved: Collection[str]) -> bool:
    """Whether a $ref's constraining siblings would change meaning if merged into the schema it resolves to."""
    if set(constraining) & set(resolved):
        return True
    return any(group & set(constraining) and group & set(resolved) for group in _NEIGHBOURS)


def _definition_name(reference: str) -> str:
    for prefix in ("#/$defs/", "#/definitions/"):
        if reference.startswith(prefix):
            return reference[len(prefix) :].replace("~1", "/").replace("~0", "~")
    raise SchemaNormalizationError(
        f"$ref {reference!r} is not local; only '#/$defs/...' references can be inlined"
    )


def drop_noise(schema: Schema) -> Schema:
    """Drop generated titles and other annotations that carry no meaning for the model."""
    kept = {keyword: value for keyword, value in schema.items() if keyword not in _NOISE}
    return map_subschemas(kept, drop_noise)


def order_keywords(schema: Schema) -> Schema:
    """Write keywords in a fixed, readable order: type first, then meaning, contents, bounds, default last."""
    ordered = dict(sorted(schema.items(), key=lambda item: (_RANK.get(item[0], len(_ORDER)), item[0])))
    return map_subschemas(ordered, order_keywords)


PASSES: tuple[Callable[[Schema], Schema], ...] = (inline_refs, drop_noise, order_keywords)


def normalize(schema: Schema) -> Schema:
    """Run every pass over `schema`: the compact, self-contained form that is published."""
    for normalization_pass in PASSES:
        schema = normalization_pass(schema)
    return schema
