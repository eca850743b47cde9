"""Describe jsonschema-rs validation errors as short lines that name the JSON path and say what to send instead."""

from __future__ import annotations

import json
import math
import reprlib
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import jsonschema_rs

MAX_PROBLEMS = 8
"""Lines shown of a longer list of problems; past this the reader is better served fixing the first ones."""
_MAX_VALUE_CHARS = 60
_MAX_PATH_CHARS = 200
_MAX_NAMES = 20

_Kind = jsonschema_rs.ValidationErrorKind


def describe(
    errors: Iterable[jsonschema_rs.ValidationError],
    schema: Any = None,
    skip: Collection[str] = (),
    order: ReadingOrder | None = None,
) -> Iterable[str]:
    """One line per error (`path: problem`), leaving out lines about the paths in `skip` (described otherwise).

    `schema` is the schema the errors come from; with it, an unknown key's line says which keys its object takes.
    `order`, given the instance, puts the lines in reading order, the errors inside an `anyOf` branch included.
    """
    for error in sorted(errors, key=order) if order is not None else errors:
        for line in _describe_one(error, schema, order):
            if line.partition(": ")[0] not in skip:
                yield line


class ReadingOrder:
    """Sort key putting errors in the order their paths appear in the arguments (a parent before its items), so the
    message reads the same whatever order a jsonschema-rs version reports in; errors on one path keep that order."""

    def __init__(self, root: Any) -> None:
        self._root = root
        self._key_positions: dict[int, dict[Any, int]] = {}

    def __call__(self, error: jsonschema_rs.ValidationError) -> list[int]:
        path = list(error.instance_path)
        if isinstance(error.kind, _Kind.AdditionalProperties) and error.kind.unexpected:
            # its line names the unknown key, so it reads at that key's place
            path.append(error.kind.unexpected[0])
        positions: list[int] = []
        value = self._root
        for step in path:
            if isinstance(value, dict):
                if id(value) not in self._key_positions:
                    self._key_positions[id(value)] = {key: index for index, key in enumerate(value)}
                positions.append(self._key_positions[id(value)].get(step, len(value)))
                value = value.get(step)
            elif isinstance(value, list) and isinstance(step, int):
                positions.append(step)
                value = value[step] if step < len(value) else None
            else:
                positions.append(0)
                value = None
        return positions


def bulleted(problems: Sequence[str]) -> list[str]:
    """`problems` as `- ` lines, duplicates dropped, at most `MAX_PROBLEMS` of them and a count of the rest."""
    unique = list(dict.fromkeys(problems))
    lines = [f"- {problem}" for problem in unique[:MAX_PROBLEMS]]
    if len(unique) > MAX_PROBLEMS:
        lines.append(f"- ... and {len(unique) - MAX_PROBLEMS} more")
    return lines


def _describe_one(
    error: jsonschema_rs.ValidationError, schema: Any, order: ReadingOrder | None
) -> Iterable[str]:
    kind, path, sent = error.kind, json_path(error.instance_path), error.instance
    if isinstance(kind, _Kind.AnyOf | _Kind.OneOfNotValid):
        branch = _closest_branch(kind.context, len(error.instance_path))
        if branch is not None:
            yield from describe(branch, schema, order=order)
            return
        expected = " or ".join(dict.fromkeys(_branch_summary(branch) for branch in kind.context))
        yield f"{path}: expected {expected}; got {got(sent)}"
    elif isinstance(kind, _Kind.Type):
        yield f"{path}: expected {' or '.join(kind.types)}; got {got(sent)}"
    elif isinstance(kind, _Kind.Required):
        yield f"{path}: missing required property '{kind.property}'"
    elif isinstance(kind, _Kind.Enum):
        options = ", ".join(json.dumps(option) for option in kind.options)
        yield f"{path}: expected one of {options}; got {short(sent)}"
    elif isinstance(kind, _Kind.AdditionalProperties):
        owner = _subschema(schema, error.schema_path[:-1])
        for name in kind.unexpected:
            yield f"{json_path([*error.instance_path, name])}: {unknown_key(error.instance_path, owner)}"
    else:
        message = error.message
        if len(message) > 2 * _MAX_VALUE_CHARS:
            message = message.replace(json.dumps(sent, separators=(",", ":")), short(sent))
        yield f"{path}: {message}"


