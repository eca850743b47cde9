"""JSON Schema in and out: build a tool's input schema, normalize it, check it, and validate arguments against it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from agent_env.schema._check import MAX_SCHEMA_DEPTH, SchemaCheckError, check_schema
from agent_env.schema._dialects import DIALECTS, Dialect, dialect_of
from agent_env.schema._errors import SchemaNormalizationError
from agent_env.schema._passes import MAX_SCHEMA_NODES, PASSES, close_objects, normalize
from agent_env.schema._signature import ArgumentModel, Docstring, signature_schema
from agent_env.schema._validator import ArgumentValidator, json_path, validator_for

__all__ = [
    "DIALECTS",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "PASSES",
    "ArgumentModel",
    "ArgumentValidator",
    "Dialect",
    "Docstring",
    "SchemaCheckError",
    "SchemaNormalizationError",
    "check_schema",
    "close_objects",
    "dialect_of",
    "fingerprint",
    "json_path",
    "normalize",
    "signature_schema",
    "validator_for",
]


def fingerprint(value: Any) -> str:
    """A short, stable hash of any JSON value (a schema, a tool list): equal fingerprints, equal JSON."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]
