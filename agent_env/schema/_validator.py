"""Validate tool arguments against a published schema with a compiled, cached validator and model-readable errors."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import jsonschema_rs

from agent_env.errors import ToolArgumentError

_MAX_ERRORS = 8  # past this the model is better served fixing the first ones and calling again
_MAX_VALUE_CHARS = 60


class ArgumentValidator:
    """A compiled validator for one input schema; `validate` raises `ToolArgumentError` naming every failing path."""

    __slots__ = ("_validator",)

    def __init__(self, schema: dict[str, Any]) -> None:
        self._validator = jsonschema_rs.validator_for(schema)

    def validate(self, tool_name: str, arguments: dict[str, Any]) -> None:
        """Raise `ToolArgumentError` unless `arguments` is valid; a valid call costs one compiled check."""
        if self._validator.is_valid(arguments):
            return
        problems = list(_describe(self._validator.iter_errors(arguments)))
        raise ToolArgumentError(format_problems(tool_name, problems))


def format_problems(tool_name: str, problems: Sequence[str]) -> str:
    """The message a model reads: one line per failing path, capped so it stays short enough to act on."""
    shown = list(dict.fromkeys(problems))[:_MAX_ERRORS]
    more = len(set(problems)) - len(shown)
    lines = [f"Invalid arguments for tool '{tool_name}'; fix these and call it again:"]
    lines += [f"- {problem}" for problem in shown]
    if more > 0:
        lines.append(f"- ... and {more} more")
    return "\n".join(lines)


@lru_cache(maxsize=1024)
def _compiled(canonical_schema: str) -> ArgumentValidator:
    return ArgumentValidator(json.loads(canonical_schema))


def validator_for(schema: dict[str, Any]) -> ArgumentValidator:
    """The compiled validator for `schema`, shared by every tool that publishes the same schema."""
    return _compiled(json.dumps(schema, sort_keys=True))


def json_path(path: Iterable[str | int]) -> str:
    """Write an instance path the way a model reads it: `curves[0].points[1]`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.isidentifier():
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text or "(arguments)"


def short(value: Any) -> str:
    """A JSON rendering of a sent value, cut short so one huge argument cannot flood the message."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."


_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def json_type(value: Any) -> str:
    """The JSON type name of a Python value (`null` for None)."""
    return "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)


def _describe(errors: Iterable[jsonschema_rs.ValidationError]) -> Iterable[str]:
    for error in errors:
        yield from _describe_one(error)


def _describe_one(error: jsonschema_rs.ValidationError) -> Iterable[str]:
    kind, path, sent = error.kind, json_path(error.instance_path), error.instance
    if isinstance(
        kind, jsonschema_rs.ValidationErrorKind.AnyOf | jsonschema_rs.ValidationErrorKind.OneOfNotValid
    ):
        branch = _closest_branch(kind.context, len(error.instance_path))
        if branch is not None:
            yield from _describe(branch)
            return
        expected = " or ".join(_branch_summary(branch) for branch in kind.context)
        yield f"{path}: expected {expected}; got {json_type(sent)} {short(sent)}"
    elif isinstance(kind, jsonschema_rs.ValidationErrorKind.Type):
        yield f"{path}: expected {' or '.join(kind.types)}; got {json_type(sent)} {short(sent)}"
    elif isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
        yield f"{path}: missing required property '{kind.property}'"
    elif isinstance(kind, jsonschema_rs.ValidationErrorKind.Enum):
        options = ", ".join(json.dumps(option) for option in kind.options)
        yield f"{path}: expected one of {options}; got {short(sent)}"
    elif isinstance(kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
        names = ", ".join(f"'{name}'" for name in kind.unexpected)
        yield f"{path}: unknown properties {names}; send only the properties the schema lists"
    else:
        message = error.message
        if len(message) > 2 * _MAX_VALUE_CHARS:
            message = message.replace(json.dumps(sent, separators=(",", ":")), short(sent))
        yield f"{path}: {message}"


def _closest_branch(branches: list[list[Any]], depth: int) -> list[Any] | None:
    """Of an anyOf's branches, the one the sent value was evidently meant for: the only one its type fits."""
    fitting = [branch for branch in branches if not any(_is_type_error_at(error, depth) for error in branch)]
    return fitting[0] if len(fitting) == 1 else None


def _is_type_error_at(error: jsonschema_rs.ValidationError, depth: int) -> bool:
    return (
        isinstance(
            error.kind, jsonschema_rs.ValidationErrorKind.Type | jsonschema_rs.ValidationErrorKind.Constant
        )
        and len(error.instance_path) == depth
    )


def _branch_summary(branch: list[Any]) -> str:
    for error in branch:
        if isinstance(error.kind, jsonschema_rs.ValidationErrorKind.Type):
            return " or ".join(error.kind.types)
    return "another shape"
