"""Gemma 4: lower a published schema to one that Gemma 4's chat templates render without loss.

Gemma 4's `format_function_declaration` writes a tool in its own syntax. At the top level it shows only
`properties`, `required` and `type`. For each property it shows `description`, an upper-cased `type`, a string
`enum`, `nullable`, `items` (for arrays) and `properties`/`required` (for objects), and drops everything else:
`anyOf` becomes an empty type, and `default`, bounds, lengths, counts, `pattern`, `format`, `const` and non-string
enums vanish. Inside an array's `items` it prints every key as written, except `properties`, whose entries are
properties again. The lowering keeps what the template shows and restates the rest in the nearest `description`.

The template revisions TRL ships as gemma4_v2 and gemma4_v3 also drop any property named `type`, `description`,
`properties`, `required` or `nullable`; a lowering cannot rename a parameter, so those are refused by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agent_env.training.families._memo import by_identity
from agent_env.training.families._refusal import Refusal
from agent_env.training.families._restate import sentences, whole

NAME = "gemma4"
MARKERS = ("format_function_declaration", "<|tool>")
"""Text every Gemma 4 chat template carries (gemma4 to gemma4_v5 and diffusion_gemma as TRL ships them)."""

STANDARD_KEYS = ("description", "type", "properties", "required", "nullable")
"""The keys `format_parameters` treats as schema keywords; gemma4_v2/v3 drop properties named like them."""

_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})
_TOP_SHOWN = frozenset({"type", "properties", "required"})


def lower(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The tool as Gemma 4 should be shown it: same name, each constraint either shown or said in words."""
    schema = tool["inputSchema"]
    dropped = [keyword for keyword in schema if keyword not in _TOP_SHOWN]
    lowered: dict[str, Any] = {"type": "object"}
    if isinstance(schema.get("properties"), Mapping):
        lowered["properties"] = {name: _property(sub) for name, sub in schema["properties"].items()}
    if "required" in schema:
        lowered["required"] = schema["required"]
    description = _join(tool["description"], _top_sentences(schema, dropped))
    return {"name": tool["name"], "description": description, "inputSchema": lowered}


def _top_sentences(schema: Mapping[str, Any], dropped: list[str]) -> list[str]:
    said = sentences(schema, [keyword for keyword in dropped if keyword != "description"])
    said = [sentence.replace("properties", "arguments") for sentence in said]
    if "description" in dropped and schema["description"]:
        said.insert(0, f"Arguments: {schema['description']}")
    return said


@by_identity
def _property(schema: Any) -> Any:
    """One property: what `format_parameters` shows stays; the rest moves into its description."""
    if not isinstance(schema, Mapping):
        return {"description": whole(schema)}
    schema = _nullable(schema)
    kept: dict[str, Any] = {}
    declared = schema.get("type")
    if isinstance(declared, str) and declared in _TYPES:
        kept["type"] = declared
    elif "enum" in schema and _all_strings(schema["enum"]) and declared is None:
        kept["type"] = "string"  # a string enum without a type: the type it implies, so the enum shows
    shown = {"description", "nullable"}
    if kept.get("type") == "string" and _all_strings(schema.get("enum")):
        kept["enum"] = schema["enum"]
        shown.add("enum")
    items = schema.get("items")
    if kept.get("type") == "array" and isinstance(items, Mapping) and items and "prefixItems" not in schema:
        kept["items"] = _items(items)
        shown.add("items")
    if (
        kept.get("type") == "object"
        and isinstance(schema.get("properties"), Mapping)
        and schema["properties"]
    ):
        kept["properties"] = {name: _property(sub) for name, sub in schema["properties"].items()}
        shown.add("properties")
        if schema.get("required"):
            kept["required"] = schema["required"]
            shown.add("required")
    if schema.get("nullable") is True:
        kept["nullable"] = True
    dropped = [keyword for keyword in schema if keyword not in shown and keyword != "type"]
    if declared is not None and "type" not in kept and "enum" not in kept:
        dropped.insert(0, "type")
    said = _restated(schema, dropped)
    description = _join(schema.get("description", ""), said)
    return {**({"description": description} if description else {}), **kept}


