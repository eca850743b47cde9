"""Check a schema before anything walks it: JSON values only, nested at most `MAX_SCHEMA_DEPTH` deep, and valid
under the metaschema of the dialect it declares (2020-12 when it declares none), with every problem named by its
place."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import jsonschema_rs

from agent_env.schema._describe import ReadingOrder, bulleted, describe, json_path, short
from agent_env.schema._dialects import Dialect, UnknownDialectError, dialect_of

MAX_SCHEMA_DEPTH = 100
"""The deepest a schema may nest (objects and arrays, refs inlined). Walks over schemas recurse; past this they
would not stop at a clear error, and a prompt has no use for a schema a tenth this deep."""


class SchemaCheckError(ValueError):
    """A schema is not a valid JSON Schema of the dialect it declares; the message lists every problem with its
    place."""


def check_schema(schema: Any) -> None:
    """Raise `SchemaCheckError` naming every place where `schema` is not JSON, nests too deep, declares a dialect
    agent_env does not read, or breaks its dialect's metaschema (2020-12's when it declares none)."""
    try:
        dialect = dialect_of(schema)
    except UnknownDialectError as unknown:
        raise SchemaCheckError(str(unknown)) from None
    problems = schema_problems(schema, dialect)
    if len(problems) == 1:
        raise SchemaCheckError(f"not a valid JSON Schema ({dialect.name}) at {problems[0]}")
    if problems:
        raise SchemaCheckError(
            "\n".join([f"not a valid JSON Schema ({dialect.name}); fix these:", *bulleted(problems)])
        )


def schema_problems(schema: Any, dialect: Dialect) -> list[str]:
    """Every problem of `schema` as a schema of `dialect`, one `place: problem` line each, in the order the schema
    reads.

    What is not JSON is named first; the metaschema then judges the rest, with those values left out, so one NaN
    does not hide a misspelt type. A schema nested too deep is judged by its depth alone.
    """
    problems: list[str] = []
    try:
        plain = _plain_json(schema, (), problems)
    except _TooDeep as deep:
        return [*problems, too_deep(deep.path)]
    named = {problem.partition(": ")[0] for problem in problems}
    errors = _metaschema(dialect.uri).iter_errors(plain)
    for line in dict.fromkeys(describe(errors, order=ReadingOrder(plain))):
        line = line.replace("(arguments): ", "the top level: ", 1) if line.startswith("(") else line
        if line.partition(": ")[0] not in named:  # a value left out is already named where it was
            problems.append(line)
    return problems


class _TooDeep(Exception):
    def __init__(self, path: tuple[str | int, ...]) -> None:
        self.path = path


def _plain_json(value: Any, path: tuple[str | int, ...], problems: list[str]) -> Any:
    """`value` with what is not JSON left out (a value becomes null, a key is dropped), each place noted in
    `problems`; raises `_TooDeep` past `MAX_SCHEMA_DEPTH`, so the recursion is bounded."""
    if len(path) > MAX_SCHEMA_DEPTH:
        raise _TooDeep(path)
    if isinstance(value, dict):
        plain = {}
        for key, item in value.items():
            if isinstance(key, str):
                plain[key] = _plain_json(item, (*path, key), problems)
            else:
                problems.append(f"{schema_place(path)}: key {short(key)} is not a string; names are strings")
        return plain
    if isinstance(value, list):
        return [_plain_json(item, (*path, index), problems) for index, item in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        problems.append(
            f"{schema_place(path)}: expected a finite number; got {value} (JSON has no NaN or Infinity)"
        )
        return None
    if not isinstance(value, str | int | float | type(None)):
        problems.append(f"{schema_place(path)}: {type(value).__name__} is not a JSON value")
        return None
    return value


def too_deep(path: tuple[str | int, ...], why: str = "") -> str:
    """The problem of a schema that nests past `MAX_SCHEMA_DEPTH` at `path`."""
    return f"{schema_place(path[:4])}...: nested more than {MAX_SCHEMA_DEPTH} levels deep{why}; flatten it"


def schema_place(path: tuple[str | int, ...]) -> str:
    """Where in a schema `path` is, as a message names it."""
    return json_path(path) if path else "the top level"


@cache
def _metaschema(uri: str) -> jsonschema_rs.Validator:
    """The metaschema of the dialect `uri` names as a compiled validator (bundled with jsonschema-rs: no network),
    checking formats, so a `pattern` that is no regular expression is refused here rather than when its validator
    is compiled. The metaschema is referred to from a schema of its own dialect, which jsonschema-rs resolves from
    its bundle."""
    return jsonschema_rs.validator_for({"$schema": uri, "$ref": uri}, validate_formats=True)
