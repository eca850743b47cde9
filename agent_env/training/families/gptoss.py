"""gpt-oss: lower a published schema to one its chat template renders without loss, and parse every call form.

The gpt-oss template (`render_tool_namespace`) writes each tool as a TypeScript function type. Only the top-level
parameters get their `// description` comment and `// default:` note; a nested object loses every description,
an array whose item type is longer than 50 characters becomes `any[]`, `anyOf` becomes `any`, `integer` becomes
`number`, and no bound, length, count, pattern or format is written. The lowering keeps a parameter as it is when
the template writes all of it, and otherwise says the whole parameter in words in its description, under a plain
type the template writes correctly.

The template also raises on an `enum` (or `oneOf`) parameter whose default is not a string; such a default is said
in words instead. It writes an enum's string default as it is, so `"null"`, `"0"` or `""` would read as null, zero or
nothing: such a default is given to it as JSON (`"null"`), which it then writes quoted.

Parsing: TRL 1.16's gpt-oss response template only reads a call written with the recipient before the channel
(`<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>`), the form this template renders. The
harmony format that gpt-oss was trained on, and real gpt-oss output, put it after the channel
(`<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>`): TRL would miss every such call without a
word. `response_template` is TRL's template with a call opener that reads every form.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from agent_env.training.families._memo import by_identity
from agent_env.training.families._restate import json_text, sentences, whole

NAME = "gptoss"
MARKERS = ("render_typescript_type", "render_tool_namespace")
"""Text the gpt-oss chat template carries (openai/gpt-oss-20b's, as TRL ships it)."""

TOOL_CALL_OPEN = (
    r"(?:<\|channel\|>commentary\s*)?to=functions\.(?P<name>[^\s<]+?)\s*"
    r"(?:<\|channel\|>commentary)?\s*(?:<\|constrain\|>)?\s*json<\|message\|>"
)
"""A call opener for every form gpt-oss writes: the recipient before or after the channel, with or without
`<|constrain|>`."""

_PLAIN_TYPES = frozenset({"string", "number", "boolean"})
_TOP_SHOWN = frozenset({"type", "properties", "required"})


def lower(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The tool as gpt-oss should be shown it: each parameter written in full, or said in words."""
    schema = tool["inputSchema"]
    lowered: dict[str, Any] = {"type": "object"}
    if isinstance(schema.get("properties"), Mapping):
        lowered["properties"] = {name: _parameter(sub) for name, sub in schema["properties"].items()}
    if "required" in schema:
        lowered["required"] = schema["required"]
    dropped = [keyword for keyword in schema if keyword not in _TOP_SHOWN and keyword != "description"]
    said = [sentence.replace("properties", "arguments") for sentence in sentences(schema, dropped)]
    if schema.get("description"):
        said.insert(0, f"Arguments: {schema['description']}")
    return {"name": tool["name"], "description": _join(tool["description"], said), "inputSchema": lowered}


@by_identity
def _parameter(schema: Any) -> Any:
    """One top-level parameter: as it is if the template writes all of it, else a plain type and words."""
    if not isinstance(schema, Mapping):
        return {"description": whole(schema)}
    if _written_in_full(schema):
        if "enum" in schema and _misread(schema.get("default")):
            return {
                **schema,
                "default": json_text(schema["default"]),
            }  # the line then reads `default: "null"`
        return dict(schema)
    value = {key: item for key, item in schema.items() if key not in ("description", "default")}
    said = [whole(value)]
    lowered: dict[str, Any] = {}
    declared = schema.get("type")
    if isinstance(declared, str) and declared in (*_PLAIN_TYPES, "integer", "array", "object"):
        lowered["type"] = declared  # `array` and `object` with nothing inside: written `any[]` and `object`
    elif isinstance(declared, list) and all(isinstance(name, str) for name in declared):
        lowered["type"] = declared
    if "default" in schema:
        lowered["default"] = schema["default"]
    description = _join(schema.get("description", ""), said)
    return {"description": description, **lowered}


def _written_in_full(schema: Mapping[str, Any]) -> bool:
    """Whether `render_typescript_type` writes this parameter with nothing left out."""
    keys = set(schema) - {"description"}
    declared = schema.get("type")
    if "default" in schema and "enum" in schema and not isinstance(schema["default"], str):
        return False  # the template would raise
    keys.discard("default")
    if declared == "string":
        enum = schema.get("enum")
        return keys <= {"type", "enum"} and (enum is None or _strings(enum))
    if declared in ("number", "boolean"):
        return keys == {"type"}
    if declared == "array":
        items = schema.get("items")
        return (
            keys == {"type", "items"}
            and isinstance(items, Mapping)
            and set(items) == {"type"}
            and (items["type"] in _PLAIN_TYPES)
        )
    if isinstance(declared, list):
        return keys == {"type"} and all(name in (*_PLAIN_TYPES, "null") for name in declared)
    return False


def _misread(default: Any) -> bool:
    """Whether the template's `// default: ` line, which writes an enum's string default as it is (not as JSON),
    would read as something else: `null`, `0` or `[1]` as JSON, `""` as nothing, spaces or a line break lost."""
    if not isinstance(default, str):
        return False
    if not default or default != default.strip() or "\n" in default:
        return True
    try:
        json.loads(default)
    except ValueError:
        return False
    return True


def _strings(values: Any) -> bool:
    return isinstance(values, list) and bool(values) and all(isinstance(value, str) for value in values)


def _join(description: str, said: list[str]) -> str:
    parts = [description.strip()] if description and description.strip() else []
    if parts and not parts[0].endswith((".", "!", "?", ":")) and said:
        parts[0] += "."
    return " ".join(parts + said)


def response_template(stock: Mapping[str, Any]) -> dict[str, Any]:
    """TRL's gpt-oss response template (`stock`) with a tool-call opener that reads every call form."""
    fixed = copy.deepcopy(dict(stock))
    fixed["fields"]["tool_calls"]["open_pattern"] = TOOL_CALL_OPEN
    return fixed
