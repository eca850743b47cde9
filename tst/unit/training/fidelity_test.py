"""The verdicts (`agent_env/training/fidelity.py`): exact, lossless, transformed, no tool block, fails, on real
shipped templates and on hand-made ones."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.training import fidelity
from agent_env.training.families import family_of
from agent_env.training.fidelity import lost_keywords, template_fidelity, tool_fidelity
from agent_env.training.rendering import json_values, shows_exactly
from agent_env.training.templates import ChatTemplate, resolve_template

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
TOOL = {"name": "offer", "description": "Offer.", "inputSchema": SCHEMA}
DESK = [tool for tool in GridSimDesk.tools.published if tool["name"] != "end_turn"]


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    fidelity.clear_cache()


def test_exact_means_the_schema_as_json_in_any_layout_with_name_and_description():
    wrapped = {
        "type": "function",
        "function": {"name": "offer", "description": "Offer.", "parameters": SCHEMA},
    }
    assert shows_exactly("Tools:\n" + json.dumps(wrapped) + "\nGo.", TOOL)
    assert shows_exactly("Tools:\n" + json.dumps(wrapped, indent=4, sort_keys=True), TOOL)
    dropped = json.loads(json.dumps(wrapped))
    del dropped["function"]["parameters"]["properties"]["mw"]["minimum"]
    assert not shows_exactly(json.dumps(dropped), TOOL)
    assert not shows_exactly(json.dumps(SCHEMA), TOOL)  # no name, no description
    quoted = {**TOOL, "description": 'Offer "hours".'}
    assert shows_exactly(json.dumps({**wrapped["function"], "description": quoted["description"]}), quoted)


def test_json_values_skips_text_that_only_looks_like_json():
    text = 'Respond as {"name": function name}. {"a": {"b": 1}} and {broken'
    assert list(json_values(text)) == [{"a": {"b": 1}}]


def typescript_like(tool: dict[str, Any]) -> str:
    """A made-up template: shows each property's type and minimum, never a union or a description."""
    return ", ".join(
        f"{name}: {prop.get('type', 'any')} >= {prop.get('minimum', '-')}"
        for name, prop in tool["inputSchema"].get("properties", {}).items()
    )


def test_a_keyword_is_lost_when_removing_it_or_changing_its_value_leaves_the_prompt_unchanged():
    lost, tested = lost_keywords(TOOL, typescript_like, typescript_like(TOOL))
    # What lies under a lost anyOf is lost with it and not tried again; a new required name shows nowhere.
    assert lost == ["(tool description)", "required", "hours.anyOf"]
    assert tested == 6


def test_a_keyword_whose_new_value_does_not_show_is_lost_by_value():
    def bounds_only(tool: dict[str, Any]) -> str:  # writes that a minimum exists, never which
        return " ".join(
            f"{name}{'>=' if 'minimum' in prop else ''}"
            for name, prop in tool["inputSchema"]["properties"].items()
        )

    tool = {
        "name": "t",
        "description": "",
        "inputSchema": {"type": "object", "properties": {"x": {"minimum": 3}}},
    }
    lost, _ = lost_keywords(tool, bounds_only, bounds_only(tool))
    assert lost == ["x.minimum (value)"]


