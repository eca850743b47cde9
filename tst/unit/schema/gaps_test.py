"""What a published tool leaves the model to guess (`agent_env/schema/_gaps.py`)."""

from __future__ import annotations

import pytest

from agent_env.envs import load_environment
from agent_env.schema._gaps import gaps
from testbed.toy import ToyDesk
from tst.data.vague import Vague


def test_a_missing_docstring_leaves_the_tool_and_its_parameters_undescribed_and_a_dict_open():
    assert gaps(Vague.tools["lend"].published()) == [
        "no description",
        "'isbn' undescribed",
        "'options' undescribed",
        "'options' is an open object",
    ]


def test_a_misspelt_args_section_leaves_every_parameter_undescribed_and_nested_open_objects_are_named_by_path():
    assert gaps(Vague.tools["renew"].published()) == [
        "'isbn' undescribed",
        "'loan' undescribed",
        "'loan.extras' is an open object",
    ]


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ({"type": "array", "items": {"type": "object"}}, "x[]"),
        ({"anyOf": [{"type": "null"}, {"type": "object", "additionalProperties": True}]}, "x"),
        ({"type": "array", "prefixItems": [{"type": "object", "additionalProperties": {}}]}, "x[]"),
        ({"type": "object", "additionalProperties": {"type": "object"}}, "x.*"),
    ],
)
def test_open_objects_are_found_wherever_they_are(schema, path):
    tool = {"name": "t", "description": "T.", "inputSchema": {"type": "object", "properties": {"x": schema}}}
    assert gaps(tool) == ["'x' undescribed", f"'{path}' is an open object"]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "additionalProperties": {"type": "integer"}},  # a map: its values are shown
        {"type": "object", "properties": {}, "additionalProperties": False},  # takes nothing, and says so
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        # a model with extra="allow": its own keys are shown
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
    ],
)
def test_objects_that_show_their_keys_or_values_are_not_open(schema):
    tool = {"name": "t", "description": "T.", "inputSchema": {"type": "object", "properties": {"x": schema}}}
    assert gaps(tool) == ["'x' undescribed"]


@pytest.mark.parametrize("environment", [load_environment("gridsim-desk"), ToyDesk])
def test_the_desk_and_the_toy_leave_nothing_to_guess(environment):
    assert {tool["name"]: gaps(tool) for tool in environment.tools.published if gaps(tool)} == {}
