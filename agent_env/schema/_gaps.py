"""Say what a published tool leaves the model to guess: no description, undescribed parameters, open objects.

Nothing here is an error: a tool publishes and runs with any of these. But each is information its author most
likely meant the model to have (a docstring section misspelt `Arg:`, a missing docstring, a `dict` where a model
was meant), lost without a word, so `agent-env check` lists them and the TRL factory logs them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

NO_DESCRIPTION = "no description"

WRITTEN_HERE = (
    "describe each tool and parameter in its docstring's Args:, and type an open object with a pydantic model"
)
"""How to fill the gaps of a tool written in Python: its docstring and types are what it publishes."""
PUBLISHED_ELSEWHERE = (
    "the server publishes none of it: its schema lacks `description` there, or an open object's keys; no docstring "
    "here can add them"
)
"""What to say of the gaps of a tool a server publishes (an MCP server's): only its server can fill them."""


def remedy(published_elsewhere: bool) -> str:
    """How a tool's gaps are filled, by where its description and schema were written (`Tool.published_elsewhere`):
    a docstring's advice means nothing for a third-party server's tool."""
    return PUBLISHED_ELSEWHERE if published_elsewhere else WRITTEN_HERE


def gaps(tool: Mapping[str, Any]) -> list[str]:
    """What a published tool (`name`, `description`, `inputSchema`) leaves unsaid, one short phrase each:
    `no description`, `'isbn' undescribed` (a parameter without a description), `'options' is an open object`
    (an object whose keys and values are not shown, anywhere in the schema, by its path)."""
    found = [] if str(tool.get("description") or "").strip() else [NO_DESCRIPTION]
    schema = tool.get("inputSchema")
    if not isinstance(schema, Mapping):
        return found
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        found += [
            f"'{name}' undescribed"
            for name, value in properties.items()
            if isinstance(value, Mapping) and not str(value.get("description") or "").strip()
        ]
    found += [f"'{path}' is an open object" for path in _open_objects(schema, "")]
    return found


def _open_objects(schema: Any, path: str) -> Iterator[str]:
    """The paths of the objects under `schema` that show the model neither their keys nor their values' schema."""
    if not isinstance(schema, Mapping):
        return
    if path and _is_open_object(schema):
        yield path
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, value in properties.items():
            yield from _open_objects(value, f"{path}.{name}" if path else str(name))
    for key in ("items", "additionalProperties"):
        yield from _open_objects(schema.get(key), f"{path}[]" if key == "items" else f"{path}.*")
    for key in ("prefixItems", "anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        for branch in branches if isinstance(branches, list) else ():
            yield from _open_objects(branch, f"{path}[]" if key == "prefixItems" else path)


def _is_open_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    extra = schema.get("additionalProperties", True)
    return (
        is_object
        and not schema.get("properties")
        and not schema.get("patternProperties")
        and (extra is True or extra == {})
    )
