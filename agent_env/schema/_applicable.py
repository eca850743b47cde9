"""Drop what a schema's `type` rules out, which constrains nothing, and refuse a schema that accepts no value.

A keyword applies to instances of one JSON type: `minItems` to arrays, `minimum` to numbers. Beside a `type` that
allows no instance of that type (`{"type": "integer", "minItems": 5}`), it can never fail, so dropping it keeps what
the schema accepts; kept, it would be shown to the model as a constraint that nothing enforces. Likewise an `enum`
value of a type the `type` rules out can never be sent. A schema whose `enum` or `const` holds no value of its
`type` accepts nothing at all; that is always a mistake (`{"type": "boolean", "enum": ["True", "False"]}`), and no
repair can know which of the two was meant, so it is refused naming both.
"""

from __future__ import annotations

import json
from typing import Any

from agent_env.schema._check import schema_place
from agent_env.schema._describe import json_type, short
from agent_env.schema._errors import SchemaNormalizationError
from agent_env.schema._walk import Schema, Steps, map_subschemas_at

_ARRAY, _OBJECT, _STRING = frozenset({"array"}), frozenset({"object"}), frozenset({"string"})
_NUMBER = frozenset({"number", "integer"})
_APPLIES_TO = {
    **dict.fromkeys(
        (
            "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains",
            "minContains", "maxContains", "unevaluatedItems",
        ),
        _ARRAY,
    ),
    **dict.fromkeys(
        (
            "properties", "patternProperties", "additionalProperties", "required", "minProperties",
            "maxProperties", "dependentRequired", "dependentSchemas", "dependencies", "propertyNames",
            "unevaluatedProperties",
        ),
        _OBJECT,
    ),
    **dict.fromkeys(("minLength", "maxLength", "pattern"), _STRING),
    **dict.fromkeys(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"), _NUMBER),
}  # fmt: skip
"""The instance types each keyword constrains; instances of other types pass it."""


def drop_what_cannot_apply(schema: Schema) -> Schema:
    """`schema` without the keywords and `enum` values its `type` rules out, at every depth.

    Raises:
        SchemaNormalizationError: An `enum` or `const` holds no value of the `type` beside it; the message names
            the place and both.
    """
    return _drop(schema, ())


def _drop(schema: Schema, path: Steps) -> Schema:
    types = _types(schema.get("type"))
    if types is not None:
        schema = _kept(schema, types, path)
    return map_subschemas_at(schema, lambda sub, steps: _drop(sub, (*path, *steps)))


def _types(declared: Any) -> frozenset[str] | None:
    """The instance types a `type` value allows (`number` allows `integer`), or None when it says nothing."""
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return None
    allowed = set(names)
    if "number" in allowed:
        allowed.add("integer")
    return frozenset(allowed)


def _kept(schema: Schema, types: frozenset[str], path: Steps) -> Schema:
    kept: Schema = {}
    for keyword, value in schema.items():
        applies_to = _APPLIES_TO.get(keyword)
        if applies_to is not None and not applies_to & types:
            continue  # no instance of its type gets past `type`
        kept[keyword] = value
    if isinstance(kept.get("enum"), list):
        values = [value for value in kept["enum"] if _is_of(value, types)]
        if not values:
            raise SchemaNormalizationError(_accepts_nothing(path, "enum", kept["enum"], schema))
        kept["enum"] = values
    if "const" in kept and not _is_of(kept["const"], types):
        raise SchemaNormalizationError(_accepts_nothing(path, "const", kept["const"], schema))
    return kept


def _is_of(value: Any, types: frozenset[str]) -> bool:
    """Whether a JSON value is of one of `types`, as 2020-12 reads them (`1.0` is an integer, `true` is no number)."""
    kind = json_type(value)
    if kind == "number" and isinstance(value, float) and value.is_integer():
        kind = "integer"
    return kind in types


def _accepts_nothing(path: Steps, keyword: str, values: Any, schema: Schema) -> str:
    """The refusal of an `enum` or `const` with no value of its schema's `type`, with the fix its shape needs: an
    array's (or object's) values that fit its items (or one of its properties) belong there, where "give it the
    values' type" would turn a list parameter into a string one."""
    declared = schema["type"]
    listed = values if keyword == "enum" else [values]
    value_types = sorted({json_type(value) for value in listed})
    said_type = short(value_types[0] if len(value_types) == 1 else value_types)
    if keyword == "enum":
        holds = f"its enum {short(values)} holds no value"
    else:
        holds = f"its const {short(values)} is no value"
    problem = f"{schema_place(path)}: {holds} of its type {short(declared)}, so no value is valid; "
    types = _types(declared) or frozenset()
    scalar = all(not isinstance(value, list | dict) for value in listed)
    if scalar and "array" in types:
        return problem + _into_items(keyword, values, schema.get("items"), said_type)
    if scalar and "object" in types:
        moved = "the enum" if keyword == "enum" else "the const"
        return problem + (
            f'if it takes one of these values itself, give it "type": {said_type}; if it is an object, move '
            f"{moved} to the property it constrains"
        )
    if keyword == "enum":
        fix = f"enum values of type {short(declared)}"
    else:
        fix = f"a const of type {short(declared)}"
    which = "values" if keyword == "enum" else "value"
    return problem + f'give it "type": {said_type} (the type of its {which}), or {fix}'


def _into_items(keyword: str, values: Any, items: Any, said_type: str) -> str:
    """The fix of an array's enum (or const) of scalar values: they say what each item may be."""
    item_types = _types(items.get("type")) if isinstance(items, dict) else None
    listed = values if keyword == "enum" else [values]
    if item_types is not None and not all(_is_of(value, item_types) for value in listed):
        return (
            f"its items' type {short(items['type'])} holds none of them either: give the items the type of the "
            f'values ({said_type}) and move the {keyword} into "items", or {keyword} values that are arrays'
        )
    where = dict(items) if isinstance(items, dict) else {"type": json.loads(said_type)}
    moved = {**where, keyword: values}
    each = "is one of them" if keyword == "enum" else "is that value"
    return (
        f'the {keyword} says what each item may be: move it into "items" ("items": {short(moved)}), so that '
        f"the array stays an array and each item {each}"
    )
