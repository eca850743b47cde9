"""Hostile calls in process (`Tool.bind` through a `LocalSession` on the desk): each is refused with a typed error
whose message names the path and stays short, the environment's state is unchanged, and the session goes on."""

from __future__ import annotations

import copy
import math
import time
from typing import Any

import pytest

from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.errors import ToolArgumentError, ToolError, UnknownToolError
from agent_env.schema import validator_for
from agent_env.schema._validator import MAX_DEPTH
from agent_env.session import LocalSession

CURVE = {"hours": "HE02", "points": [[-50, 20], [0, 21]]}
BOOK = '{"curves":[{"hours":"HE02","points":[[-50.0,20.0],[0.0,21.0]]}],"as_offers":[]}'


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def deep_object(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.fixture
def session() -> LocalSession:
    session = LocalSession(GridSimDesk())
    session.reset(seed=3)
    session.call_tool("submit_dam_offers", {"curves": [CURVE]})
    return session


def refused(
    session: LocalSession, name: str, arguments: Any, error: type[Exception] = ToolArgumentError
) -> str:
    """The message of a refused call, after checking the call changed nothing and the session still works."""
    before = copy.deepcopy((session.environment.curves, session.environment.as_offers, session.state))
    with pytest.raises(error) as caught:
        session.call_tool(name, arguments)
    assert (session.environment.curves, session.environment.as_offers, session.state) == before
    assert session.call_tool("list_offers", {}) == BOOK
    return str(caught.value)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 300, 10_000])
def test_arguments_nested_past_the_limit_are_refused_naming_where(session, depth):
    message = refused(session, "dam_price_forecast", {"hours": nested(depth)})
    assert message.endswith(
        f"- hours[0][0]...: nested more than {MAX_DEPTH} levels deep; send the shape the schema describes"
    )
    message = refused(session, "check_offers", {"curves": [deep_object(depth)]})
    assert f"- curves[0].a...: nested more than {MAX_DEPTH} levels deep" in message


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused_as_not_finite_numbers(session, number):
    message = refused(
        session, "submit_dam_offers", {"curves": [{"hours": "HE05", "points": [[0, 1], [1, number]]}]}
    )
    assert message.splitlines()[1:] == [
        f"- curves[0].points[1][1]: expected a finite number; got {number} (JSON has no NaN or Infinity)"
    ]
    assert "got null" not in refused(session, "dam_price_forecast", {"hours": [number]})


def test_a_very_long_string_is_quoted_cut_short(session):
    message = refused(session, "dam_price_forecast", {"hours": "x" * 3_000_000}, ToolError)
    assert message.startswith("hour set 'xxxxxxxx") and len(message) < 300
    message = refused(
        session,
        "submit_dam_offers",
        {"curves": [{"hours": "HE07", "points": [[0, "y" * 1_000_000], [1, 2]]}]},
    )
    assert 'curves[0].points[0][1]: expected number; got string "yyyy' in message and len(message) < 400


def test_a_very_long_array_of_bad_items_is_described_in_bounded_time(session):
    started = time.perf_counter()
    message = refused(session, "dam_price_forecast", {"hours": [99] * 1_000_000})
    assert (
        time.perf_counter() - started < 3
    )  # every error of a million items would take jsonschema-rs seconds
    lines = message.splitlines()
    assert lines[1] == (
        "- (arguments): hold over 10,000 values, so the problems below come from the first 32 items of each array"
    )
    assert lines[2].startswith("- hours: [99,99,") and lines[2].endswith("] has more than 24 items")
    assert lines[3:5] == [
        "- hours[0]: 99 is greater than the maximum of 24",
        "- hours[1]: 99 is greater than the maximum of 24",
    ]
    assert len(message) < 1000


def test_a_very_long_array_of_valid_items_is_refused_for_its_length(session):
    started = time.perf_counter()
    message = refused(session, "dam_price_forecast", {"hours": [7] * 1_000_000})
    assert time.perf_counter() - started < 3
    assert message.splitlines()[-1].endswith("] has more than 24 items")  # a day has 24 hours
    assert len(message) < 1000


@pytest.mark.parametrize(
    "name", ["__class__", "../../etc/passwd", "reset", "_day", "__init__", "end_turn ", "", "x" * 10_000]
)
def test_tool_names_that_are_not_tools_are_unknown(session, name):
    message = refused(session, name, {}, UnknownToolError)
    assert message.startswith("unknown tool ") and message.endswith("withdraw_offers, end_turn")
    assert len(message) < 400


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        ({"__class__": 1}, "- __class__: unknown argument; this tool takes bands, hours"),
        ({"../../etc/passwd": 1}, '- ["../../etc/passwd"]: unknown argument; this tool takes bands, hours'),
        ({"self": 1}, "- self: unknown argument; this tool takes bands, hours"),
        ({1: "a", "hours": "all"}, "- (arguments): key 1 is not a string"),
        ({"n" * 10_000: 1}, f'- ["{"n" * 56}...]: unknown argument; this tool takes bands, hours'),
    ],
)
def test_argument_names_that_are_not_parameters_are_refused_by_name(session, arguments, line):
    assert refused(session, "dam_price_forecast", arguments).splitlines()[1:] == [line]


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ({1, 2}, "- hours: set is not a JSON value"),
        (b"HE01", "- hours: bytes is not a JSON value"),
        ({"a": {3: 1}}, "- hours.a: key 3 is not a string"),
    ],
)
def test_python_values_of_no_json_type_are_refused_not_crashed_on(session, value, line):
    assert refused(session, "dam_price_forecast", {"hours": value}).splitlines()[1:] == [line]


def test_a_validator_describes_huge_invalid_arguments_from_a_cut_down_copy_keeping_min_items():
    validator = validator_for(
        {
            "type": "object",
            "properties": {"xs": {"type": "array", "minItems": 40, "items": {"type": "integer"}}},
        }
    )
    problems = validator.problems({"xs": [1] * 20_000 + ["x"]})
    assert problems == [
        "(arguments): do not match the schema, and hold over 10,000 values, too many to describe; send fewer"
    ]
    problems = validator.problems({"xs": ["x"] * 20_000})
    assert (
        problems[0]
        == "(arguments): hold over 10,000 values, so the problems below come from the first 40 items of each array"
    )
    assert len(problems) == 41
