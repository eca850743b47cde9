"""Hypothesis strategies for schemas: pydantic models built from drawn field types, hand-written schemas with
`$ref`s and keywords beside them, and random JSON."""

from __future__ import annotations

import itertools
from typing import Annotated, Any, Literal

from hypothesis import assume
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo

from agent_env.schema import SchemaNormalizationError, normalize
from agent_env.schema._describe import json_type

_names = itertools.count()

# Pydantic field types, drawn: numbers with bounds, strings with lengths and patterns, literals, booleans, and
# lists, tuples, optionals, unions and nested models of them.
INTEGERS = st.builds(
    lambda low, span: Annotated[int, Field(ge=low, le=low + span)], st.integers(-20, 20), st.integers(0, 40)
)
FLOATS = st.builds(
    lambda low, span, exclusive: (
        Annotated[float, Field(gt=low, lt=low + span)]
        if exclusive
        else Annotated[float, Field(ge=low, le=low + span)]
    ),
    st.integers(-20, 20),
    st.integers(1, 40),
    st.booleans(),
)
STRINGS = st.builds(
    lambda shortest, spread, pattern: Annotated[
        str, Field(min_length=shortest, max_length=shortest + spread, pattern=pattern)
    ],
    st.integers(0, 2),
    st.integers(0, 4),
    st.sampled_from([None, "^[a-c]*$", "^x", "[0-9]"]),
)
LITERALS = st.lists(
    st.one_of(st.sampled_from(["a", "b", "regup", ""]), st.integers(-2, 2)),
    min_size=1,
    max_size=3,
    unique=True,
).map(lambda values: Literal[tuple(values)])
LEAVES = st.one_of(INTEGERS, FLOATS, STRINGS, LITERALS, st.just(bool), st.just(str))


def model(fields: list[tuple[Any, bool, str | None]]) -> type[BaseModel]:
    """A fresh model with one field per (type, optional, description); an optional field defaults to None."""
    definitions: dict[str, Any] = {}
    for index, (annotation, optional, description) in enumerate(fields):
        if optional:
            definitions[f"f{index}"] = (
                annotation | None,
                FieldInfo(default=None, description=description),
            )
        else:
            definitions[f"f{index}"] = (annotation, FieldInfo(default=..., description=description))
    return create_model(f"Model{next(_names)}", **definitions)


FIELDS = st.tuples(st.booleans(), st.sampled_from([None, "What it is."]))


def containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        inner.map(lambda t: list[t]),
        st.builds(
            lambda t, low, spread: Annotated[list[t], Field(min_length=low, max_length=low + spread)],
            inner,
            st.integers(0, 2),
            st.integers(0, 3),
        ),
        inner.map(lambda t: t | None),
        st.tuples(inner, inner).map(lambda pair: pair[0] | pair[1]),
        st.tuples(inner, inner).map(lambda pair: tuple[pair[0], pair[1]]),
        st.lists(st.tuples(inner, *FIELDS.wrapped_strategy.element_strategies), min_size=1, max_size=3).map(
            model
        ),
        inner.map(lambda t: model([(t, False, None), (t, True, "Again.")])),  # one type used twice: one $def
    )


FIELD_TYPES = st.recursive(LEAVES, containers, max_leaves=6)


@st.composite
def pydantic_schemas(draw: st.DrawFn) -> dict[str, Any]:
    fields = draw(
        st.lists(
            st.tuples(FIELD_TYPES, st.booleans(), st.sampled_from([None, "Said."])), min_size=1, max_size=4
        )
    )
    try:
        return model(fields).model_json_schema()
    except Exception:  # a combination pydantic has no schema for is not what this tests
        assume(False)
        raise


# Hand-written schemas: definitions (some referring to others), used by `$ref`s with keywords beside them.
DEFINITIONS = [
    {"type": "integer", "minimum": 0, "maximum": 10},
    {"type": "string", "maxLength": 3, "title": "Short"},
    {"enum": ["a", "b", 1, None]},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]},
    {"type": "array", "contains": {"const": 3}, "minContains": 2},
    {"if": {"type": "integer"}, "then": {"minimum": 5}},
    {"const": 3, "description": "Three."},
]
SIBLINGS = [
    {},
    {"description": "Beside the ref."},
    {"title": "T", "default": 1},
    {"maximum": 3},
    {"type": "object"},
    {"additionalProperties": False},
    {"additionalProperties": {"type": "integer"}},
    {"properties": {"b": {"type": "string"}}},
    {"required": ["b"]},
    {"items": {"type": "string"}},
    {"minItems": 1, "maxItems": 2},
    {"maxContains": 1},
    {"else": {"type": "string"}},
    {"then": {"maximum": 6}},
]


