"""Argument validation: every failing JSON path named, what was expected and what was sent, kept short."""

import pytest

from agent_env import ToolArgumentError
from agent_env.schema import json_path, validator_for

CURVES = {
    "type": "object",
    "properties": {
        "curves": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "hours": {
                        "anyOf": [
                            {"type": "string"},
                            {"type": "array", "items": {"type": "integer", "minimum": 1}},
                        ]
                    },
                    "points": {
                        "type": "array",
                        "items": {
                            "type": "array",
                            "prefixItems": [{"type": "number"}, {"type": "number"}],
                            "maxItems": 2,
                        },
                    },
                },
                "required": ["hours", "points"],
            },
        },
        "product": {"enum": ["regup", "regdn"]},
    },
    "required": ["curves"],
}


def errors_for(arguments):
    with pytest.raises(ToolArgumentError) as raised:
        validator_for(CURVES).validate("submit", arguments)
    return str(raised.value)


def test_valid_arguments_pass():
    validator_for(CURVES).validate(
        "submit", {"curves": [{"hours": "HE01", "points": [[1, 2]]}], "product": "regup"}
    )


def test_message_names_every_failing_path_with_expected_and_sent():
    message = errors_for(
        {"curves": [{"hours": "HE01", "points": [[1, "x"]]}, {"points": []}], "product": "up"}
    )
    assert message.splitlines() == [
        "Invalid arguments for tool 'submit'; fix these and call it again:",
        '- curves[0].points[0][1]: expected number; got string "x"',
        "- curves[1]: missing required property 'hours'",
        '- product: expected one of "regup", "regdn"; got "up"',
    ]


def test_an_anyof_failure_reports_the_branch_the_value_was_meant_for():
    message = errors_for({"curves": [{"hours": [0], "points": []}]})
    assert "- curves[0].hours[0]: 0 is less than the minimum of 1" in message


def test_an_anyof_failure_with_no_fitting_branch_lists_the_options():
    message = errors_for({"curves": [{"hours": 7, "points": []}]})
    assert "- curves[0].hours: expected string or array; got integer 7" in message


def test_a_huge_sent_value_is_cut_short():
    message = errors_for({"curves": "x" * 10_000})
    assert len(message) < 300
    assert "curves: expected array; got string" in message


def test_many_errors_are_capped():
    message = errors_for({"curves": [{"points": []} for _ in range(30)]})
    assert message.count("\n- ") == 9 and message.endswith("- ... and 22 more")


def test_nan_is_not_a_number():
    message = errors_for({"curves": [{"hours": "HE01", "points": [[float("nan"), 1]]}]})
    assert "curves[0].points[0][0]" in message


def test_an_integer_past_64_bits_is_judged_by_the_schema_like_any_other():
    # jsonschema-rs before 0.35 could not read one ("int too big to convert"), so a valid call was refused as
    # "not JSON values": the reason for its floor in pyproject.toml.
    validator = validator_for({"type": "object", "properties": {"n": {"type": "integer", "maximum": 2**70}}})
    validator.validate("count", {"n": 2**64})
    with pytest.raises(ToolArgumentError) as refused:
        validator.validate("count", {"n": 2**71})
    assert str(refused.value).endswith(f"- n: {2**71} is greater than the maximum of {2**70}")


def test_validators_are_compiled_once_per_schema():
    assert validator_for(dict(CURVES)) is validator_for(CURVES)


@pytest.mark.parametrize(
    ("path", "text"),
    [([], "(arguments)"), (["curves", 0, "points", 1], "curves[0].points[1]"), (["a b", 2], '["a b"][2]')],
)
def test_json_path_reads_like_code(path, text):
    assert json_path(path) == text


ORDERED = {
    "type": "object",
    "properties": {
        "alpha": {"type": "integer"},
        "beta": {"type": "array", "maxItems": 1, "items": {"type": "integer", "maximum": 5}},
        "gamma": {
            "anyOf": [{"type": "string"}, {"type": "object", "properties": {"x": {"type": "integer"}}}]
        },
    },
    "required": ["alpha", "beta", "gamma", "delta"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "arguments",
    [
        {"gamma": {"x": "no"}, "beta": [9, 9], "zeta": 1, "alpha": "no"},
        {"zeta": 1, "alpha": "no", "beta": [9, 9], "gamma": {"x": "no"}},
    ],
)
def test_problems_read_in_the_order_of_the_arguments_whatever_order_the_validator_reports(arguments):
    """jsonschema-rs versions report errors in different orders; the message follows the arguments' own order,
    the object's own problems first, then each key in turn, a parent before its items."""
    problems = validator_for(ORDERED).problems(arguments)
    expected = {
        "(arguments)": "(arguments): missing required property 'delta'",
        "gamma": 'gamma.x: expected integer; got string "no"',
        "beta": "beta: [9,9] has more than 1 item",
        "zeta": "zeta: unknown argument; this tool takes alpha, beta, gamma",
        "alpha": 'alpha: expected integer; got string "no"',
    }
    beta_items = [
        "beta[0]: 9 is greater than the maximum of 5",
        "beta[1]: 9 is greater than the maximum of 5",
    ]
    order = ["(arguments)", *arguments]
    wanted = []
    for key in order:
        wanted.append(expected[key])
        if key == "beta":
            wanted += beta_items
    assert problems == wanted
