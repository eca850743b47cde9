"""Show where two renderings of a prompt differ."""

from __future__ import annotations


def differing_lines(first: str, second: str) -> tuple[str, str]:
    """The whole lines in which two renderings differ (their common leading and trailing lines cut off)."""
    a, b = first.splitlines(keepends=True), second.splitlines(keepends=True)
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    return "".join(a[start : len(a) - end]).strip("\n"), "".join(b[start : len(b) - end]).strip("\n")
