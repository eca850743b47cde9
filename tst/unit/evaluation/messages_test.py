"""`agent_env/evaluation/_messages.py`: the tool message text, as TRL's tool loop writes it."""

from __future__ import annotations

import pytest

from agent_env import ToolArgumentError
from agent_env.evaluation._messages import tool_message, tool_text, unknown_tool, unreadable_arguments
from testbed.toy import ToyDesk


def test_a_result_reads_as_its_text_and_anything_else_as_str():
    assert tool_text("accepted 3 curves") == "accepted 3 curves"
    assert tool_text({"soc": 1.0}) == "{'soc': 1.0}"  # TRL's str(result)


def test_an_agent_env_error_reads_as_its_lines_inside_trls_error_dict():
    error = ToolArgumentError("Invalid arguments for tool 'x'; fix these:\n- a: expected 'b'")
    assert (
        tool_text(error=error) == "{'error': Invalid arguments for tool 'x'; fix these:\n- a: expected 'b'}"
    )


def test_any_other_error_reads_as_trls_repr_of_it():
    assert tool_text(error=KeyError("slot")) == "{'error': \"'slot'\"}"


def test_a_name_no_tool_has_reads_as_trls_not_found():
    assert tool_text(error=unknown_tool("sumbit")) == "{'error': 'Tool sumbit not found.'}"


def test_arguments_that_are_not_json_read_as_a_validation_error_naming_what_the_tool_takes():
    schema = ToyDesk.tools["submit_offers"].input_schema
    text = tool_text(
        error=unreadable_arguments("submit_offers", schema, "Expecting value: line 1 column 1 (char 0)")
    )
    assert text == (
        "{'error': Invalid arguments for tool 'submit_offers'; fix these and call it again:\n"
        "- (arguments): not JSON (Expecting value: line 1 column 1 (char 0)); send a JSON object of named "
        "arguments (this tool takes as_offers, curves)}"
    )


@pytest.mark.parametrize("call_id", ["call-1", "chatcmpl-9_tool_call_0"])
def test_a_tool_message_answers_its_call_by_id(call_id):
    assert tool_message(call_id, "ok") == {"role": "tool", "tool_call_id": call_id, "content": "ok"}
