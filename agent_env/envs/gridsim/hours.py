"""Hour sets: parse "HE07", "HE07-HE10", "all" or [7, 8] into the hour-ending hours 1..24 they name."""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Sequence

from agent_env.errors import ToolError

HOURS: tuple[int, ...] = tuple(range(1, 25))
"""Hour-ending hours of one operating day: HE01 is midnight to 01:00, HE24 is 23:00 to midnight."""

ACCEPTED_FORMS = '"HE07", "HE07-HE10", "all", or a list of hours like [7, 8] (hours 1..24)'

_QUOTE = reprlib.Repr()
_QUOTE.maxstring = _QUOTE.maxother = 60  # a huge hour set is quoted cut short, not echoed whole
_QUOTE.maxlist = 30

_ONE = re.compile(r"^HE(\d{1,2})$")
_RANGE = re.compile(r"^HE(\d{1,2})\s*-\s*HE(\d{1,2})$")


class HourSetError(ToolError):
    """An hour set that does not parse; the message quotes it and lists the accepted forms."""

    code = "invalid_hour_set"


def hour_label(hour: int) -> str:
    """The label of one hour, e.g. 7 -> "HE07"."""
    return f"HE{hour:02d}"


def parse_hours(spec: object) -> tuple[int, ...]:
    """The hours an hour set names, sorted and without repeats.

    Args:
        spec: "HE07", "HE07-HE10" (inclusive, forward within the day), "all", or a non-empty list of
            integers 1..24. Text is read case-insensitively with surrounding spaces ignored.

    Returns:
        A sorted tuple of distinct hours in 1..24.

    Raises:
        HourSetError: the spec is none of the accepted forms, names an hour outside 1..24, or is a
            backwards range; the message quotes the bad text.
    """
    if isinstance(spec, str):
        return _parse_text(spec)
    if isinstance(spec, Sequence) and not isinstance(spec, bytes):
        return _parse_list(spec)
    raise HourSetError(f"hour set {_QUOTE.repr(spec)} is not a string or a list; use {ACCEPTED_FORMS}")


def _parse_text(spec: str) -> tuple[int, ...]:
    text = spec.strip().upper()
    if text == "ALL":
        return HOURS
    one = _ONE.match(text)
    if one:
        return (_check_hour(int(one.group(1)), spec),)
    span = _RANGE.match(text)
    if span:
        first, last = (_check_hour(int(group), spec) for group in span.groups())
        if first > last:
            raise HourSetError(
                f"hour set {_QUOTE.repr(spec)} runs backwards; a range goes forward within the day, "
                f"e.g. {hour_label(last)}-{hour_label(first)}, or list the hours"
            )
        return tuple(range(first, last + 1))
    raise HourSetError(f"hour set {_QUOTE.repr(spec)} does not parse; use {ACCEPTED_FORMS}")


def _parse_list(spec: Sequence[object]) -> tuple[int, ...]:
    if len(spec) == 0:
        raise HourSetError(f"hour set [] is empty; use {ACCEPTED_FORMS}")
    hours = set()
    for item in spec:
        # Decision: integral floats (7.0) are accepted since JSON numbers may arrive as floats; bools are not.
        hour = _whole(item)
        if hour is None:
            raise HourSetError(
                f"hour set {_QUOTE.repr(list(spec))} holds {_QUOTE.repr(item)}, not a whole hour; use {ACCEPTED_FORMS}"
            )
        # Decision: a repeated hour in one list is harmless and is read once.
        hours.add(_check_hour(hour, spec))
    return tuple(sorted(hours))


def _whole(item: object) -> int | None:
    if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item):
        return None
    return int(item) if item == int(item) else None


def _check_hour(hour: int, spec: object) -> int:
    if hour not in HOURS:
        raise HourSetError(
            f"hour set {_QUOTE.repr(spec)} names hour {hour}, outside HE01..HE24; use {ACCEPTED_FORMS}"
        )
    return hour
