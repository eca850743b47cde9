"""JSON Schema in and out: build a tool's input schema, normalize it, check it, and validate arguments against it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import jsonschema_rs

from agent_env.schema._passes import PASSES, SchemaNormalizationError, normalize
from agent_env.schema._signature import ArgumentModel, Docstring, signature_schema, tool_parameters
from agent_env.schema._validator import ArgumentValidator, json_path, validator_for

__all__ = [
    "PASSES",
    "ArgumentModel",
    "ArgumentValidator",
    "Docstring",
    "SchemaNormalizationError",
    "check_schema",
    "fingerprint",
    "json_path",
    "normalize",
    "signature_schema",
    "tool_parameters",
    "validator_for",
]


def check_schema(schema: dict[str, Any]) -> None:
    """Raise `ValueError` naming the first place where `schema` breaks the JSON Schema 2020-12 metaschema."""
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as error:
        where = json_path(error.instance_path) if error.instance_path else "the schema's top level"
        raise ValueError(f"not a valid JSON Schema (2020-12) at {where}: {error.message}") from None


def fingerprint(value: Any) -> str:
    """A short, stable hash of any JSON value (a schema, a tool list): equal fingerprints, equal JSON."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]
