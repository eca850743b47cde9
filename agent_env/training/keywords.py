"""The keywords of a schema, one by one: where each sits, the schema without it, and the schema with it changed.

The lossless verdict (`agent_env.training.fidelity`) asks, for each keyword, whether removing it and changing its
value both change the prompt. This module makes those variants of a schema; it knows nothing about templates.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]
"""Where a keyword sits: the keys and indexes leading from the input schema to the schema that holds it."""

MARK = "Qz7"
"""Text no schema holds by chance, appended to a changed string so its new value can be found in a prompt."""

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "$defs")
_NUMBERS = frozenset({
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "minContains", "maxContains",
})  # fmt: skip
_SWAPPED_TYPES = {"boolean": "string"}
"""A changed `type` becomes `boolean` (rare in schemas, so its text shows when it appears), a boolean a string."""
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}
_DEFAULTS: dict[str, Any] = {  # values that say what leaving the keyword out says
    "additionalProperties": True,
    "uniqueItems": False,
    "minItems": 0,
    "minLength": 0,
    "minProperties": 0,
    "deprecated": False,
    "readOnly": False,
    "writeOnly": False,
    "required": [],
    "description": "",
}


@dataclass(frozen=True)
class Occurrence:
    """One keyword in one place of a schema."""

    keyword: str
    where: Path

    def label(self) -> str:
        """Readable place and keyword: `curves[].points.maxItems`, `hours.anyOf[1][].minimum`."""
        text, previous = "", None
        for step in self.where:
            if previous in _SUBSCHEMA_MAPS:
                text += f".{step}"  # a property name, whatever it is called
            elif step == "items":
                text += "[]"
            elif isinstance(step, int):
                text += f"[{step}]"
            elif step not in _SUBSCHEMA_MAPS:
                text += f".{step}"
            previous = None if previous in _SUBSCHEMA_MAPS else step
        return f"{text}.{self.keyword}".lstrip(".")


@dataclass(frozen=True)
class Change:
    """A schema with one keyword's value changed, and how the new value shows: `evidence` is text that must
    appear more often in the prompt than before (None: the prompt must only differ)."""

    schema: dict[str, Any]
    evidence: str | None


def occurrences(schema: dict[str, Any], where: Path = ()) -> Iterator[Occurrence]:
    """Every keyword of `schema` and of its subschemas, outermost first.

    The input schema's own `"type": "object"` is left out (every tool format implies it), and so is an empty
    `properties` (it says nothing).
    """
    for keyword, value in schema.items():
        implied = (not where and keyword == "type") or (keyword == "properties" and not value)
        if not implied:
            yield Occurrence(keyword, where)
    for keyword in _SUBSCHEMA_MAPS:
        if isinstance(schema.get(keyword), dict):
            for name, subschema in schema[keyword].items():
                if isinstance(subschema, dict):
                    yield from occurrences(subschema, (*where, keyword, name))
    for keyword in _SUBSCHEMAS:
        if isinstance(schema.get(keyword), dict):
            yield from occurrences(schema[keyword], (*where, keyword))
    for keyword in _SUBSCHEMA_LISTS:
        if isinstance(schema.get(keyword), list):
            for index, subschema in enumerate(schema[keyword]):
                if isinstance(subschema, dict):
                    yield from occurrences(subschema, (*where, keyword, index))


def is_default(occurrence: Occurrence, schema: dict[str, Any]) -> bool:
    """Whether the keyword's value says what leaving it out says (`"additionalProperties": true`, `"minItems": 0`),
    so removing it changes nothing a model should see."""
    holder = _holder(schema, occurrence.where)
    value = holder[occurrence.keyword]
    if occurrence.keyword in ("items", "additionalProperties") and value in ({}, True):
        return True
    if occurrence.keyword == "type" and isinstance(value, str):
        return _values_of_type(holder, value)
    return (
        occurrence.keyword in _DEFAULTS
        and value == _DEFAULTS[occurrence.keyword]
        and (type(value) is type(_DEFAULTS[occurrence.keyword]))
    )


def _values_of_type(holder: dict[str, Any], name: str) -> bool:
    """Whether an `enum` or `const` beside a `type` allows only values of that type, which says the type already."""
    values = (
        holder["enum"]
        if isinstance(holder.get("enum"), list)
        else [holder["const"]]
        if "const" in holder
        else []
    )
    kinds = _JSON_TYPES.get(name, ())
    return bool(values) and all(
        isinstance(value, kinds) and not (isinstance(value, bool) and name in ("integer", "number"))
        for value in values
    )


def without(schema: dict[str, Any], occurrence: Occurrence) -> dict[str, Any]:
    """A copy of `schema` with one keyword removed (what is not on the way to it is shared, not copied)."""
    copied, holder = _copied_to(schema, occurrence.where)
    del holder[occurrence.keyword]
    return copied


def changed(schema: dict[str, Any], occurrence: Occurrence) -> Change | None:
    """A copy of `schema` with one keyword's value changed, still a valid schema that accepts something; None for a
    keyword that only holds subschemas (their own keywords are changed one by one instead), and for a `type` beside
    an `enum` or `const`: another type would contradict the values, and a lowering may rightly show such a schema
    by its values alone (a string enum as `"a" | "b"`), so the new type's name need not appear."""
    copied, holder = _copied_to(schema, occurrence.where)
    keyword, value = occurrence.keyword, holder[occurrence.keyword]
    if (
        keyword in _SUBSCHEMA_LISTS
        or keyword in _SUBSCHEMA_MAPS[1:]
        or (keyword in _SUBSCHEMAS and isinstance(value, dict))
    ):
        return None
    if keyword == "properties":
        holder[keyword] = {
            **value,
            MARK.lower(): {"type": "string"},
        }  # a new dict: the shared one stays as is
        return Change(copied, MARK.lower())
    if keyword == "required" and isinstance(value, list):
        return _changed_required(copied, holder, value)
    if keyword == "type":
        if "enum" in holder or "const" in holder:
            return (
                None  # the values beside it say which types there are: they are changed instead, not the type
            )
        return _changed_type(copied, holder, value)
    if keyword == "enum" and isinstance(value, list):
        holder[keyword] = [*value, MARK]
        return Change(copied, MARK)
    if keyword in _NUMBERS and _is_number(value):
        holder[keyword] = value + 7
        return Change(copied, _number_text(value + 7))
    new_value, evidence = _changed_value(value)
    holder[keyword] = new_value
    return Change(copied, evidence)


