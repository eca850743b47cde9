"""Chat templates to render with: a TRL shipped name, a `.jinja` file, a tokenizer folder, or a tokenizer object.

Every source becomes a `ChatTemplate`: the template's text, the special tokens it may write (`bos_token`, ...), the
keyword arguments the trainer renders with, and, when there is one, the tokenizer or processor itself, which then
renders the prompt exactly as the trainer does. Names are found in TRL's folder of shipped templates without
importing TRL (which would import torch).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

DEFAULT_TEMPLATE = "qwen3"

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
_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token")

TemplateSource = Any
"""What `chat_template=` takes: a shipped name or a path (`str`/`os.PathLike`), a tokenizer or processor (anything
with `apply_chat_template` and a `chat_template`), or a `ChatTemplate`."""


@dataclass(frozen=True, eq=False)
class ChatTemplate:
    """A chat template to render prompts with.

    Attributes:
        label: What messages call it (`qwen3`, a path, `GRPOTrainer's tokenizer (Qwen2TokenizerFast)`).
        text: The Jinja source.
        special_tokens: Tokens the template may write (`bos_token`, `eos_token`, ...), when rendered without
            `processing_class`.
        kwargs: Extra template variables the trainer passes (its `chat_template_kwargs`).
        processing_class: The tokenizer or processor that renders it, when known; not pickled (a copy elsewhere
            renders with a template-only tokenizer carrying `special_tokens`, which gives the same text).
    """

    label: str
    text: str
    special_tokens: Mapping[str, str] = field(default_factory=dict)
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    processing_class: Any = None

    @cached_property
    def key(self) -> str:
        """A short hash of everything that decides what the template renders."""
        state = json.dumps(
            [self.text, sorted(self.special_tokens.items()), repr(sorted(self.kwargs.items()))]
        )
        return hashlib.sha256(state.encode()).hexdigest()[:16]

    def render(self, conversation: list[dict[str, Any]], tools: list[Any] | None) -> str:
        """The prompt text for `conversation` with `tools`, ready for the model's reply, through the real
        `apply_chat_template`."""
        renderer = self.processing_class
        if renderer is None:
            renderer = _template_only_tokenizer(tuple(sorted(self.special_tokens.items())))
        elif _is_processor(renderer):
            conversation = [_as_blocks(message) for message in conversation]
        rendered = renderer.apply_chat_template(
            conversation,
            tools=tools or None,
            chat_template=self.text,
            tokenize=False,
            add_generation_prompt=True,
            **self.kwargs,
        )
        if isinstance(rendered, list):  # a processor answers a batch
            rendered = rendered[0]
        assert isinstance(rendered, str)
        return rendered

    def __getstate__(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "text": self.text,
            "special_tokens": dict(self.special_tokens),
            "kwargs": dict(self.kwargs),
            "processing_class": None,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"ChatTemplate({self.label!r})"


def resolve_template(source: TemplateSource) -> ChatTemplate:
    """The `ChatTemplate` a source names.

    Raises:
        LookupError: No template by that name, a folder or object without one, or TRL (which ships the named
            templates) is not installed.
    """
    if isinstance(source, ChatTemplate):
        return source
    if isinstance(source, str | os.PathLike):
        return _named(os.fspath(source))
    if hasattr(source, "apply_chat_template"):
        return from_processing_class(source)
    raise LookupError(
        f"chat_template must be a template name, a .jinja file, a tokenizer folder, or a tokenizer or processor; "
        f"not {type(source).__name__}"
    )


def from_processing_class(
    processing_class: Any,
    *,
    label: str | None = None,
    text: str | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> ChatTemplate:
    """The template a tokenizer or processor renders with (`text` overrides its own, as a trainer's can).

    Raises:
        LookupError: It carries no chat template.
    """
    own = _own_template(processing_class)
    if own is None and text is None:
        raise LookupError(
            f"{type(processing_class).__name__} carries no chat template: set its chat_template, or pass a "
            "template name, file or tokenizer folder"
        )
    tokenizer = getattr(processing_class, "tokenizer", processing_class)
    special = {key: value for key in _TOKEN_KEYS if isinstance(value := getattr(tokenizer, key, None), str)}
    name = getattr(tokenizer, "name_or_path", "") or ""
    return ChatTemplate(
        label=label
        or (f"{type(processing_class).__name__} ({name})" if name else type(processing_class).__name__),
        text=text if text is not None else str(own),
        special_tokens=special,
        kwargs=dict(kwargs or {}),
        processing_class=processing_class,
    )


def _own_template(processing_class: Any) -> str | None:
    """The template a tokenizer or processor picks for a prompt with tools (a dict of templates has a `tool_use`
    one), or None."""
    template = getattr(processing_class, "chat_template", None)
    if isinstance(template, dict):
        template = template.get("tool_use") or template.get("default") or next(iter(template.values()), None)
    return template if isinstance(template, str) else None


@lru_cache(maxsize=64)
def _named(source: str) -> ChatTemplate:
    path = Path(source)
    if path.is_dir() and any((path / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path)
        text = load_template(source)
        return from_processing_class(tokenizer, label=source, text=text)
    return ChatTemplate(
        label=source, text=load_template(source), special_tokens={"bos_token": bos_token(source)}
    )


def bos_token(source: str) -> str:
    """The BOS token to render a template with: its family's, for a TRL shipped name (or a file named like one)."""
    name = Path(source).name
    return next((token for family, token in FAMILY_BOS.items() if name.startswith(family)), FALLBACK_BOS)


@lru_cache(maxsize=16)
def _template_only_tokenizer(special_tokens: tuple[tuple[str, str], ...]) -> Any:
    """A tokenizer that carries nothing but special tokens: all `apply_chat_template` needs to render text."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    tokens = dict(special_tokens)
    tokens.setdefault("unk_token", "<unk>")
    vocabulary = {token: index for index, token in enumerate(dict.fromkeys(tokens.values()))}
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(WordLevel(vocabulary, unk_token=tokens["unk_token"])), **tokens
    )


def _is_processor(renderer: Any) -> bool:
    return hasattr(renderer, "tokenizer") and hasattr(renderer, "image_processor")


def _as_blocks(message: dict[str, Any]) -> dict[str, Any]:
    """A message as a processor's template reads it: content as a list of text blocks."""
    content = message.get("content")
    return (
        {**message, "content": [{"type": "text", "text": content}]} if isinstance(content, str) else message
    )


def shipped_templates_dir() -> Path | None:
    """TRL's folder of original chat templates, found without importing TRL (which would import torch)."""
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "chat_templates"
    return folder if folder.is_dir() else None


def shipped_template_names() -> list[str]:
    """The names of TRL's shipped chat templates (training variants left out)."""
    folder = shipped_templates_dir()
    if folder is None:
        return []
    return sorted(path.stem for path in folder.glob("*.jinja") if not path.stem.endswith("_training"))


@lru_cache(maxsize=64)
def load_template(source: str = DEFAULT_TEMPLATE) -> str:
    """The text of a chat template: a TRL shipped name (`qwen3`, `llama3_1`, ...), a `.jinja` file, or a tokenizer
    folder whose `chat_template.jinja` or `tokenizer_config.json` carries one."""
    path = Path(source)
    if path.is_dir():
        return _template_in_folder(path)
    if path.is_file():
        return path.read_text()
    folder = shipped_templates_dir()
    if folder is None:
        raise LookupError(
            f"chat template {source!r} is not a file or folder, and TRL (which ships the named templates) is not "
            "installed; install trl or pass a template file"
        )
    shipped = folder / f"{source}.jinja"
    if not shipped.is_file():
        raise LookupError(
            f"no chat template named {source!r}; TRL ships: {', '.join(shipped_template_names())} "
            "(or pass a .jinja file, a tokenizer folder or a tokenizer)"
        )
    return shipped.read_text()


def _template_in_folder(folder: Path) -> str:
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text()
    config = folder / "tokenizer_config.json"
    if config.is_file():
        template = json.loads(config.read_text()).get("chat_template")
        if isinstance(template, str):
            return template
        if isinstance(template, list):  # several named templates: the one for prompts with tools
            named = {
                entry.get("name"): entry.get("template") for entry in template if isinstance(entry, dict)
            }
            chosen = named.get("tool_use") or named.get("default")
            if isinstance(chosen, str):
                return chosen
    raise LookupError(
        f"tokenizer folder {folder} carries no chat template (chat_template.jinja or tokenizer_config)"
    )
