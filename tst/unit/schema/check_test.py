"""Hand-written schemas are checked before anything walks them: every malformed one is refused with a
`ToolDefinitionError` that names the tool and the place, lists every problem (bounded), and says what is valid."""

from __future__ import annotations

import sys

import pytest

from agent_env import Environment, ToolDefinitionError, tool
from agent_env.schema import MAX_SCHEMA_DEPTH, check_schema
from tst.data.schemas import (
    LONG_NAMES,
    MALFORMED,
    NOT_JSON_AND_INVALID,
    NOT_SCHEMAS,
    OUT_OF_ORDER_NAMES,
    SCHEMA_DEPTH,
    SEVERAL_PROBLEMS,
    TYPES,
    Malformed,
)


def define(schema: object) -> type[Environment]:
    def f(self, n):
        return ""

    return type("Probe", (Environment,), {"f": tool(input_schema=schema)(f)})


def test_the_depth_limit_is_the_one_the_test_data_expects():
    assert MAX_SCHEMA_DEPTH == SCHEMA_DEPTH


@pytest.mark.parametrize("case", MALFORMED, ids=[case.label for case in MALFORMED])
def test_a_malformed_schema_is_refused_naming_the_tool_and_the_place(case: Malformed):
    with pytest.raises(ToolDefinitionError) as refused:
        define(case.schema)
    message = str(refused.value)
    assert message.startswith("tool 'f': ")
    assert f"{case.place}: " in message and case.says in message, message
    assert len(message) < 1000


@pytest.mark.parametrize("case", MALFORMED[:6], ids=[case.label for case in MALFORMED[:6]])
def test_a_malformed_schema_is_refused_the_same_way_from_deep_in_the_stack(case: Malformed):
    def from_depth(levels: int) -> None:
        if levels:
            from_depth(levels - 1)
        else:
            with pytest.raises(ToolDefinitionError, match="tool 'f': "):
                define(case.schema)

    from_depth(sys.getrecursionlimit() // 2)


@pytest.mark.parametrize("schema", NOT_SCHEMAS, ids=repr)
def test_an_input_schema_that_is_not_an_object_is_refused(schema):
    with pytest.raises(
        ToolDefinitionError, match=r"tool 'f': input_schema must be a JSON Schema object \(a dict\)"
    ):
        define(schema)


def test_every_problem_is_listed_one_per_line_with_the_valid_types():
    with pytest.raises(ToolDefinitionError) as refused:
        define(SEVERAL_PROBLEMS)
    assert str(refused.value).splitlines() == [
        "tool 'f': not a valid JSON Schema (2020-12); fix these:",
        f'- properties.a.type: expected one of {TYPES}; got "strin"',
        f'- properties.b.type: expected one of {TYPES}; got "integr"',
        '- properties.c.minimum: expected number; got string "0"',
        '- required: expected array; got string "a"',
    ]


def test_the_list_of_problems_is_bounded():
    schema = {"type": "object", "properties": {f"p{i}": {"type": "strin"} for i in range(50)}}
    with pytest.raises(ValueError) as refused:
        check_schema(schema)
    lines = str(refused.value).splitlines()
    assert len(lines) == 1 + 8 + 1 and lines[-1] == "- ... and 42 more"
    assert "anyOf" not in str(refused.value)


def test_a_value_that_is_not_json_does_not_hide_the_other_problems():
    with pytest.raises(ToolDefinitionError) as refused:
        define(NOT_JSON_AND_INVALID)
    assert str(refused.value).splitlines() == [
        "tool 'f': not a valid JSON Schema (2020-12); fix these:",
        "- properties.b.maximum: expected a finite number; got nan (JSON has no NaN or Infinity)",
        f'- properties.a.type: expected one of {TYPES}; got "strin"',
        "- required: expected array; got boolean true",
    ]


def test_problems_are_listed_as_the_schema_reads():
    with pytest.raises(ToolDefinitionError) as refused:
        define(OUT_OF_ORDER_NAMES)
    places = [line.split(".")[1] for line in str(refused.value).splitlines()[1:9]]
    assert places == [f"p{i}" for i in range(8)]


def test_long_property_names_do_not_make_a_long_refusal():
    with pytest.raises(ToolDefinitionError) as refused:
        define(LONG_NAMES)
    message = str(refused.value)
    assert len(message) < 2_500, len(message)
    assert message.count('got "strin"') == 8 and message.endswith("- ... and 12 more")


def test_a_valid_schema_passes():
    check_schema({"type": "object", "properties": {"n": {"type": ["integer", "null"], "pattern": "^a"}}})
