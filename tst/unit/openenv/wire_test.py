"""Reading OpenEnv's observations (`openenv/_wire.py`): what text a model reads from each shape a server sends."""

from __future__ import annotations

import pytest

from agent_env.openenv import _wire as wire


@pytest.mark.parametrize(
    ("observation", "text"),
    [
        ({}, None),  # openenv-core 0.3.0 drops metadata from the wire
        ({"metadata": {}}, None),
        ({"metadata": {}, "text": None}, None),
        ({"metadata": {}, "text": "counter starts at 5"}, "counter starts at 5"),  # agent_env's reset
        ({"prompt": "Guess a word"}, "Guess a word"),
        ({"metadata": {"target": 3}}, '{"metadata":{"target":3}}'),
        ({"echoed_message": "hi", "message_length": 2}, '{"echoed_message":"hi","message_length":2}'),
    ],
)
def test_an_observation_reads_as_nothing_its_one_string_or_its_fields(observation, text):
    assert wire.observation_text(observation) == text


@pytest.mark.parametrize(
    ("result", "read"),
    [
        (wire.mcp_result("total 7"), ("total 7", False)),
        (
            {
                "content": [
                    {"type": "text", "text": "a"},
                    {"type": "image", "data": "..."},
                    {"type": "text", "text": "b"},
                ]
            },
            ("a\nb", False),
        ),
        ({"content": [], "data": {"x": 1}, "is_error": False}, ('{"x":1}', False)),
        ({"content": [], "structuredContent": {"x": 1}, "isError": True}, ('{"x":1}', True)),
        ({"content": [{"type": "text", "text": "bad"}], "is_error": True}, ("bad", True)),
        ("plain", ("plain", False)),
        ({"answer": 42}, ('{"answer":42}', False)),
        (None, ("", False)),
    ],
)
def test_a_call_result_reads_as_its_text_blocks_or_its_value(result, read):
    assert wire.result_text(result) == read


def test_a_schema_is_read_under_either_name_openenv_uses():
    assert wire.listed_schema({"input_schema": {"type": "object"}}) == {"type": "object"}
    assert wire.listed_schema({"inputSchema": {"type": "object"}}) == {"type": "object"}
    assert wire.listed_schema({"name": "f"}) is None


def test_messages_keep_key_order_so_a_schema_keeps_its_bytes():
    schema = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}}}
    text = wire.dumps(
        wire.observation_message(wire.tool_listing([{"name": "f", "description": "", "inputSchema": schema}]))
    )
    assert (
        '"input_schema":{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"}}}' in text
    )
