"""Drop what a schema's `type` rules out, which constrains nothing, and refuse a schema that accepts no value.

A keyword applies to instances of one JSON type: `minItems` to arrays, `minimum` to numbers. Beside a `type` that
allows no instance of that type (`{"type": "integer", "minItems": 5}`), it can never fail, so dropping it keeps what
the schema accepts; kept, it would be shown to the model as a constraint that nothing enforces. Likewise an `enum`
value of a type the `type` rules out can never be sent. A schema whose `enum` or `const` holds no value of its
`type` accepts nothing at all; that is always a mistake (`{"type": "boolean", "enum": ["True", "False"]}`), and no
repair can know which of the two was meant, so it is refused naming both, with the fix its shape needs. So is one
whose `enum` keeps only `null` of a nullable type that allows more (`{"type": ["array", "null"], "items": {"type":
"string"}, "enum": ["Weather", "News", null]}`), a parameter that would take only null.
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
        dropped = [value for value in kept["enum"] if not _is_of(value, types)]
        if dropped and all(value is None for value in values) and types - {"null"}:
            raise SchemaNormalizationError(_accepts_only_null(path, kept["enum"], dropped, schema))
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
    """The refusal of an `enum` or `const` with no value of its schema's `type`, with the fix its shape needs."""
    declared = schema["type"]
    if keyword == "enum":
        holds = f"its enum {short(values)} holds no value"
    else:
        holds = f"its const {short(values)} is no value"
    problem = f"{schema_place(path)}: {holds} of its type {short(declared)}, so no value is valid; "
    listed = values if keyword == "enum" else [values]
    return problem + _fix(keyword, listed, listed, schema)


def _accepts_only_null(path: Steps, values: list[Any], dropped: list[Any], schema: Schema) -> str:
    """The refusal of an `enum` that keeps only null of a nullable type that allows more: its other values were
    meant for what the type allows besides null (an array's items, most often)."""
    declared = schema["type"]
    problem = (
        f"{schema_place(path)}: its enum {short(values)} holds no value of its type {short(declared)} but null, so "
        "it accepts only null; "
    )
    return problem + _fix("enum", dropped, values, schema, keep_null=True)


def _fix(
    keyword: str, listed: list[Any], values: list[Any], schema: Schema, *, keep_null: bool = False
) -> str:
    """What to do with an `enum` (or `const`) whose `listed` values are of no type the schema allows (`values`:
    the whole enum, null included, when `keep_null`): an array's values belong in its items, an object's in the
    property it constrains, where "give it the values' type" would turn a list or object parameter into a string
    one; a scalar's type is the values' type, or the values are the type's."""
    declared = schema["type"]
    allowed = (_types(declared) or frozenset()) - {"null"}
    fix = []
    if "array" in allowed:
        fix.append(_into_items(keyword, listed, schema.get("items")))
        if keep_null:
            fix[-1] += f"; leave null out of it: the type {short(declared)} allows null already"
    if "object" in allowed:
        moved = "the enum" if keyword == "enum" else "the const"
        fix.append(f"if it is an object, move {moved} to the property it constrains")
    own_type = _type_of(values)
    if allowed - {"array", "object"} or not fix:
        which = "values" if keyword == "enum" else "value"
        of_type = (
            f"enum values of type {short(declared)}"
            if keyword == "enum"
            else f"a const of type {short(declared)}"
        )
        return "; or ".join([*fix, f'give it "type": {own_type} (the type of its {which}), or {of_type}'])
    if "object" in allowed and "array" not in allowed:
        return f'if it takes one of these values itself, give it "type": {own_type}; ' + fix[0]
    return "; or ".join(fix)


def _type_of(values: list[Any]) -> str:
    """The JSON type of `values` as a `type` says it: one name, or a list of them."""
    kinds = sorted({json_type(value) for value in values})
    return short(kinds[0] if len(kinds) == 1 else kinds)


def _into_items(keyword: str, listed: list[Any], items: Any) -> str:
    """The fix of an array's enum (or const) of values that are no arrays: they say what each item may be, so they
    belong in `items`, with the enum `items` may have already (their common values, not one for the other)."""
    item_types = _types(items.get("type")) if isinstance(items, dict) else None
    fitting = [value for value in listed if item_types is None or _is_of(value, item_types)]
    others = [value for value in listed if item_types is not None and not _is_of(value, item_types)]
    if not fitting:
        return (
            f"its items' type {short(items['type'])} holds none of them either: give the items the type of the "
            f'values ({_type_of(listed)}) and move the {keyword} into "items", or {keyword} values that are arrays'
        )
    where = dict(items) if isinstance(items, dict) else {"type": json.loads(_type_of(listed))}
    own = _allowed_by(where)
    where.pop("enum", None)
    where.pop("const", None)
    if own is not None:
        common = [value for value in fitting if any(_same(value, other) for other in own)]
        said = (
            f"an enum {short(own)}" if isinstance(items.get("enum"), list) else f"the const {short(own[0])}"
        )
        held = f'"items" has {said} of its own'
        if not common:
            return (
                f"the {keyword} says what each item may be, but {held}, which shares no value with it: merge the "
                f'two into one enum in "items" as meant, and drop the {keyword} beside it'
            )
        moved = {**where, **_values_keyword(common, keyword)}
        return (
            f"the {keyword} says what each item may be, and {held}: an item can be only a value of both, so give "
            f'"items" those ("items": {short(moved)}) and drop the {keyword} beside it, or merge the two as meant'
        )
    moved = {**where, **_values_keyword(fitting, keyword)}
    each = "is one of them" if "enum" in moved else "is that value"
    advice = (
        f'the {keyword} says what each item may be: move it into "items" ("items": {short(moved)}), so that the '
        f"array stays an array and each item {each}"
    )
    if others:
        one = len(others) == 1
        advice += (
            f"; {short(others[0]) if one else short(others)} {'is' if one else 'are'} not of the items' type "
            f"{short(items['type'])}, so no item could be {'it' if one else 'them'}"
        )
    return advice


def _allowed_by(items: Schema) -> list[Any] | None:
    """The values an items schema's own `enum` or `const` allows, or None when it has neither."""
    if isinstance(items.get("enum"), list):
        return list(items["enum"])
    if "const" in items:
        return [items["const"]]
    return None


def _values_keyword(values: list[Any], keyword: str = "enum") -> dict[str, Any]:
    """`{"const": value}` for a const of one value, else `{"enum": values}`."""
    return {"const": values[0]} if keyword == "const" and len(values) == 1 else {"enum": values}


def _same(one: Any, other: Any) -> bool:
    """Whether two JSON values are equal as JSON Schema compares them (`1` is `1.0`, `true` is not `1`)."""
    if isinstance(one, bool) or isinstance(other, bool):
        return type(one) is type(other) and one == other
    if isinstance(one, int | float) and isinstance(other, int | float):
        return float(one) == float(other)
    return type(one) is type(other) and (
        json.dumps(one, sort_keys=True) == json.dumps(other, sort_keys=True)
        if isinstance(one, list | dict)
        else one == other
    )