def _changed_required(copied: dict[str, Any], holder: dict[str, Any], value: list[Any]) -> Change | None:
    optional = [name for name in holder.get("properties", {}) if name not in value]
    if optional:
        holder["required"] = [
            *value,
            optional[0],
        ]  # a property the model may leave out becomes one it must send
    elif value:
        holder["required"] = value[1:]
    else:
        return None
    return Change(copied, None)


def _changed_type(copied: dict[str, Any], holder: dict[str, Any], value: Any) -> Change:
    if isinstance(value, str):
        swapped = _SWAPPED_TYPES.get(value, "boolean")
        holder["type"] = swapped
        return Change(copied, swapped)
    names = list(value) if isinstance(value, list) else []
    extra = next(name for name in ("boolean", "string", "number", "null") if name not in names)
    holder["type"] = [*names, extra]
    return Change(copied, extra)


def _changed_value(value: Any) -> tuple[Any, str | None]:
    """Another value of the same kind, and its text: strings get `MARK`, numbers 7 more, booleans flip."""
    if isinstance(value, bool):
        return not value, None
    if _is_number(value):
        return value + 7, _number_text(value + 7)
    if isinstance(value, str):
        return value + MARK, MARK
    if isinstance(value, list):
        return [*value, MARK], MARK
    if isinstance(value, dict):
        return {**value, MARK.lower(): MARK}, MARK
    return MARK, MARK  # null


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number_text(value: int | float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _copied_to(schema: dict[str, Any], where: Path) -> tuple[dict[str, Any], Any]:
    """A copy of `schema` in which the containers on the way to `where`, and the schema there, are new objects;
    everything else is shared with `schema`, which is never changed."""
    root = copy.copy(schema)
    holder: Any = root
    for step in where:
        holder[step] = copy.copy(holder[step])
        holder = holder[step]
    return root, holder


def _holder(schema: dict[str, Any], where: Path) -> Any:
    holder: Any = schema
    for step in where:
        holder = holder[step]
    return holder