def test_a_keyword_that_restates_the_default_may_be_absent_from_the_prompt():
    schema = {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": True}
    tool = {"name": "t", "description": "", "inputSchema": schema}

    def shows_closed_objects(
        tool: dict[str, Any],
    ) -> str:  # says "closed" for additionalProperties: false only
        closed = tool["inputSchema"].get("additionalProperties") is False
        return json.dumps(tool["inputSchema"]["properties"]) + (" closed" if closed else "")

    assert lost_keywords(tool, shows_closed_objects, shows_closed_objects(tool))[0] == []


@pytest.mark.parametrize("name", ["qwen3", "llama3_1", "glm4moe"])
def test_templates_that_write_the_json_are_exact_for_every_desk_tool(name):
    report = template_fidelity(resolve_template(name), DESK, None)
    assert report.verdict() == "exact"
    assert all(tool.lowering is None for tool in report.tools)


def test_nemotron_rewrites_the_schema_but_loses_nothing_without_lowering():
    template = resolve_template("nemotron_3_nano")
    assert family_of(template.text) is None
    report = template_fidelity(template, DESK, None)
    assert report.verdict() == "lossless"
    assert sum(tool.tested for tool in report.tools) > 150


@pytest.mark.parametrize("name", ["gemma4", "gemma4_v2", "gemma4_v3", "gemma4_v4", "gemma4_v5", "gptoss"])
def test_gemma4_and_gptoss_lose_keywords_as_they_stand_and_none_lowered(name):
    template = resolve_template(name)
    family = family_of(template.text)
    assert family is not None
    stock = template_fidelity(template, DESK, None)
    lowered = template_fidelity(template, DESK, family)
    assert stock.verdict() == "transformed"
    submit = next(tool for tool in stock.tools if tool.tool == "submit_dam_offers")
    assert any("hours.anyOf" in label or "curves.items" in label for label in submit.lost)
    assert lowered.verdict() == "lossless", [tool.lost for tool in lowered.tools if tool.lost]
    assert {tool.lowering for tool in lowered.tools} == {family.name}


def test_a_template_without_a_tool_block_and_one_that_raises_are_told_apart():
    assert template_fidelity(resolve_template("cohere"), DESK, None).verdict() == "no tool block"
    broken = ChatTemplate("broken", "{{ raise_exception('this template takes no tools') }}")
    report = template_fidelity(broken, DESK, None)
    assert report.verdict() == "fails"
    assert "this template takes no tools" in (report.tools[0].error or "")


def test_a_schema_the_stock_gptoss_template_raises_on_is_lossless_once_lowered():
    """gptoss.jinja concatenates an `enum` parameter's default as a string, so a non-string default raises; the
    lowering says the enum and its default in words, and the verdict judges that rather than the raise."""
    published = {
        "name": "pick",
        "description": "Pick one.",
        "inputSchema": {
            "type": "object",
            "properties": {"level": {"enum": ["low", "high", 1, None], "default": 1}},
            "additionalProperties": False,
        },
    }
    template = resolve_template("gptoss")
    stock = tool_fidelity(template, published, None)
    assert stock.status == "fails" and "TypeError" in (stock.error or "")
    lowered = tool_fidelity(template, published, family_of(template.text))
    assert lowered.status == "lossless", lowered
    assert lowered.tested > 0


def test_verdicts_are_cached_per_template_lowering_and_tool(monkeypatch):
    template = resolve_template("gemma4")
    family = family_of(template.text)
    first = tool_fidelity(template, DESK[8], family)
    monkeypatch.setattr(ChatTemplate, "render", lambda *args: pytest.fail("rendered again"))
    assert tool_fidelity(template, DESK[8], family) is first


@pytest.mark.parametrize("name", ["gptoss", "gemma4"])
def test_a_type_beside_an_enum_that_the_prompt_shows_is_not_blamed(name):
    # issue 20, item 15: gpt-oss said "loses x.type (value)", but its prompt says "of type boolean". (Such a schema
    # is refused at definition; the verdict must be right about any schema all the same.)
    schema = {
        "type": "object",
        "properties": {"x": {"type": "boolean", "enum": ["True", "False", "dontcare"]}},
    }
    template = resolve_template(name)
    verdict = tool_fidelity(template, {**TOOL, "inputSchema": schema}, family_of(template.text))
    assert verdict.status == "lossless", verdict.lost


@pytest.mark.parametrize("described", [False, True], ids=["undescribed", "described"])
@pytest.mark.parametrize("template", ["gemma4", "gemma4_v3"])
def test_an_object_holding_a_boolean_const_keeps_its_type_in_the_verdict(template, described):
    # An Excel server's set_sheet_layout: turning `layout`'s type into "boolean" drops its boolean property's line,
    # so the word "boolean" appears as often as before, yet the new type shows; the check must see that it does.
    layout: dict[str, Any] = {"type": "object", "properties": {"active": {"type": "boolean", "const": True}}}
    if described:
        layout["description"] = "The sheet's layout."
    published = {
        "name": "set_sheet_layout",
        "description": "Lay a sheet out.",
        "inputSchema": {"type": "object", "properties": {"layout": layout}},
    }
    chat_template = resolve_template(template)
    verdict = tool_fidelity(chat_template, published, family_of(chat_template.text))
    assert (verdict.status, verdict.lost) == ("lossless", ())
    without_lowering = tool_fidelity(chat_template, published, None)
    assert without_lowering.lost == (
        "layout.active.const",
    )  # unlowered, only the const is lost, not the type
