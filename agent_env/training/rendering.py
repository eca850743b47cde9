"""Render tools through the real `apply_chat_template` under any chat template, and judge what the model sees."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from agent_env.training.templates import TemplateSource, resolve_template


def render(conversation: list[dict[str, Any]], tools: list[Any] | None, template: TemplateSource) -> str:
    """The prompt text for `conversation` with `tools`, ready for the model's reply, under `template` (a shipped
    name, a file, a tokenizer folder, a tokenizer or a `ChatTemplate`)."""
    return resolve_template(template).render(conversation, tools)


def tojson(value: Any) -> str:
    """JSON exactly as transformers' chat-template `tojson` filter writes it by default."""
    return json.dumps(value, ensure_ascii=False)


def shows_exactly(prompt: str, published: dict[str, Any]) -> bool:
    """Whether the prompt shows a tool as published: one JSON object in it (any layout) holds the tool's name and
    its input schema unchanged, and the description is there too (in that object, or as text)."""
    for value in _parsed(prompt):
        holder = _innermost_holder(value, published["inputSchema"], published["name"])[2]
        if holder is not None:
            return published["description"] in prompt or _holds(holder, published["description"])
    return False


@lru_cache(maxsize=8)
def _parsed(prompt: str) -> tuple[Any, ...]:
    """The JSON values of a prompt, read once however many tools are looked for in it."""
    return tuple(json_values(prompt))


def _innermost_holder(value: Any, schema: Any, name: str) -> tuple[bool, bool, dict[str, Any] | None]:
    """Whether `value` holds `schema` and `name`, and the innermost object in it that holds both (one pass)."""
    if value == schema:
        return True, value == name, None
    if value == name:
        return False, True, None
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    has_schema = has_name = False
    for child in children:
        child_schema, child_name, holder = _innermost_holder(child, schema, name)
        if holder is not None:
            return True, True, holder
        has_schema, has_name = has_schema or child_schema, has_name or child_name
    holder = value if has_schema and has_name and isinstance(value, dict) else None
    return has_schema, has_name, holder


def json_values(text: str) -> Iterator[Any]:
    """Every JSON object written in `text`, outermost first."""
    decoder = json.JSONDecoder()
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except ValueError:
            index = text.find("{", index + 1)
            continue
        yield value
        index = text.find("{", end)


def _holds(value: Any, target: Any) -> bool:
    """Whether `target` is `value` or lies anywhere inside it."""
    if value == target:
        return True
    if isinstance(value, dict):
        return any(_holds(child, target) for child in value.values())
    if isinstance(value, list):
        return any(_holds(child, target) for child in value)
    return False
