"""Schema variants for the lossless verdict (`agent_env/training/keywords.py`): each keyword removed or changed."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest

from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.training.keywords import MARK, Occurrence, changed, is_default, occurrences, without

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "hours": {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer", "minimum": 1}}]
        },
        "mw": {"type": "number", "minimum": 0},
    },
    "required": ["hours"],
}


def occurrence(label: str, schema: dict[str, Any] = SCHEMA) -> Occurrence:
    return next(found for found in occurrences(schema) if found.label() == label)


def test_occurrences_walk_every_subschema_depth_first_and_skip_the_implied_root_type():
    labels = [found.label() for found in occurrences(SCHEMA)]
    # A keyword comes before what lies under it, so what lies under a lost keyword can be skipped.
    assert labels == [
        "properties", "required", "hours.anyOf", "hours.anyOf[0].type", "hours.anyOf[1].type",
        "hours.anyOf[1].items", "hours.anyOf[1][].type", "hours.anyOf[1][].minimum", "mw.type", "mw.minimum",
    ]  # fmt: skip
    assert Occurrence("maxItems", ("properties", "items", "items")).label() == "items[].maxItems"


def test_without_removes_one_keyword_and_leaves_the_schema_it_came_from_alone():
    assert "minimum" not in without(SCHEMA, occurrence("mw.minimum"))["properties"]["mw"]
    assert SCHEMA["properties"]["mw"]["minimum"] == 0


@pytest.mark.parametrize(
    ("label", "path", "value", "evidence"),
    [
        ("mw.minimum", ("properties", "mw", "minimum"), 7, "7"),
        ("mw.type", ("properties", "mw", "type"), "boolean", "boolean"),
        ("properties", ("properties", "qz7"), {"type": "string"}, "qz7"),
        ("required", ("required",), ["hours", "mw"], None),  # the optional property becomes required
    ],
)
def test_a_changed_keyword_has_a_new_value_that_can_be_found_in_a_prompt(label, path, value, evidence):
    change = changed(SCHEMA, occurrence(label))
    assert change is not None
    holder: Any = change.schema
    for step in path:
        holder = holder[step]
    assert holder == value
    assert change.evidence == evidence


def test_every_change_of_every_desk_keyword_is_still_a_valid_schema():
    for tool in GridSimDesk.tools.published:
        for found in occurrences(tool["inputSchema"]):
            change = changed(tool["inputSchema"], found)
            if change is not None:
                jsonschema_rs.meta.validate(change.schema)
                assert change.evidence is None or change.evidence in str(change.schema), found.label()


def test_keywords_that_only_hold_subschemas_are_changed_through_their_own_keywords():
    assert changed(SCHEMA, occurrence("hours.anyOf")) is None
    assert changed(SCHEMA, occurrence("hours.anyOf[1].items")) is None


def test_strings_get_the_mark_and_booleans_flip():
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": "^a", "default": "b"}}}
    assert (
        changed(schema, occurrence("x.pattern", schema)).schema["properties"]["x"]["pattern"] == "^a" + MARK
    )
    closed = {"type": "object", "properties": {}, "additionalProperties": False}
    flipped = changed(closed, Occurrence("additionalProperties", ()))
    assert flipped is not None and flipped.schema["additionalProperties"] is True and flipped.evidence is None


def test_keywords_that_say_what_leaving_them_out_says_are_defaults():
    schema = {
        "type": "object",
        "properties": {"p": {"type": "string", "enum": ["a", "b"]}, "q": {"type": "integer", "enum": ["a"]}},
        "required": [],
        "additionalProperties": True,
    }
    assert is_default(Occurrence("required", ()), schema)
    assert is_default(Occurrence("additionalProperties", ()), schema)
    assert is_default(Occurrence("type", ("properties", "p")), schema)  # a string enum says "string" already
    assert not is_default(Occurrence("type", ("properties", "q")), schema)
