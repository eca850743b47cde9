"""`agent_env/evaluation/_calls.py`: a model's call runs through the session as TRL runs it, and is judged."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agent_env import Environment, LocalSession, tool
from agent_env.evaluation._calls import ToolCall, decode_arguments, run_call
from testbed.toy import MALFORMED, VALID, ToyDesk

SCHEMAS = {name: found.input_schema for name, found in ToyDesk.tools.items()}


class Buggy(Environment):
    def reset(self, **row: Any) -> str:
        return "go"

    def reward(self) -> float:
        return 0.0

    @tool
    def lookup(self) -> str:
        """Raises a bug's KeyError."""
        return {}["missing"]


def session() -> LocalSession:
    opened = LocalSession(ToyDesk())
    opened.reset()
    return opened


def run(opened: LocalSession, name: str, arguments: Any, kind: str = "function") -> tuple[str, str]:
    outcome = asyncio.run(run_call(opened, ToolCall("c1", kind, name, arguments), SCHEMAS))
    return outcome.verdict, outcome.content


def test_a_valid_call_is_accepted_and_reaches_the_environment():
    opened = session()
    assert run(opened, "submit_offers", json.dumps(VALID)) == (
        "accepted",
        "accepted 3 curves and 1 AS offers",
    )
    assert len(opened.environment.book) == 3


def test_arguments_that_break_the_schema_are_refused_by_the_session_and_change_nothing():
    opened = session()
    verdict, content = run(opened, "submit_offers", json.dumps(MALFORMED))
    assert verdict == "invalid_arguments"
    assert content.startswith(
        "{'error': Invalid arguments for tool 'submit_offers'; fix these and call it again:\n"
    )
    assert "curves[0].points[1]: [100] has less than 2 items" in content
    assert opened.environment.book == []


def test_arguments_that_are_not_json_are_refused_saying_so_and_change_nothing():
    opened = session()
    verdict, content = run(opened, "submit_offers", '{"curves": [')
    assert verdict == "not_json"
    assert (
        "- (arguments): not JSON (Expecting value: line 1 column 13 (char 12)); send a JSON object" in content
    )
    assert opened.environment.book == []


def test_json_that_is_not_an_object_is_refused_by_the_session_as_it_refuses_it_over_mcp():
    verdict, content = run(session(), "submit_offers", "[1, 2]")
    assert verdict == "invalid_arguments"
    assert (
        "(arguments): expected an object of named arguments (this tool takes as_offers, curves); got"
        in content
    )


def test_a_name_no_tool_has_is_not_found_whatever_its_arguments_as_trl_says_it():
    assert run(session(), "submit_offer", "{not json") == (
        "unknown_tool",
        "{'error': 'Tool submit_offer not found.'}",
    )


def test_a_call_of_another_type_is_unsupported_as_trl_says_it():
    assert run(session(), "submit_offers", "{}", kind="custom") == (
        "unsupported_type",
        "{'error': 'Unsupported tool call type: custom'}",
    )


@pytest.mark.parametrize("arguments", [None, "", "  "])
def test_a_call_without_arguments_takes_none(arguments):
    assert run(session(), "battery_status", arguments) == ("accepted", '{"soc_mwh":100.0,"max_mw":100.0}')


def test_a_tool_error_and_a_call_after_the_end_are_refused_by_the_environment():
    opened = session()
    decreasing = {"curves": [{"hours": "HE07", "points": [[0, 50], [10, 40]]}]}
    verdict, content = run(opened, "submit_offers", json.dumps(decreasing))
    assert (verdict, content) == ("tool_error", "{'error': curves[0].points: prices must be non-decreasing}")
    assert run(opened, "end_turn", "{}") == ("accepted", "Turn ended.")
    verdict, content = run(opened, "battery_status", "{}")
    assert verdict == "episode_state"
    assert (
        content
        == "{'error': tool 'battery_status' was not run: the episode has ended (end_turn was called) and takes no more calls}"
    )


def test_an_async_tool_is_awaited():
    opened = session()
    assert run(opened, "write_note", '{"text": "hi"}') == ("accepted", "1 notes")
    assert opened.environment.notes == ["hi"]


def test_a_bug_in_a_tool_reaches_the_model_as_trl_writes_it():
    opened = LocalSession(Buggy())
    opened.reset()
    outcome = asyncio.run(run_call(opened, ToolCall("c1", "function", "lookup", "{}"), {"lookup": {}}))
    assert (outcome.verdict, outcome.content) == (
        "error",
        "{'error': tool 'lookup' failed: KeyError: 'missing'}",
    )


def test_arguments_decode_from_json_text_and_a_server_that_parsed_them_is_taken_as_is():
    assert decode_arguments('{"a": [1]}') == ({"a": [1]}, None)
    assert decode_arguments({"a": 1}) == ({"a": 1}, None)
    assert (
        decode_arguments("{")[1]
        == "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    )


class Blocking(Environment):
    def reset(self, **row: Any) -> str:
        return "go"

    def reward(self) -> float:
        return 0.0

    @tool
    def where(self) -> str:
        """Says whether it runs on an event loop's thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return "off the loop"
        return "on the loop"


def test_a_synchronous_tool_runs_off_the_event_loop_where_it_would_stall_every_other_episode():
    opened = LocalSession(Blocking())
    opened.reset()
    outcome = asyncio.run(run_call(opened, ToolCall("c1", "function", "where", "{}"), {"where": {}}))
    assert (outcome.verdict, outcome.content) == ("accepted", "off the loop")
