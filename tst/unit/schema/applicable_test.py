"""What a schema's `type` rules out (`agent_env/schema/_applicable.py`): keywords of other types and enum values of
other types are dropped with the meaning kept; an enum or const with no value of its type is refused naming both."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from agent_env.schema import SchemaNormalizationError, normalize, validator_for
from agent_env.schema._applicable import drop_what_cannot_apply

INSTANCES = [None, True, 0, 1, 1.0, 2.5, -3, "", "ab", "abcdef", [], [1, 2], [1, 2, 3, 4, 5, 6], {}, {"a": 1}]


def accepts_the_same(original: dict[str, Any], pruned: dict[str, Any]) -> None:
    for instance in INSTANCES:
        assert Draft202012Validator(pruned).is_valid(instance) == Draft202012Validator(original).is_valid(
            instance
        ), instance


def test_count_keywords_beside_an_integer_type_are_dropped_because_they_constrain_nothing():
    items = {"type": "integer", "minItems": 5, "maxItems": 100}  # issue 20, item 16: "5-100 items" was shown
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": items}}}
    pruned = drop_what_cannot_apply(schema)
    assert pruned["properties"]["xs"] == {"type": "array", "items": {"type": "integer"}}
    accepts_the_same(items, pruned["properties"]["xs"]["items"])


@pytest.mark.parametrize(
    ("schema", "kept"),
    [
        (
            {"type": "string", "minimum": 1, "maxLength": 3, "required": ["a"], "items": {}},
            {"type": "string", "maxLength": 3},
        ),
        (
            {"type": "integer", "minimum": 1, "pattern": "^a", "properties": {}},
            {"type": "integer", "minimum": 1},
        ),
        ({"type": "number", "multipleOf": 2, "uniqueItems": True}, {"type": "number", "multipleOf": 2}),
        ({"type": "array", "minItems": 2, "minLength": 1, "maximum": 3}, {"type": "array", "minItems": 2}),
        ({"type": "object", "required": ["a"], "minItems": 1}, {"type": "object", "required": ["a"]}),
        ({"type": "boolean", "minimum": 0, "format": "x"}, {"type": "boolean", "format": "x"}),
    ],
    ids=["string", "integer", "number", "array", "object", "format is kept (numbers have formats too)"],
)
def test_only_the_keywords_that_apply_to_the_type_are_kept(schema, kept):
    assert drop_what_cannot_apply(schema) == kept
    accepts_the_same(schema, kept)


@pytest.mark.parametrize(
    "schema",
    [
        {"minItems": 5, "minimum": 1},  # no type: each may apply
        {"type": ["integer", "array"], "minItems": 5, "minimum": 1},  # either type
        {"type": "integer", "maximum": 3},  # number keywords apply to integers
        {"anyOf": [{"type": "integer"}], "minItems": 2},  # the type is in a branch, not beside it
    ],
)
def test_a_keyword_stays_where_some_allowed_type_can_meet_it(schema):
    assert drop_what_cannot_apply(schema) == schema


def test_enum_values_the_type_rules_out_are_dropped():
    schema = {"type": "integer", "enum": [1, 2.0, 2.5, "1", True, None]}
    pruned = drop_what_cannot_apply(schema)
    assert pruned == {"type": "integer", "enum": [1, 2.0]}
    accepts_the_same(schema, pruned)


def test_an_enum_with_no_value_of_its_type_is_refused_naming_both():
    schema = {
        "type": "object",
        "properties": {"x": {"type": "boolean", "enum": ["True", "False", "dontcare"]}},
    }
    with pytest.raises(SchemaNormalizationError) as refused:
        normalize(schema)
    assert str(refused.value) == (
        'properties.x: its enum ["True", "False", "dontcare"] holds no value of its type "boolean", so no value is '
        'valid; give it "type": "string" (the type of its values), or enum values of type "boolean"'
    )


def test_a_const_not_of_its_type_is_refused_naming_both():
    schema = {"type": "object", "properties": {"n": {"anyOf": [{"type": ["integer", "null"], "const": "7"}]}}}
    with pytest.raises(SchemaNormalizationError) as refused:
        normalize(schema)
    assert str(refused.value) == (
        'properties.n.anyOf[0]: its const "7" is no value of its type ["integer", "null"], so no value is valid; '
        'give it "type": "string" (the type of its value), or a const of type ["integer", "null"]'
    )


@pytest.mark.parametrize(
    ("shape", "advice"),
    [
        (
            {"type": "array", "items": {"type": "string"}, "enum": ["Weather", "News"]},
            'the enum says what each item may be: move it into "items" ("items": {"type": "string", "enum": '
            '["Weather", "News"]}), so that the array stays an array and each item is one of them',
        ),
        (
            {"type": "array", "enum": ["Weather", "News"]},
            'the enum says what each item may be: move it into "items" ("items": {"type": "string", "enum": '
            '["Weather", "News"]}), so that the array stays an array and each item is one of them',
        ),
        (
            {"type": "array", "items": {"type": "string"}, "const": "News"},
            'the const says what each item may be: move it into "items" ("items": {"type": "string", "const": '
            '"News"}), so that the array stays an array and each item is that value',
        ),
        (
            {"type": "array", "items": {"type": "integer"}, "enum": ["Weather", "News"]},
            'its items\' type "integer" holds none of them either: give the items the type of the values ("string") '
            'and move the enum into "items", or enum values that are arrays',
        ),
        (
            {"type": "object", "properties": {"kind": {"type": "string"}}, "enum": ["Weather", "News"]},
            'if it takes one of these values itself, give it "type": "string"; if it is an object, move the enum to '
            "the property it constrains",
        ),
    ],
    ids=["array of strings", "array without items", "const on an array", "items of another type", "object"],
)
def test_an_enum_on_an_array_or_object_is_refused_with_the_fix_its_shape_needs(shape, advice):
    # Found in real function schemas ("intents": an array of strings with the enum beside "items"): "give it
    # \"type\": \"string\"" would turn a list parameter into a string one.
    with pytest.raises(SchemaNormalizationError) as refused:
        normalize({"type": "object", "properties": {"intents": shape}})
    said = str(refused.value)
    assert said.startswith("properties.intents: its ")
    assert said.endswith(advice)
    moved = re.search(r'"items": (\{.*\})\), so', said)
    if moved is not None:  # the schema the advice gives is one that publishes, a list of those values
        fixed = {key: value for key, value in shape.items() if key not in ("enum", "const", "items")}
        schema = normalize(
            {"type": "object", "properties": {"intents": {**fixed, "items": json.loads(moved[1])}}}
        )
        validator_for(schema).validate("t", {"intents": ["News"]})


@pytest.mark.parametrize(
    ("shape", "advice", "sent"),
    [
        (
            {"type": "array", "items": {"type": "object"}, "enum": [{"a": 1}]},
            'the enum says what each item may be: move it into "items" ("items": {"type": "object", "enum": '
            '[{"a": 1}]}), so that the array stays an array and each item is one of them',
            [{"a": 1}],
        ),
        (
            {"type": "array", "items": {"type": "object"}, "const": {"a": 1}},
            'the const says what each item may be: move it into "items" ("items": {"type": "object", "const": '
            '{"a": 1}}), so that the array stays an array and each item is that value',
            [{"a": 1}, {"a": 1}],
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["Weather", "News", "Sports"]}, "enum": ["News", "Tea"]},
            'the enum says what each item may be, and "items" has an enum ["Weather", "News", "Sports"] of its own: '
            'an item can be only a value of both, so give "items" those ("items": {"type": "string", "enum": '
            '["News"]}) and drop the enum beside it, or merge the two as meant',
            ["News"],
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["News", "Sports"]}, "const": "News"},
            'the const says what each item may be, and "items" has an enum ["News", "Sports"] of its own: an item '
            'can be only a value of both, so give "items" those ("items": {"type": "string", "const": "News"}) and '
            "drop the const beside it, or merge the two as meant",
            ["News"],
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["Sports"]}, "enum": ["Weather", "News"]},
            'the enum says what each item may be, but "items" has an enum ["Sports"] of its own, which shares no '
            'value with it: merge the two into one enum in "items" as meant, and drop the enum beside it',
            None,
        ),
        (
            {"type": "array", "items": {"type": "string"}, "enum": ["Weather", 3]},
            'the enum says what each item may be: move it into "items" ("items": {"type": "string", "enum": '
            '["Weather"]}), so that the array stays an array and each item is one of them; 3 is not of the items\' '
            'type "string", so no item could be it',
            ["Weather"],
        ),
        (
            {"type": "object", "enum": [[1, 2]]},
            'if it takes one of these values itself, give it "type": "array"; if it is an object, move the enum to '
            "the property it constrains",
            None,
        ),
    ],
    ids=[
        "objects on an array", "const object on an array", "items with an enum", "const and items' enum",
        "items' enum shares none", "some of another type", "array values on an object",
    ],
)  # fmt: skip
def test_an_enum_or_const_on_a_container_is_refused_with_advice_that_keeps_its_shape_and_its_items_enum(
    shape, advice, sent
):
    with pytest.raises(SchemaNormalizationError) as refused:
        normalize({"type": "object", "properties": {"xs": shape}})
    said = str(refused.value)
    assert said.startswith("properties.xs: its ")
    assert said.endswith(advice)
    moved = re.search(r'"items": (\{.*\})\)', said)
    if sent is not None:  # the advice gives a schema that publishes, an array of those values
        assert moved is not None
        fixed = {key: value for key, value in shape.items() if key not in ("enum", "const", "items")}
        schema = normalize({"type": "object", "properties": {"xs": {**fixed, "items": json.loads(moved[1])}}})
        validator_for(schema).validate("t", {"xs": sent})


def test_a_nullable_array_whose_enum_is_beside_its_items_is_refused_not_published_as_null_only():
    shape = {"type": ["array", "null"], "items": {"type": "string"}, "enum": ["Weather", "News", None]}
    with pytest.raises(SchemaNormalizationError) as refused:
        normalize({"type": "object", "properties": {"intents": shape}})
    assert str(refused.value) == (
        'properties.intents: its enum ["Weather", "News", null] holds no value of its type ["array", "null"] but '
        'null, so it accepts only null; the enum says what each item may be: move it into "items" ("items": '
        '{"type": "string", "enum": ["Weather", "News"]}), so that the array stays an array and each item is one '
        'of them; leave null out of it: the type ["array", "null"] allows null already'
    )
    fixed = {"type": ["array", "null"], "items": {"type": "string", "enum": ["Weather", "News"]}}
    validator = validator_for(normalize({"type": "object", "properties": {"intents": fixed}}))
    validator.validate("t", {"intents": ["News"]})
    validator.validate("t", {"intents": None})


@pytest.mark.parametrize(
    ("shape", "advice"),
    [
        (
            {"type": ["boolean", "null"], "enum": ["True", "False", None]},
            'give it "type": ["null", "string"] (the type of its values), or enum values of type ["boolean", "null"]',
        ),
        (
            {"type": ["object", "null"], "enum": ["a", None]},
            'if it takes one of these values itself, give it "type": ["null", "string"]; if it is an object, move '
            "the enum to the property it constrains",
        ),
    ],
    ids=["scalar", "object"],
)
def test_any_nullable_enum_left_with_null_alone_is_refused(shape, advice):
    with pytest.raises(SchemaNormalizationError) as refused:
        normalize({"type": "object", "properties": {"x": shape}})
    assert "so it accepts only null; " + advice in str(refused.value)


def test_a_nullable_enum_that_keeps_a_value_besides_null_drops_only_what_its_type_rules_out():
    assert drop_what_cannot_apply({"type": ["string", "null"], "enum": ["a", 1, None]}) == {
        "type": ["string", "null"],
        "enum": ["a", None],
    }
