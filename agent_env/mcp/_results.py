"""An MCP tool result as the model reads it: text joined, structured content as JSON, media named, long ones cut.

- Text blocks are joined with newlines.
- `structuredContent` is shown as compact JSON, once: a text block whose JSON equals it (or its only value) is its
  serialization (the spec asks servers to send both) and is not shown; other text stays, before it. An object of one
  string or number that the text already says (server-filesystem's `{"content": text}`, FastMCP's `{"result": 5}`)
  is not shown at all.
- Images, audio and resources are never dropped silently: each is named with its type and size, and an embedded
  text resource is shown with its text.
- A result longer than the limit is cut, with a note that says how long it was and why it was cut.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_RESULT_CHARS = 20_000
"""The longest tool result the model reads, in characters; the rest is cut with a note (`max_result_chars=`)."""


@dataclass(frozen=True)
class ToolResult:
    """A server's answer to one call, as agent_env read it.

    Attributes:
        text: What the model reads (cut to the limit).
        structured: The result's `structuredContent`, or None.
        is_error: Whether the server flagged it `isError`.
        content: The content blocks as the server sent them (JSON objects).
    """

    text: str
    structured: Any
    is_error: bool
    content: list[dict[str, Any]]

    def json(self) -> Any:
        """The result as JSON: its structured content, else its text blocks (whole, never cut) parsed as JSON.

        Raises:
            ValueError: It has no structured content and its text is not JSON.
        """
        if self.structured is not None:
            return self.structured
        return json.loads(
            "\n".join(str(block.get("text", "")) for block in self.content if block.get("type") == "text")
        )


def read_result(result: Any, max_chars: int = DEFAULT_MAX_RESULT_CHARS) -> ToolResult:
    """A `CallToolResult` of the MCP SDK as a `ToolResult`."""
    blocks = [_dump(block) for block in result.content or []]
    structured = result.structured_content
    text = cut(result_text(blocks, structured), max_chars)
    return ToolResult(text=text, structured=structured, is_error=bool(result.is_error), content=blocks)


def result_text(blocks: list[dict[str, Any]], structured: Any) -> str:
    """The text of a result's content blocks and structured content, as the module docstring describes."""
    texts = [str(block.get("text", "")) for block in blocks if block.get("type") == "text"]
    if structured is None or _wraps(structured, "\n".join(texts)):
        return "\n".join(describe(block) for block in blocks)
    parts = [
        describe(block)
        for block in blocks
        if not (block.get("type") == "text" and _serializes(str(block.get("text", "")), structured))
    ]
    parts.append(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(parts)


def describe(block: dict[str, Any]) -> str:
    """One content block as text: text as it is, anything else named with what it holds."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {block.get('mimeType') or 'unknown type'}, {_decoded_size(block.get('data'))}]"
    if kind == "resource":
        resource = block.get("resource") or {}
        where = f"{resource.get('uri', '?')}" + (
            f" ({resource['mimeType']})" if resource.get("mimeType") else ""
        )
        if "text" in resource:
            return f"[resource {where}]\n{resource['text']}"
        return f"[resource {where}, {_decoded_size(resource.get('blob'))}]"
    if kind == "resource_link":
        name = block.get("title") or block.get("name") or "?"
        details = [
            block.get("mimeType"),
            f"{block['size']:,} bytes" if isinstance(block.get("size"), int) else None,
        ]
        shown = ", ".join(detail for detail in details if detail)
        about = f": {block['description']}" if block.get("description") else ""
        return f"[resource link: {name} at {block.get('uri', '?')}{f' ({shown})' if shown else ''}{about}]"
    return f"[{kind or 'unknown'} content: {json.dumps(block, ensure_ascii=False)[:200]}]"


def cut(text: str, max_chars: int) -> str:
    """`text`, or its first `max_chars` characters with a note saying it was cut."""
    if len(text) <= max_chars:
        return text
    return (
        f"{text[:max_chars]}\n[agent_env cut this result: it has {len(text):,} characters, and only the first "
        f"{max_chars:,} are shown (max_result_chars)]"
    )


def _dump(block: Any) -> dict[str, Any]:
    if isinstance(block, dict):
        return block
    dumped: dict[str, Any] = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def _serializes(text: str, structured: Any) -> bool:
    """Whether `text` is JSON whose value is `structured`, or the only value of it (any formatting): server-memory
    answers `{"entities": [...]}` with the text of the list."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return False
    try:
        value = json.loads(stripped)
    except ValueError:
        return False
    return bool(value == structured or (_single(structured) and value == next(iter(structured.values()))))


def _wraps(structured: Any, text: str) -> bool:
    """Whether `structured` is an object of one string or number that `text` already says (server-filesystem's
    `{"content": text}`, FastMCP's `{"result": 5}` with the text `5`): the text then says it better."""
    if not (_single(structured) and text):
        return False
    (value,) = structured.values()
    if isinstance(value, dict | list):
        return False
    return bool(value == text if isinstance(value, str) else json.dumps(value) == text)


def _single(structured: Any) -> bool:
    return isinstance(structured, dict) and len(structured) == 1


def _decoded_size(data: Any) -> str:
    if not isinstance(data, str):
        return "no data"
    try:
        return f"{len(base64.b64decode(data, validate=False)):,} bytes"
    except (binascii.Error, ValueError):
        return f"{len(data):,} characters of data that is not base64"


__all__ = ["DEFAULT_MAX_RESULT_CHARS", "ToolResult", "cut", "describe", "read_result", "result_text"]