@st.composite
def handwritten_schemas(draw: st.DrawFn) -> dict[str, Any]:
    keyword = draw(st.sampled_from(["$defs", "definitions"]))
    chosen = draw(st.lists(st.sampled_from(DEFINITIONS), min_size=1, max_size=4))
    definitions: dict[str, Any] = {}
    for index, definition in enumerate(chosen):
        if index and draw(st.booleans()):  # refer to an earlier one: nested, never recursive
            earlier = draw(st.integers(0, index - 1))
            definition = {"type": "array", "items": {"$ref": f"#/{keyword}/D{earlier}"}, "maxItems": 3}
        definitions[f"D{index}"] = definition

    def use() -> dict[str, Any]:
        target = draw(st.integers(0, len(chosen) - 1))
        return {"$ref": f"#/{keyword}/D{target}", **draw(st.sampled_from(SIBLINGS))}

    return {
        "type": "object",
        "properties": {
            "p": use(),
            "q": {"anyOf": [use(), {"type": "null"}]},
            "r": {"type": "array", "items": use()},
        },
        "required": draw(st.lists(st.sampled_from(["p", "q", "r"]), unique=True)),
        keyword: definitions,
        # a root $ref beside "type": "object" to a definition listing no object would accept nothing (refused)
        **(
            {"$ref": f"#/{keyword}/D0"}
            if draw(st.booleans()) and not {"enum", "const"} & chosen[0].keys()
            else {}
        ),
    }


def published_schemas() -> st.SearchStrategy[dict[str, Any]]:
    """Pydantic models' and hand-written schemas, normalized as a tool publishes them: those normalization refuses
    (a drawn `$ref` to `const: 3` beside `"type": "object"` accepts nothing) left out."""

    def normalizes(schema: dict[str, Any]) -> bool:
        try:
            normalize(schema)
        except SchemaNormalizationError:
            return False
        return True

    return (pydantic_schemas() | handwritten_schemas()).filter(normalizes).map(normalize)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-30, 30)
    | st.floats(-30, 30, allow_nan=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["f0", "f1", "f2", "a", "b", "p", "q", "r", "x1", "zz"]), inner, max_size=4
        )
    ),
    max_leaves=12,
)


# A `const` of every JSON type, at every depth, with and without a `type` and a `description` beside it, inside
# objects that have a description or none (an Excel server's `set_sheet_layout` holds `{"active": {"type":
# "boolean", "const": true}}` in an undescribed object).
CONST_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from([2.5, -0.25]),
    st.sampled_from(["", "on", "A1:B2"]),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), max_size=2),
)
CONST_DESCRIPTIONS = st.sampled_from([None, "Fixed."])


@st.composite
def const_leaf(draw: st.DrawFn) -> dict[str, Any]:
    value = draw(CONST_VALUES)
    leaf: dict[str, Any] = {"const": value}
    if draw(st.booleans()):
        leaf["type"] = "number" if isinstance(value, float) else json_type(value)
    description = draw(CONST_DESCRIPTIONS)
    return {**leaf, "description": description} if description else leaf


def _const_container(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def described(schema: dict[str, Any], description: str | None) -> dict[str, Any]:
        return {**schema, "description": description} if description else schema

    objects = st.builds(
        lambda properties, typed, description: described(
            {**({"type": "object"} if typed else {}), "properties": properties}, description
        ),
        st.dictionaries(st.sampled_from(["active", "layout", "mode", "cell"]), inner, min_size=1, max_size=3),
        st.booleans(),
        CONST_DESCRIPTIONS,
    )
    arrays = st.builds(
        lambda items, description: described({"type": "array", "items": items}, description),
        inner,
        CONST_DESCRIPTIONS,
    )
    return objects | arrays


@st.composite
def const_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """Input schemas holding `const`s (see `CONST_VALUES`), normalized as a tool publishes them."""
    properties = draw(
        st.dictionaries(
            st.sampled_from(["layout", "sheet", "flag"]),
            st.recursive(const_leaf(), _const_container, max_leaves=4),
            min_size=1,
            max_size=2,
        )
    )
    return normalize({"type": "object", "properties": properties})
