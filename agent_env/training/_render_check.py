"""The build-time check: render every tool as TRL would and refuse to start if the model would see another schema."""

from __future__ import annotations

import inspect
import threading
from typing import Any

from agent_env.tools import END_TURN
from agent_env.training._tools import SchemaTool
from agent_env.training.rendering import render, shows_exactly, tojson

__all__ = ["discovered_tools", "expected_rendering", "render_check", "render_tools", "tojson"]

_checked: set[tuple[str, str]] = set()
_checked_lock = threading.Lock()
_PROBE_CONVERSATION = [{"role": "user", "content": "Begin."}]


def discovered_tools(instance: object) -> list[Any]:
    """The tools TRL (>= 1.15) finds on an environment instance: functions listed on the class, fetched from it."""
    return [
        getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def expected_rendering(published: dict[str, Any]) -> dict[str, Any]:
    """The tool entry the model must see for a published tool: the function wrapper around its input schema."""
    return {
        "type": "function",
        "function": {
            "name": published["name"],
            "description": published["description"],
            "parameters": published["inputSchema"],
        },
    }


def render_check(
    instance: object, published: list[dict[str, Any]], tool_set: str, chat_template: str
) -> None:
    """Raise `RuntimeError` naming every tool the model would not see as published.

    Runs once per process, tool set and template. Every tool but `end_turn` must be a SchemaTool that the prompt
    shows exactly as published (its input schema unchanged, in whatever layout the template writes JSON);
    `end_turn` must show its method schema.
    """
    key = (tool_set, chat_template)
    with _checked_lock:
        if key in _checked:
            return
    from transformers.utils import get_json_schema

    tools = discovered_tools(instance)
    found = {getattr(tool, "__name__", None): tool for tool in tools}
    rendered = render_tools(tools, chat_template)
    problems = []
    for tool in published:
        name = tool["name"]
        if name not in found:
            problems.append(f"{name} (not found on the environment the way TRL looks for tools)")
            continue
        if name == END_TURN:
            method = get_json_schema(found[name])["function"]
            expected = {
                "name": name,
                "description": method["description"],
                "inputSchema": method["parameters"],
            }
        elif not isinstance(found[name], SchemaTool):
            problems.append(f"{name} (TRL would call a {type(found[name]).__name__}, not its SchemaTool)")
            continue
        else:
            expected = tool
        if not shows_exactly(rendered, expected):
            problems.append(f"{name} (the prompt does not show its published schema)")
    if problems:
        raise RuntimeError(
            f"refusing to build: under chat template {chat_template!r} the model would not see these tools as "
            f"published: {'; '.join(problems)}. transformers must render a dict tool unchanged, and the template "
            "must write its JSON (`agent-env check` shows what each shipped template does)."
        )
    with _checked_lock:
        _checked.add(key)


def render_tools(tools: list[Any], chat_template: str) -> str:
    """The prompt text for a first user turn with `tools`, through the real `apply_chat_template`."""
    return render(_PROBE_CONVERSATION, tools, chat_template)