def unknown_key(path: Sequence[str | int], owner: Any) -> str:
    """What to say of a key that the object at `path`, whose schema is `owner`, does not take."""
    if path:
        return f"unknown property; {json_path(path)} {takes(owner, 'properties')}"
    return f"unknown argument; this tool {takes(owner, 'arguments')}"


def takes(schema: Any, noun: str) -> str:
    """`takes a, b` (the property names of an object schema), `takes no <noun>`, or `takes <noun> of any name`."""
    if not isinstance(schema, dict):
        return f"takes {noun} of any name"
    names = sorted(schema.get("properties") or {})
    patterns = list(schema.get("patternProperties") or {})
    shown = names[:_MAX_NAMES] + (
        [f"... ({len(names) - _MAX_NAMES} more)"] if len(names) > _MAX_NAMES else []
    )
    if patterns:
        shown.append("names matching " + " or ".join(short(pattern) for pattern in patterns[:3]))
    if schema.get("additionalProperties", True) is not False:
        return f"takes {', '.join(shown)}, and more" if shown else f"takes {noun} of any name"
    return f"takes {', '.join(shown)}" if shown else f"takes no {noun}"


def _subschema(schema: Any, steps: Iterable[str | int]) -> Any:
    """The part of `schema` at `steps` (a jsonschema-rs schema path), or None if it is not there."""
    for step in steps:
        if isinstance(schema, dict) and isinstance(step, str):
            schema = schema.get(step)
        elif isinstance(schema, list) and isinstance(step, int) and 0 <= step < len(schema):
            schema = schema[step]
        else:
            return None
    return schema


def _closest_branch(branches: list[list[Any]], depth: int) -> list[Any] | None:
    """Of an anyOf's branches, the one the sent value was evidently meant for: the only one that fits it best."""
    fits = [_fit(branch, depth) for branch in branches]
    best = max(fits, default=0)
    return branches[fits.index(best)] if best > 0 and fits.count(best) == 1 else None


def _fit(branch: list[Any], depth: int) -> int:
    """How well a value fits an anyOf branch: 0 its type is wrong, 1 its value is not one listed, 2 a part fails."""
    here = [error.kind for error in branch if len(error.instance_path) == depth]
    if any(isinstance(kind, _Kind.Type | _Kind.Constant) for kind in here):
        return 0
    return 1 if any(isinstance(kind, _Kind.Enum) for kind in here) else 2


def _branch_summary(branch: list[Any]) -> str:
    for error in branch:
        if isinstance(error.kind, _Kind.Type):
            return " or ".join(error.kind.types)
    return "another shape"


def json_path(path: Iterable[str | int]) -> str:
    """Write an instance path the way a model reads it: `curves[0].points[1]` (and `properties.n.$ref`).

    A long key is cut short, and so is a long path (in its middle), so no name can flood the message.
    """
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif len(part) > _MAX_VALUE_CHARS:
            text += f"[{short(part)}]"
        elif part.isidentifier() or (part[:1] == "$" and part[1:].isidentifier()):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    if len(text) > _MAX_PATH_CHARS:
        half = (_MAX_PATH_CHARS - 3) // 2
        text = f"{text[:half]}...{text[-half:]}"
    return text or "(arguments)"


def short(value: Any) -> str:
    """A JSON rendering of a sent value, cut short so one huge argument cannot flood the message."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = reprlib.repr(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."


def got(value: Any) -> str:
    """A sent value with its JSON type, as a message says what it got: `string "x"`, `null`."""
    return "null" if value is None else f"{json_type(value)} {short(value)}"


_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def json_type(value: Any) -> str:
    """The JSON type name of a Python value (`null` for None)."""
    return "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)
