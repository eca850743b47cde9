"""The lowerings (`agent_env/training/families/`): what each keeps, and the fixed words it says the rest in."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_env.training.families import FAMILIES, family_of, gemma4, gptoss
from agent_env.training.families._restate import describe, sentences, whole
from agent_env.training.templates import load_template, shipped_template_names

HOURS = {
    "description": '"HE07", "HE07-HE10", "all", or hours like [7, 8]',
    "anyOf": [
        {"type": "string"},
        {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 24}},
    ],
    "default": "all",
}
PRODUCT = {"anyOf": [{"type": "string", "enum": ["regup", "regdn"]}, {"type": "null"}], "default": None}
POINTS = {
    "type": "array",
    "description": "[mw, price]",
    "items": {
        "type": "array",
        "prefixItems": [{"type": "number"}, {"type": "number"}],
        "minItems": 2,
        "maxItems": 2,
    },
    "minItems": 2,
    "maxItems": 10,
}
CURVE = {"type": "object", "properties": {"hours": HOURS, "points": POINTS}, "required": ["hours", "points"]}


def tool(**properties: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    return {"name": "offer", "description": "Offer.", "inputSchema": schema}


def test_each_family_is_recognised_by_its_templates_text_and_no_other_template_is():
    families = {name: family_of(load_template(name)) for name in shipped_template_names()}
    assert {name for name, family in families.items() if family and family.name == "gemma4"} == {
        "gemma4", "gemma4_v2", "gemma4_v3", "gemma4_v4", "gemma4_v5", "diffusion_gemma",
    }  # fmt: skip
    assert {name for name, family in families.items() if family and family.name == "gptoss"} == {"gptoss"}
    assert [family.name for family in FAMILIES] == ["gemma4", "gptoss"]


def test_the_phrases_are_fixed_and_short():
    assert sentences({"minimum": 1, "maximum": 24}, ["minimum", "maximum"]) == ["From 1 to 24."]
    assert sentences({"minimum": 0}, ["minimum"]) == ["At least 0."]
    assert sentences({"exclusiveMinimum": 0, "maximum": 5}, ["exclusiveMinimum", "maximum"]) == [
        "Greater than 0 and at most 5."
    ]
    assert sentences({"minItems": 2, "maxItems": 10}, ["minItems", "maxItems"]) == ["2-10 items."]
    assert sentences({"maxLength": 1}, ["maxLength"]) == ["At most 1 character."]
    assert sentences({"default": "all"}, ["default"]) == ['Default: "all".']
    assert sentences({"enum": [1, 2]}, ["enum"]) == ["One of: 1, 2."]
    assert sentences({"pattern": "^HE\\d+$"}, ["pattern"]) == [
        'Matching the regular expression "^HE\\\\d+$".'
    ]
    assert sentences({"if": {"type": "string"}}, ["if"]) == [
        'Also {"if": {"type": "string"}}.'
    ]  # no words: JSON
    assert whole({"anyOf": HOURS["anyOf"]}) == "One of: a string or an array of integers from 1 to 24."
    assert whole({"type": "integer", "enum": [1, 2]}) == "One of 1, 2."  # the values say the type
    assert whole({"type": "string", "enum": [1, 2]}) == 'One of 1, 2 (of type "string").'  # these do not


def test_describe_says_nested_shapes_with_counts_on_the_array_they_bound():
    assert describe(POINTS) == (
        "an array of 2-10 items, each an array of exactly 2 items: [a number, a number] ([mw, price])"
    )
    assert (
        describe({"type": "array", "items": {"type": "string"}, "minItems": 1})
        == "an array of at least 1 string"
    )
    assert describe(CURVE).startswith(
        'an object {hours (required; "HE07", "HE07-HE10", "all", or hours like [7, 8]): a string or an array of'
    )


def test_gemma4_keeps_what_it_shows_and_says_the_rest_in_the_nearest_description():
    lowered = gemma4.lower(tool(hours=HOURS, product=PRODUCT, curves={"type": "array", "items": CURVE}))
    assert lowered["description"] == "Offer. No other arguments."
    properties = lowered["inputSchema"]["properties"]
    assert properties["hours"] == {
        "description": '"HE07", "HE07-HE10", "all", or hours like [7, 8]. One of: a string or an array of integers '
        'from 1 to 24. Default: "all".'
    }
    # `X or null` in Gemma's own words: the enum shows, nullable says null.
    assert properties["product"] == {
        "description": "Default: null.",
        "type": "string",
        "enum": ["regup", "regdn"],
        "nullable": True,
    }
    points = properties["curves"]["items"]["properties"]["points"]
    assert points["description"] == "[mw, price]. 2-10 items."
    assert points["items"] == POINTS["items"]  # inside items Gemma 4 prints every key as written


def test_gptoss_keeps_a_parameter_it_writes_in_full_and_says_any_other_in_words():
    lowered = gptoss.lower(
        tool(
            note={"type": "string", "description": "A note."},
            mode={"type": "string", "enum": ["a", "b"], "default": "a"},
            days={"type": "integer", "minimum": 1, "maximum": 7, "default": 7},
            level={
                "type": "integer",
                "enum": [1, 2],
                "default": 2,
            },  # the template would raise on this default
            curves={"type": "array", "items": CURVE},
        )
    )
    properties = lowered["inputSchema"]["properties"]
    assert properties["note"] == {"type": "string", "description": "A note."}
    assert properties["mode"] == {"type": "string", "enum": ["a", "b"], "default": "a"}
    assert properties["days"] == {"description": "An integer from 1 to 7.", "type": "integer", "default": 7}
    assert properties["level"] == {"description": "One of 1, 2.", "type": "integer", "default": 2}
    assert properties["curves"]["type"] == "array" and "items" not in properties["curves"]
    assert properties["curves"]["description"].startswith(
        "An array of items, each an object {hours (required;"
    )


def test_gemma4_lists_properties_named_like_keywords_only_where_it_shows_them_as_properties():
    lowered = gemma4.lower(tool(type={"type": "string"}, rows={"type": "array", "items": {
        "type": "object", "properties": {"required": {"type": "boolean"}}}}))  # fmt: skip
    assert gemma4.keyword_named_properties(lowered["inputSchema"]) == ["type", "rows[].required"]


@pytest.mark.parametrize("template", ["gemma4_v2", "gemma4_v3"])
def test_gemma4_revisions_that_drop_keyword_named_properties_are_found_by_a_probe(template):
    from agent_env.training.fidelity import PROBE, entry
    from agent_env.training.templates import resolve_template

    chat_template = resolve_template(template)
    lowered = gemma4.lower(tool(type={"type": "string"}))
    refused = gemma4.refusals(lambda t: chat_template.render(PROBE, [entry(dict(t))]), [lowered])
    assert [(refusal.tool, refusal.place) for refusal in refused] == [("offer", "type")]
    assert "parameter 'type' is left out" in refused[0].problem
    fine = resolve_template("gemma4_v5")
    assert gemma4.refusals(lambda t: fine.render(PROBE, [entry(dict(t))]), [lowered]) == []


@pytest.mark.parametrize("default", ["null", "0", "", "true", "[1]", " a", "two\nlines"])
def test_gptoss_gives_an_enum_default_its_line_would_misread_as_json(default):
    from agent_env.training.fidelity import tool_part
    from agent_env.training.templates import resolve_template

    values = ["null", "0", "", "true", "[1]", " a", "two\nlines", "a"]
    lowered = gptoss.lower(tool(mode={"type": "string", "enum": values, "default": default}))
    assert lowered["inputSchema"]["properties"]["mode"]["default"] == json.dumps(default)
    line = tool_part(resolve_template("gptoss"), lowered)
    assert (
        f"// default: {json.dumps(default)}," in line
    )  # issue 20, item 17: was `default: null`, `default: ,`


def test_gptoss_keeps_an_enum_default_its_line_reads_right():
    lowered = gptoss.lower(tool(mode={"type": "string", "enum": ["a", "all days"], "default": "all days"}))
    assert lowered["inputSchema"]["properties"]["mode"]["default"] == "all days"


def test_gptoss_says_no_count_for_items_the_count_cannot_apply_to():
    from agent_env.schema import normalize

    items = {"type": "integer", "minItems": 5, "maxItems": 100}  # issue 20, item 16: read "5-100 items"
    published = tool(xs={"type": "array", "items": items})
    published["inputSchema"] = normalize(published["inputSchema"])
    lowered = gptoss.lower(published)
    assert lowered["inputSchema"]["properties"]["xs"] == {
        "type": "array",
        "description": "An array of integers.",
    }


def test_gemma4_says_a_list_of_types_in_words():
    lowered = gemma4.lower(tool(x={"type": ["string", "integer"], "description": "An id."}))
    assert lowered["inputSchema"]["properties"]["x"] == {"description": "An id. A string or an integer."}


def test_a_refusal_covers_what_is_lost_under_its_parameter_and_nothing_else():
    from agent_env.training.families import Refusal

    refusal = Refusal("offer", "renamed", "rows[].type")
    assert refusal.covers("rows[].type.description") and refusal.covers("rows[].type[].minimum (value)")
    assert not refusal.covers("rows[].types.description") and not refusal.covers("rows[].minItems")
    assert not Refusal("offer", "whole tool").covers("rows[].type.description")
