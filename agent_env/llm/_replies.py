"""Read a server's chat completion into a `Reply`: the assistant message that goes back in the next request, its
calls, text, reasoning and token usage, whatever the server left out."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call as the server returned it.

    Attributes:
        id: The call's id (one is made up when the server sent none), which its tool message answers.
        type: "function", or what else the server said.
        name: The tool named.
        arguments: As sent: a JSON string (None or "" for none; a mapping from a server that parsed them).
    """

    id: str
    type: str
    name: str
    arguments: Any


@dataclass(frozen=True)
class Reply:
    """One reply of the model.

    Attributes:
        message: The assistant message as it goes back to the server in the next request.
        tool_calls: Its tool calls, in order.
        content: Its text ("" for none).
        reasoning: Its reasoning, when the server parses it apart (`reasoning_content`).
        finish_reason: Why generation stopped, as the server says.
        usage: (prompt tokens, completion tokens), when the server reports them.
    """

    message: dict[str, Any]
    tool_calls: list[ToolCall]
    content: str
    reasoning: str | None
    finish_reason: str | None
    usage: tuple[int, int] | None


def reply_of(completion: Any, choice: Any) -> Reply:
    """A `Reply` from the client's parsed completion and its first choice."""
    message = choice.message
    content = message.content
    calls, sent = [], []
    for index, call in enumerate(message.tool_calls or []):
        kind = getattr(call, "type", None) or "function"
        function = getattr(call, "function", None)
        name = str(getattr(function, "name", None) or getattr(call, "name", None) or "unknown")
        arguments = getattr(function, "arguments", None)
        call_id = getattr(call, "id", None) or f"call_{index}"
        calls.append(ToolCall(call_id, kind, name, arguments))
        if kind == "function":
            text = arguments if isinstance(arguments, str) or arguments is None else json.dumps(arguments)
            sent.append({"id": call_id, "type": kind, "function": {"name": name, "arguments": text or "{}"}})
        else:
            sent.append({**call.model_dump(exclude_none=True), "id": call_id})
    assistant: dict[str, Any] = {"role": "assistant", "content": content}
    if sent:
        assistant["tool_calls"] = sent
    usage = getattr(completion, "usage", None)
    tokens = None
    if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
        tokens = (int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
    reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    return Reply(
        message=assistant,
        tool_calls=calls,
        content=content if isinstance(content, str) else "",
        reasoning=reasoning if isinstance(reasoning, str) else None,
        finish_reason=getattr(choice, "finish_reason", None),
        usage=tokens,
    )
