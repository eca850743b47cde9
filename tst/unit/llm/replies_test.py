"""`agent_env/llm/_replies.py`: a server's completion read into what goes back and what is judged, whatever
the server left out."""

from __future__ import annotations

from typing import Any

from openai.types.chat import ChatCompletion

from agent_env.llm import ToolCall, reply_of
from testbed.scripted import completion


def read(body: dict[str, Any]) -> Any:
    parsed = ChatCompletion.model_validate(body)
    return reply_of(parsed, parsed.choices[0])


def test_a_call_without_an_id_gets_one_that_its_tool_message_answers():
    body = completion(tool_calls=[{"type": "function", "function": {"name": "end_turn", "arguments": ""}}])
    body["choices"][0]["message"]["tool_calls"][0]["id"] = ""
    reply = read(body)
    assert reply.tool_calls == [ToolCall("call_0", "function", "end_turn", "")]
    assert reply.message["tool_calls"] == [
        {"id": "call_0", "type": "function", "function": {"name": "end_turn", "arguments": "{}"}}
    ]


def test_the_text_the_reasoning_the_reason_and_the_usage_are_kept():
    body = completion("Thinking done.", finish_reason="length", usage=(1200, 48))
    body["choices"][0]["message"]["reasoning_content"] = "The evening peak pays."
    reply = read(body)
    assert (reply.content, reply.reasoning, reply.finish_reason, reply.usage) == (
        "Thinking done.",
        "The evening peak pays.",
        "length",
        (1200, 48),
    )
    assert reply.message == {"role": "assistant", "content": "Thinking done."}


def test_a_server_without_usage_or_text_leaves_them_empty():
    reply = read(completion(None, usage=None))
    assert (reply.content, reply.usage, reply.tool_calls) == ("", None, [])
    assert reply.message == {"role": "assistant", "content": None}
