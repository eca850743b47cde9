"""The build-time check: render every tool as TRL would and refuse to start if the model would see another schema."""

from __future__ import annotations

import inspect
import json
import threading
from functools import lru_cache
from typing import Any

from agent_env.tools import END_TURN
from agent_env.training._tools import SchemaTool
from agent_env.training.templates import load_template

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
    """Raise `RuntimeError` naming every tool whose rendered prompt is not its published schema.

    Runs once per process, tool set and template. `end_turn` must render as its method schema; every other tool as
    its published schema, exactly (the JSON transformers' `tojson` writes for it).
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
            expected = get_json_schema(found[name])
        elif not isinstance(found[name], SchemaTool):
            problems.append(f"{name} (TRL would call a {type(found[name]).__name__}, not its SchemaTool)")
            continue
        else:
            expected = expected_rendering(tool)
        if tojson(expected) not in rendered:
            problems.append(f"{name} (the prompt does not show its published schema)")
    if problems:
        raise RuntimeError(
            f"refusing to build: under chat template {chat_template!r} the model would not see these tools as "
            f"published: {'; '.join(problems)}. transformers must render a dict tool unchanged; check the installed "
            "transformers version, or the chat template."
        )
    with _checked_lock:
        _checked.add(key)


def tojson(value: Any) -> str:
    """JSON exactly as transformers' chat-template `tojson` filter writes it by default."""
    return json.dumps(value, ensure_ascii=False)


def render_tools(tools: list[Any], chat_template: str) -> str:
    """The prompt text for a first user turn with `tools`, through the real `apply_chat_template`."""
    rendered = template_tokenizer(chat_template).apply_chat_template(
        _PROBE_CONVERSATION, tools=tools, tokenize=False, add_generation_prompt=True
    )
    assert isinstance(rendered, str)
    return rendered


@lru_cache(maxsize=16)
def template_tokenizer(chat_template: str) -> Any:
    """A vocabulary-free tokenizer that carries only a chat template: all `apply_chat_template` needs to render."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(WordLevel({"<unk>": 0}, unk_token="<unk>"))
    )
    tokenizer.chat_template = load_template(chat_template)
    return tokenizer
