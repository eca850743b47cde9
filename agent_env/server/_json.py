"""Read a request body as standard JSON (RFC 8259), refusing what Python's `json` would accept but JSON is not.

Python's `json.loads` takes `NaN` and `Infinity`, turns `1e400` into infinity, keeps the last of two equal keys,
reads UTF-16 and UTF-32 as well as UTF-8, lets lone surrogates (`"\\ud800"`) into strings (which then cannot be
written back as UTF-8), and fails with a `RecursionError` on deep nesting. A body the server acts on must mean one
thing to every reader, so each of these is refused here with a message that says what to send instead.

It also converts integers of up to 4,300 digits, at a cost that grows with the square of their length while
holding the GIL (950 of 4,299 digits, 4 MB, took 80-130 ms), so an integer longer than `MAX_INTEGER_DIGITS` is
refused as the parser reaches it, before it is converted.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import anyio.to_thread

from agent_env.schema._validator import short

INLINE_BYTES = 64 * 1024
"""Bodies up to this size are parsed on the event loop (a thread hop would cost more); larger ones in a thread."""

MAX_INTEGER_DIGITS = 100
"""The longest integer a body may hold, in digits: past a 256-bit one (78), and short enough that a body packed
with them within the value limit (20,000 of them) parses in about 5 ms."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class NotJsonError(ValueError):
    """A request body that is not standard JSON; the message says where and why."""


def read_json(body: bytes) -> Any:
    """The JSON value of a body: UTF-8, finite numbers, integers of at most `MAX_INTEGER_DIGITS` digits, unique
    keys, no lone surrogates, nested within the parser's limit.

    Raises:
        NotJsonError: The body is not standard JSON.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotJsonError(f"it is not UTF-8 text ({error})") from None
    try:
        if text.startswith("\ufeff"):  # as `json.loads` refuses it (its decoder's own method does not)
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _DECODER.decode(text)
    except RecursionError:
        raise NotJsonError("it nests arrays and objects too deeply to read") from None
    except NotJsonError:
        raise
    except ValueError as error:
        raise NotJsonError(f"it is not JSON: {error}") from None
    if _SURROGATE_ESCAPE.search(text):  # rare, so only then pay for the check
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise NotJsonError(
                "it escapes a lone UTF-16 surrogate (like \\ud800), which is not a character: send Unicode text"
            ) from None
    return value


async def parse_json(body: bytes) -> Any:
    """`read_json` without holding up the event loop: a large body is parsed in a worker thread.

    The guard has bounded what a body may cost (its size and its count of values), so this never waits long.
    """
    if len(body) <= INLINE_BYTES:
        return read_json(body)
    return await anyio.to_thread.run_sync(read_json, body)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise NotJsonError(f"key {short(twice)} appears twice in one object; send each key once")
    return result


def _no_constant(name: str) -> Any:
    raise NotJsonError(f"{name} is not a JSON number (JSON has no NaN or Infinity); send finite numbers")


def _short_int(text: str) -> int:
    if len(text) > MAX_INTEGER_DIGITS and len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        digits = len(text.lstrip("-"))
        raise NotJsonError(
            f"it holds an integer of {digits} digits, more than the {MAX_INTEGER_DIGITS} the server reads; send a "
            "number that long as a string"
        )
    return int(text)


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise NotJsonError(f"the number {short(text)} is too large for a double; send finite numbers")
    return number


_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_keys,
    parse_constant=_no_constant,
    parse_float=_finite_float,
    parse_int=_short_int,
)
"""Made once: `json.loads` with hooks makes a decoder (and its scanner) for every body."""
