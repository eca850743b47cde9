"""Find a chat template by name (TRL's shipped set), template file, or tokenizer folder, without importing TRL."""

from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path

DEFAULT_TEMPLATE = "qwen3"


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
            "(or pass a .jinja file or a tokenizer folder)"
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
    raise LookupError(
        f"tokenizer folder {folder} carries no chat template (chat_template.jinja or tokenizer_config)"
    )
