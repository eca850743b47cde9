"""Normalization keeps meaning: an instance is valid under the published (normalized) schema exactly when it is
valid under the schema it came from, for pydantic models built from drawn field types and for hand-written
schemas with `$ref`s, `$defs` and keywords beside the `$ref`s. Instances come from the original and the
normalized schema (hypothesis-jsonschema) and from random JSON; the reference `jsonschema` (2020-12) judges both schemas, and the
compiled jsonschema-rs validator the tools use must agree with it on the normalized one. A drawn schema that
normalization refuses as accepting nothing (a `$ref` to `const: 3` beside `"type": "object"`) must indeed hold a
subschema whose listed values it accepts none of."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator

from agent_env.schema import SchemaNormalizationError, check_schema, normalize, validator_for
from agent_env.schema._passes import inline_refs

from ._schemas import generation_schema
from ._strategies import JSON, handwritten_schemas, pydantic_schemas
from .conftest import PROPERTY, TRIED


def drawn_from(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Instances hypothesis-jsonschema draws from `schema`, or nothing if it cannot read it."""
    try:
        drawn = from_schema(generation_schema(schema))
        drawn.wrapped_strategy  # noqa: B018 (builds the lazy strategy now, so a schema it cannot read fails here)
    except Exception:  # it reads draft 7, not every 2020-12 schema
        return st.nothing()
    return drawn


def instances(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Instances drawn from the original schema and from the normalized one (what one side takes and the other
    refuses is the difference looked for), and random JSON."""
    try:
        normalized = drawn_from(normalize(schema))
    except SchemaNormalizationError:  # refused: `agree` checks why
        normalized = st.nothing()
    return st.one_of(drawn_from(schema), normalized, JSON)


def accepts_nothing_somewhere(schema: Any) -> bool:
    """Whether some subschema of `schema` lists values (`enum`, `const`) none of which it accepts."""
    if isinstance(schema, list):
        return any(accepts_nothing_somewhere(item) for item in schema)
    if not isinstance(schema, dict):
        return False
    listed = schema["enum"] if "enum" in schema else [schema["const"]] if "const" in schema else None
    if listed is not None and not any(Draft202012Validator(schema).is_valid(value) for value in listed):
        return True
    return any(accepts_nothing_somewhere(value) for value in schema.values())


def accepts_only_null_somewhere(schema: Any) -> bool:
    """Whether some subschema of `schema` has a `type` that allows null and more, and an `enum` of which it accepts
    only null, though it lists other values."""
    if isinstance(schema, list):
        return any(accepts_only_null_somewhere(item) for item in schema)
    if not isinstance(schema, dict):
        return False
    declared, listed = schema.get("type"), schema.get("enum")
    if isinstance(declared, list) and "null" in declared and len(declared) > 1 and isinstance(listed, list):
        accepted = [value for value in listed if Draft202012Validator({"type": declared}).is_valid(value)]
        if accepted and all(value is None for value in accepted) and len(accepted) < len(listed):
            return True
    return any(accepts_only_null_somewhere(value) for value in schema.values())


def agree(original: dict[str, Any], instance: Any, kind: str) -> None:
    try:
        normalized = normalize(original)
    except SchemaNormalizationError as refused:  # a drawn `$ref` to `const: 3` beside `"type": "object"`
        if "so it accepts only null" in str(refused):
            assert accepts_only_null_somewhere(inline_refs(original)), original
            TRIED[f"normalize/{kind}: refused, accepting only null"] += 1
            return
        assert "so no value is valid" in str(refused)
        assert accepts_nothing_somewhere(inline_refs(original)), original  # what the refusal says is true
        TRIED[f"normalize/{kind}: refused, accepting nothing"] += 1
        return
    check_schema(normalized)
    assert not accepts_only_null_somewhere(inline_refs(original)), original  # never published as null-only
    assert "$ref" not in repr(normalized) and "$defs" not in normalized and "definitions" not in normalized
    expected = Draft202012Validator(original).is_valid(instance)
    TRIED[f"normalize/{kind}: {'valid' if expected else 'invalid'} instances"] += 1
    assert Draft202012Validator(normalized).is_valid(instance) == expected, (original, normalized, instance)
    assert validator_for(normalized)._validator.is_valid(instance) == expected, (normalized, instance)


@PROPERTY
@given(data=st.data(), schema=pydantic_schemas())
def test_normalizing_a_pydantic_models_schema_keeps_what_is_valid(data, schema):
    for _ in range(3):
        agree(schema, data.draw(instances(schema)), "pydantic models")


@PROPERTY
@given(data=st.data(), schema=handwritten_schemas())
def test_normalizing_a_handwritten_schema_with_refs_keeps_what_is_valid(data, schema):
    for _ in range(3):
        agree(schema, data.draw(instances(schema)), "hand-written $ref schemas")


NEIGHBOURS = [
    (  # additionalProperties beside a $ref sees no properties: nothing may be sent
        {
            "$defs": {"P": {"type": "object", "properties": {"a": {}}}},
            "$ref": "#/$defs/P",
            "additionalProperties": False,
        },
        {"a": 1},
    ),
    (  # items beside a $ref applies to every item, not only those past the definition's prefixItems
        {
            "$defs": {"T": {"type": "array", "prefixItems": [{"type": "string"}]}},
            "$ref": "#/$defs/T",
            "items": {"type": "integer"},
        },
        ["a"],
    ),
    (  # maxContains beside a $ref has no contains beside it: it constrains nothing
        {"$defs": {"C": {"type": "array", "contains": {"const": 3}}}, "$ref": "#/$defs/C", "maxContains": 1},
        [3, 3],
    ),
    (  # then beside a $ref has no if beside it: it constrains nothing
        {"$defs": {"I": {"if": {"type": "integer"}}}, "$ref": "#/$defs/I", "then": {"minimum": 5}},
        1,
    ),
]


@pytest.mark.parametrize(("schema", "instance"), NEIGHBOURS)
def test_keywords_beside_a_ref_that_read_their_neighbours_keep_their_meaning(schema, instance):
    agree(schema, instance, "$ref neighbours")


TYPE_NAMES = ["string", "integer", "number", "boolean", "array", "object"]
TYPES = st.one_of(
    st.sampled_from(TYPE_NAMES),
    st.lists(st.sampled_from([*TYPE_NAMES, "null"]), min_size=1, max_size=3, unique=True),
)
ENUM_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.5, "a", "News", ""]), st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.sampled_from(["a"]), st.integers(0, 2), max_size=1),
)  # fmt: skip


@PROPERTY
@given(
    declared=TYPES,
    listed=st.lists(ENUM_VALUES, min_size=1, max_size=4),
    items=st.sampled_from([None, {"type": "string"}, {"type": "integer"}]),
    instance=st.one_of(ENUM_VALUES, JSON),
)
@example(
    declared=["array", "null"], listed=["Weather", "News", None], items={"type": "string"}, instance=None
)
def test_an_enum_beside_a_type_keeps_its_meaning_or_is_refused_saying_truly_why(
    declared, listed, items, instance
):
    # An enum with no value of its type accepts nothing, and one left with null alone of a nullable type that allows
    # more accepts only null: both are refused as mistakes (the second was published as null-only before);
    # otherwise what is published accepts exactly what the schema did.
    shape: dict[str, Any] = {"type": declared, "enum": listed}
    if items is not None and "array" in ([declared] if isinstance(declared, str) else declared):
        shape["items"] = items
    agree({"type": "object", "properties": {"x": shape}}, {"x": instance}, "enums")
