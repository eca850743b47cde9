"""`read_json` (`_json.py`) takes standard JSON and nothing else: each thing Python's `json` would let through
that JSON is not is refused with a message that says what to send instead; `parse_json` reads a large body off
the event loop."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

import agent_env.server._json as json_module
from agent_env.server._json import INLINE_BYTES, NotJsonError, parse_json, read_json


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"a": ' + b"[" * 10_000 + b"]" * 10_000 + b"}", "it nests arrays and objects too deeply to read"),
        (b'{"price": NaN}', "NaN is not a JSON number (JSON has no NaN or Infinity); send finite numbers"),
        (b'{"price": Infinity}', "Infinity is not a JSON number"),
        (b'{"price": [-Infinity]}', "-Infinity is not a JSON number"),
        (b'{"price": 1e400}', 'the number "1e400" is too large for a double; send finite numbers'),
        (b'{"price": -2E+309}', 'the number "-2E+309" is too large for a double'),
        (b'{"hours": "HE01", "hours": "all"}', 'key "hours" appears twice in one object; send each key once'),
        (b'{"curves": [{"hours": 1, "points": [], "hours": 2}]}', 'key "hours" appears twice in one object'),
        (
            '{"hours": "HE\xe9"}'.encode("latin-1"),
            "it is not UTF-8 text ('utf-8' codec can't decode byte 0xe9",
        ),
        ('{"hours": "all"}'.encode("utf-16"), "it is not UTF-8 text"),
        ('{"hours": "all"}'.encode("utf-32"), "it is not UTF-8 text"),
        ('\ufeff{"hours": "all"}'.encode(), "it is not JSON: Unexpected UTF-8 BOM"),
        (
            b'{"text": "\\ud800"}',
            "it escapes a lone UTF-16 surrogate (like \\ud800), which is not a character",
        ),
        (b'{"text": "\\udc00 low"}', "it escapes a lone UTF-16 surrogate"),
        (b'{"\\uD83D": 1}', "it escapes a lone UTF-16 surrogate"),
        (
            b'{"n": '
            + b"9" * 4_299
            + b"}",  # Python converts it, at a cost that grows with its length squared
            "it holds an integer of 4299 digits, more than the 100 the server reads; send a number that long as a "
            "string",
        ),
        (b'{"n": [1, -' + b"1" * 101 + b"]}", "it holds an integer of 101 digits, more than the 100"),
        (
            b'{"n": ' + b"9" * 5_000 + b"}",
            "it holds an integer of 5000 digits",
        ),  # past Python's own limit too
        (b"{nope", "it is not JSON: Expecting property name enclosed in double quotes"),
        (b'{"a": 1} trailing', "it is not JSON: Extra data"),
    ],
)
def test_what_json_is_not_is_refused_saying_what_to_send(body, message):
    with pytest.raises(NotJsonError) as refused:
        read_json(body)
    assert str(refused.value).startswith(message)
    assert len(str(refused.value)) < 300


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("body", "value"),
    [
        (
            b'{"price": 1e308, "mw": -0.0, "n": 12345678901234567890}',
            {"price": 1e308, "mw": -0.0, "n": 12345678901234567890},
        ),
        ('{"text": "héllo \\ud83d\\ude00 ☃"}'.encode(), {"text": "héllo \U0001f600 ☃"}),
        (b'{"text": "\\\\ud800 is only text"}', {"text": "\\ud800 is only text"}),
        (b'{"nested": {"a": {"a": {"a": 1}}}, "a": 2}', {"nested": {"a": {"a": {"a": 1}}}, "a": 2}),
        (b'{"deep": ' + b"[" * 200 + b"]" * 200 + b"}", {"deep": nested(199)}),
        (b"[1, 2]", [1, 2]),
        (
            b"[" + b"9" * 100 + b", -" + b"9" * 100 + b"]",
            [10**100 - 1, 1 - 10**100],
        ),  # the longest integers read
        (
            b'{"pi": 3.' + b"1" * 500 + b', "id": "' + b"7" * 500 + b'"}',
            {"pi": 3.1111111111111111, "id": "7" * 500},
        ),
    ],
)
def test_standard_json_reads_as_python_json_reads_it(body, value):
    assert read_json(body) == value


@pytest.mark.anyio
async def test_a_large_body_is_parsed_in_a_worker_thread_so_the_event_loop_goes_on(monkeypatch):
    threads: list[threading.Thread] = []

    def recording(body: bytes) -> Any:
        threads.append(threading.current_thread())
        return read_json(body)

    monkeypatch.setattr(json_module, "read_json", recording)
    small = json.dumps({"text": "x" * 1000}).encode()
    large = json.dumps({"text": "x" * (INLINE_BYTES + 1)}).encode()
    assert await parse_json(small) == {"text": "x" * 1000}
    assert await parse_json(large) == {"text": "x" * (INLINE_BYTES + 1)}
    assert threads[0] is threading.current_thread() and threads[1] is not threading.current_thread()
