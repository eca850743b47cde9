"""Render tools through the real `apply_chat_template` under any chat template, and judge what the model sees."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from agent_env.training.templates import load_template

# A template-only tokenizer has no special tokens, but several templates write `bos_token` into the prompt
# (llama3 fails without one). These are the tokens the families' own tokenizers carry.
FAMILY_BOS = {
    "llama3": "<|begin_of_text|>",
    "gemma": "<bos>",
    "diffusion_gemma": "<bos>",
    "cohere": "<BOS_TOKEN>",
    "deepseek": "<\uff5cbegin\u2581of\u2581sentence\uff5c>",  # fullwidth bars, as DeepSeek writes it
    "lfm2": "<|startoftext|>",
}
FALLBACK_BOS = "<s>"


def bos_token(source: str) -> str:
    """The BOS token to render a template with: its family's, for a TRL shipped name."""
    return next((token for family, token in FAMILY_BOS.items() if source.startswith(family)), FALLBACK_BOS)


@lru_cache(maxsize=64)
def chat_tokenizer(source: str) -> Any:
    """A tokenizer to render with: a tokenizer folder's own tokenizer, else one that carries only the template
    (and a BOS token), which is all `apply_chat_template` needs to render text."""
    folder = Path(source)
    if folder.is_dir() and any(
        (folder / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")
    ):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder)
        tokenizer.chat_template = load_template(source)
        return tokenizer
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(WordLevel({"<unk>": 0}, unk_token="<unk>")), bos_token=bos_token(source)
    )
    tokenizer.chat_template = load_template(source)
    return tokenizer


def render(conversation: list[dict[str, Any]], tools: list[Any] | None, template: str) -> str:
    """The prompt text for `conversation` with `tools`, ready for the model's reply, under `template`."""
    rendered = chat_tokenizer(template).apply_chat_template(
        conversation, tools=tools or None, tokenize=False, add_generation_prompt=True
    )
    assert isinstance(rendered, str)
    return rendered


def tojson(value: Any) -> str:
    """JSON exactly as transformers' chat-template `tojson` filter writes it by default."""
    return json.dumps(value, ensure_ascii=False)


def shows_exactly(prompt: str, published: dict[str, Any]) -> bool:
    """Whether the prompt shows a tool as published: one JSON object in it (any layout) holds the tool's name and
    its input schema unchanged, and the description is there too (in that object, or as text)."""
    for value in json_values(prompt):
        for candidate in _objects(value):
            if _holds(candidate, published["inputSchema"]) and _holds(candidate, published["name"]):
                return published["description"] in prompt or _holds(candidate, published["description"])
    return False


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


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    """Every object inside a JSON value, innermost first."""
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        yield from _objects(child)
    if isinstance(value, dict):
        yield value


def _holds(value: Any, target: Any) -> bool:
    """Whether `target` is `value` or lies anywhere inside it."""
    if value == target:
        return True
    if isinstance(value, dict):
        return any(_holds(child, target) for child in value.values())
    if isinstance(value, list):
        return any(_holds(child, target) for child in value)
    return False