def _restated(schema: Mapping[str, Any], dropped: list[str]) -> list[str]:
    """Sentences for what the property's own line will not show."""
    rest = [keyword for keyword in dropped if keyword != "description"]
    if "type" not in rest:
        return sentences(schema, rest)
    # A type the template cannot write (a list of types, or none it knows): say the whole value in words.
    said = whole({key: schema[key] for key in rest if key != "default"})
    return [said, *sentences(schema, [key for key in rest if key == "default"])]


def _items(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An array's `items`: printed key by key as written, but for `properties`, whose entries are properties,
    and null values, which the template skips."""
    kept: dict[str, Any] = {}
    nulls = [key for key, value in schema.items() if value is None]
    for key, value in schema.items():
        if value is None:
            continue
        if key == "properties" and isinstance(value, Mapping):
            kept[key] = {name: _property(sub) for name, sub in value.items()}
        else:
            kept[key] = value
    said = sentences(schema, nulls)
    if said:
        kept["description"] = _join(schema.get("description") or "", said)
    return kept


def _nullable(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """`X or null` in Gemma's own words: X with `nullable: true` (from a type list or an anyOf with null)."""
    declared = schema.get("type")
    if isinstance(declared, list) and "null" in declared and len(declared) == 2:
        other = next(name for name in declared if name != "null")
        return {**schema, "type": other, "nullable": True}
    branches = schema.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        other = next(branch for branch in branches if branch != {"type": "null"})
        if isinstance(other, Mapping) and not other.keys() & schema.keys() - {"anyOf"}:
            merged = {**{k: v for k, v in schema.items() if k != "anyOf"}, **other, "nullable": True}
            return merged
    return schema


def _all_strings(values: Any) -> bool:
    return isinstance(values, list) and bool(values) and all(isinstance(value, str) for value in values)


def _join(description: str, said: list[str]) -> str:
    parts = [description.strip()] if description and description.strip() else []
    if parts and not parts[0].endswith((".", "!", "?", ":")) and said:
        parts[0] += "."
    return " ".join(parts + said)


def keyword_named_properties(lowered: Mapping[str, Any], where: str = "") -> list[str]:
    """The properties a lowered schema shows as properties whose names are schema keywords (`type`, ...): the
    names gemma4_v2 and gemma4_v3 leave out of the prompt."""
    found: list[str] = []
    properties = lowered.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            path = f"{where}.{name}" if where else str(name)
            if name in STANDARD_KEYS:
                found.append(path)
            if isinstance(sub, Mapping):
                found += keyword_named_properties(sub, path)
    items = lowered.get("items")
    if isinstance(items, Mapping):
        found += keyword_named_properties(items, f"{where}[]")
    return found


_PROBE_MARK = "Qz7-probe"


def refusals(render: Callable[[Mapping[str, Any]], str], shown: list[dict[str, Any]]) -> list[Refusal]:
    """The parameters a template revision that drops keyword-named properties (gemma4_v2, gemma4_v3) would leave
    out, found by rendering a probe with a property named `type` once."""
    probe = {
        "name": "probe",
        "description": "",
        "inputSchema": {
            "type": "object",
            "properties": {"type": {"type": "string", "description": _PROBE_MARK}},
        },
    }
    if _PROBE_MARK in render(probe):
        return []
    return [
        Refusal(
            tool["name"],
            f"parameter '{path}' is left out of the prompt by this Gemma 4 template revision, which drops "
            f"parameters named {', '.join(STANDARD_KEYS)}; train with a revision that keeps them (TRL's gemma4, "
            "gemma4_v4 or gemma4_v5), or rename it (a tool of an MCP server, whose names are its own: leave the "
            "tool out with tools=[...])",
            path,
        )
        for tool in shown
        for path in keyword_named_properties(tool["inputSchema"])
    ]
