"""Validate tool arguments against a published schema with a compiled, cached validator and model-readable errors."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import jsonschema_rs

from agent_env.errors import ToolArgumentError
from agent_env.schema._describe import ReadingOrder, bulleted, describe, json_path, short

__all__ = ["MAX_DEPTH", "ArgumentValidator", "format_problems", "json_path", "short", "validator_for"]

MAX_DEPTH = 100
"""The deepest nesting of arguments whose errors are described; jsonschema-rs cannot report errors in values
nested 256 levels deep, and no published schema needs a tenth of this."""
MAX_DESCRIBED_VALUES = 10_000
"""Past this many JSON values, invalid arguments are described from a cut-down copy: jsonschema-rs collects every
error of an `anyOf` branch before it reports one, which for a million bad array items takes seconds."""
_KEPT_ITEMS = 32


class ArgumentValidator:
    """A compiled validator for one input schema; `validate` raises `ToolArgumentError` naming every failing path."""

    __slots__ = ("_kept_items", "_schema", "_validator")

    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema
        self._validator = jsonschema_rs.validator_for(schema)
        self._kept_items = max([_KEPT_ITEMS, *_min_items(schema)])  # a cut array never falls below a minItems

    def validate(self, tool_name: str, arguments: dict[str, Any]) -> None:
        """Raise `ToolArgumentError` unless `arguments` is valid; a valid call costs one compiled check."""
        try:
            if self._validator.is_valid(arguments):
                return
        except ValueError:  # a value of no JSON type (a set, bytes): `problems` names it
            pass
        raise ToolArgumentError(format_problems(tool_name, self.problems(arguments)))

    def problems(self, arguments: Any) -> list[str]:
        """What is wrong with invalid `arguments`, one line per failing path, at a cost bounded by their size."""
        shape = Shape.of(arguments)
        if shape.too_deep is not None:
            return [shape.too_deep]
        checked, note = arguments, []
        if shape.values > MAX_DESCRIBED_VALUES:
            checked = _cut(arguments, self._kept_items, [MAX_DESCRIBED_VALUES])
            note = [
                f"(arguments): hold over {MAX_DESCRIBED_VALUES:,} values, so the problems below come from the first "
                f"{self._kept_items} items of each array"
            ]
        try:
            errors = self._validator.iter_errors(checked)
            described = describe(
                errors, self._schema, skip=shape.non_finite_paths(), order=ReadingOrder(checked)
            )
            found = [*shape.non_finite, *described]
        except ValueError as error:  # a value jsonschema-rs cannot read: a set, bytes, a key not a string
            return shape.unrepresentable or [f"(arguments): not JSON values ({error})"]
        if not found:
            return [
                f"(arguments): do not match the schema, and hold over {MAX_DESCRIBED_VALUES:,} values, too many to "
                "describe; send fewer"
            ]
        return note + found


def _min_items(schema: Any) -> list[int]:
    """Every `minItems` in a schema."""
    if isinstance(schema, dict):
        found = [schema["minItems"]] if isinstance(schema.get("minItems"), int) else []
        return found + [n for value in schema.values() for n in _min_items(value)]
    if isinstance(schema, list):
        return [n for value in schema for n in _min_items(value)]
    return []


def _cut(value: Any, kept_items: int, budget: list[int]) -> Any:
    """A copy of `value` whose arrays keep their first `kept_items` items, of at most `budget[0]` values in all."""
    budget[0] -= 1
    if budget[0] <= 0:
        return [] if isinstance(value, list | tuple) else {} if isinstance(value, dict) else value
    if isinstance(value, dict):
        return {
            key: _cut(item, kept_items, budget) for key, item in itertools.islice(value.items(), budget[0])
        }
    if isinstance(value, list | tuple):
        return [_cut(item, kept_items, budget) for item in value[:kept_items] if budget[0] > 0]
    return value


class Shape:
    """What a walk over arguments finds that the schema validator cannot say well: nesting too deep to describe,
    non-finite numbers (JSON has no NaN or Infinity), values of no JSON type; and how many values there are."""

    __slots__ = ("non_finite", "non_finite_at", "too_deep", "unrepresentable", "values")

    def __init__(self) -> None:
        self.too_deep: str | None = None
        self.non_finite: list[str] = []
        self.non_finite_at: set[tuple[str | int, ...]] = set()
        self.unrepresentable: list[str] = []
        self.values = 0

    def non_finite_paths(self) -> set[str]:
        """The paths of the non-finite numbers, as error lines name them."""
        return {json_path(path) for path in self.non_finite_at}

    @classmethod
    def of(cls, arguments: Any) -> Shape:
        """Walk `arguments` iteratively, stopping once they are too deep or too large to describe."""
        shape = cls()
        stack: list[tuple[Any, tuple[str | int, ...]]] = [(arguments, ())]
        while stack and shape.values <= MAX_DESCRIBED_VALUES:
            value, path = stack.pop()
            shape.values += 1
            if len(path) > MAX_DEPTH:
                shape.too_deep = (
                    f"{json_path(path[:3])}...: nested more than {MAX_DEPTH} levels deep; send the shape the "
                    "schema describes"
                )
                break
            if isinstance(value, dict):
                for key, item in itertools.islice(value.items(), MAX_DESCRIBED_VALUES):
                    if isinstance(key, str):
                        stack.append((item, (*path, key)))
                    else:
                        shape.unrepresentable.append(f"{json_path(path)}: key {short(key)} is not a string")
            elif isinstance(value, list | tuple):
                stack.extend(
                    (item, (*path, index)) for index, item in enumerate(value[:MAX_DESCRIBED_VALUES])
                )
            elif isinstance(value, float) and not math.isfinite(value):
                shape.non_finite.append(
                    f"{json_path(path)}: expected a finite number; got {value} (JSON has no NaN or Infinity)"
                )
                shape.non_finite_at.add(path)
            elif not isinstance(value, str | int | float | type(None)):
                shape.unrepresentable.append(f"{json_path(path)}: {type(value).__name__} is not a JSON value")
        return shape


def format_problems(tool_name: str, problems: Sequence[str]) -> str:
    """The message a model reads: one line per failing path, capped so it stays short enough to act on."""
    return "\n".join(
        [f"Invalid arguments for tool '{tool_name}'; fix these and call it again:", *bulleted(problems)]
    )


@lru_cache(maxsize=1024)
def _compiled(canonical_schema: str) -> ArgumentValidator:
    return ArgumentValidator(json.loads(canonical_schema))


def validator_for(schema: dict[str, Any]) -> ArgumentValidator:
    """The compiled validator for `schema`, shared by every tool that publishes the same schema."""
    return _compiled(json.dumps(schema, sort_keys=True))
