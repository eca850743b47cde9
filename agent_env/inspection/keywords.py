"""Which keywords of a tool's schema reach the model: a keyword reaches it when removing it changes the prompt."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]
"""Where a keyword sits: the keys and indexes leading from the input schema to the schema that holds it."""

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "contains")


@dataclass(frozen=True)
class Occurrence:
    """One keyword in one place of a schema."""

    keyword: str
    where: Path

    def label(self) -> str:
        """Readable place and keyword: `curves[].points.maxItems`, `hours.anyOf[1][].minimum`."""
        text, previous = "", None
        for step in self.where:
            if previous == "properties":
                text += f".{step}"  # a property name, whatever it is called
            elif step == "items":
                text += "[]"
            elif isinstance(step, int):
                text += f"[{step}]"
            elif step != "properties":
                text += f".{step}"
            previous = None if previous == "properties" else step
        return f"{text}.{self.keyword}".lstrip(".")


def occurrences(schema: dict[str, Any], where: Path = ()) -> Iterator[Occurrence]:
    """Every keyword of `schema` and of its subschemas, outermost first.

    The input schema's own `"type": "object"` is left out (every tool format implies it), and so is an empty
    `properties` (it says nothing).
    """
    for keyword, value in schema.items():
        implied = (not where and keyword == "type") or (keyword == "properties" and not value)
        if not implied:
            yield Occurrence(keyword, where)
    for name, subschema in schema.get("properties", {}).items():
        if isinstance(subschema, dict):
            yield from occurrences(subschema, (*where, "properties", name))
    for keyword in _SUBSCHEMAS:
        if isinstance(schema.get(keyword), dict):
            yield from occurrences(schema[keyword], (*where, keyword))
    for keyword in _SUBSCHEMA_LISTS:
        for index, subschema in enumerate(schema.get(keyword) or []):
            if isinstance(subschema, dict):
                yield from occurrences(subschema, (*where, keyword, index))


def without(schema: dict[str, Any], occurrence: Occurrence) -> dict[str, Any]:
    """A copy of `schema` with one keyword removed."""
    copied = copy.deepcopy(schema)
    holder: Any = copied
    for step in occurrence.where:
        holder = holder[step]
    del holder[occurrence.keyword]
    return copied


def lost_keywords(
    schema: dict[str, Any], render: Callable[[dict[str, Any]], str]
) -> tuple[list[Occurrence], int]:
    """The keywords the model does not see (outermost only: what lies under a lost keyword is lost with it), and how
    many keywords were tested.

    Args:
        schema: The published input schema.
        render: The prompt for a tool with a given input schema; removing a keyword that reaches the model changes
            it (a template that raises without the keyword reads it, so that counts as a change too).
    """
    baseline = render(schema)
    lost: list[Occurrence] = []
    tested = 0
    for occurrence in occurrences(schema):
        if any(occurrence.where[: len(gone.where) + 1] == (*gone.where, gone.keyword) for gone in lost):
            continue
        tested += 1
        try:
            if render(without(schema, occurrence)) == baseline:
                lost.append(occurrence)
        except Exception:  # the template depends on the keyword: the model sees it
            continue
    return lost, tested
