"""Make sure the trainer can read the model's tool calls under its chat template, before it starts.

TRL reads calls with the tokenizer's `response_template`, which `GRPOTrainer` sets from TRL's own table of known
templates when the tokenizer has none. Two gaps would lose calls or stop the trainer:

- gpt-oss: TRL's template misses the call form gpt-oss really writes (see `families.gptoss`); the factory sets a
  template that reads every form, unless the tokenizer already carries one of its own.
- a template TRL does not know (diffusion_gemma, or any custom one) and no `response_template` on the tokenizer:
  `GRPOTrainer` would raise "Unrecognized chat template" after the factory returned; the factory refuses first,
  saying what to set.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

from agent_env.errors import AgentEnvError
from agent_env.training._trainer import Trainer
from agent_env.training.families import Family, gptoss
from agent_env.training.templates import ChatTemplate, load_template, shipped_templates_dir

logger = logging.getLogger("agent_env")


class ToolCallParsingError(AgentEnvError, RuntimeError):
    """The trainer has no way to read the model's tool calls under its chat template."""

    code = "tool_call_parsing"


def prepare_parsing(trainer: Trainer, family: Family | None) -> None:
    """Give the trainer's tokenizer a response template that reads every call its model writes, or refuse.

    Raises:
        ToolCallParsingError: TRL cannot parse calls under the trainer's template and the tokenizer has no
            response template of its own.
    """
    tokenizer = trainer.tokenizer
    current = getattr(tokenizer, "response_template", None)
    if family is not None and family.name == gptoss.NAME:
        _read_every_gptoss_call(tokenizer, current)
        return
    if current is not None or getattr(tokenizer, "response_schema", None) is not None:
        return
    if not _trl_knows(trainer.processing_class):
        raise ToolCallParsingError(
            f"The trainer cannot read the model's tool calls under {trainer.template.label}: TRL has no response "
            "template for this chat template (it ships none for diffusion_gemma, for one), and the tokenizer carries "
            "none. Set `tokenizer.response_template` to one that parses this template's calls before building the "
            "trainer (see transformers' chat response parsing docs; TRL's `trl.chat_template_utils` holds the "
            "templates it ships, e.g. `gemma4_template` for Gemma's `<|tool_call>call:NAME{...}<tool_call|>`)"
        )


TRL_PARSES = frozenset(
    {
        "deepseek_r1_distill",
        "gemma4",
        "gemma4_v2",
        "gemma4_v3",
        "gemma4_v4",
        "gemma4_v5",
        "glm4moe",
        "gptoss",
        "lfm2_2_5",
        "lfm2_2_5_v2",
        "lfm2_2_5_vl",
        "lfm2_v2",
        "llama3_1",
        "llama3_2",
        "nemotron_3_5_lightning",
        "nemotron_3_nano",
        "nemotron_3_super",
        "nemotron_3_ultra",
        "qwen2_5",
        "qwen3",
        "qwen3_5_nothink",
        "qwen3_5_think",
        "qwen3_6",
        "qwen3_8",
        "qwen3_instruct_2507",
        "qwen3_vl",
    }
)
"""The shipped templates whose calls TRL's `add_response_schema` reads: it knows a template by its exact text.
Written out because importing TRL to ask costs `agent-env check` seconds (it imports torch); the TRL tier holds
this list to the installed TRL's answer for every shipped template."""


def parsing_problem(template: ChatTemplate, family: Family | None) -> str | None:
    """Why a trainer could not read the calls of a model that renders with `template`, or None: TRL has no response
    template for it (it knows templates by their exact text), and its tokenizer, when known, carries none."""
    tokenizer = getattr(template.processing_class, "tokenizer", template.processing_class)
    if any(getattr(tokenizer, name, None) is not None for name in ("response_template", "response_schema")):
        return None
    folder = shipped_templates_dir()
    if (family is not None and family.name == gptoss.NAME) or folder is None:
        return None  # gpt-oss's calls are read by the factory's own template; without TRL there is no trainer
    if any(
        template.text == load_template(name) for name in TRL_PARSES if (folder / f"{name}.jinja").is_file()
    ):
        return None
    return (
        "TRL has no response template for it, so a trainer cannot read the model's calls: under a trainer the "
        "factory refuses it unless the tokenizer carries a `response_template`"
    )


def gptoss_response_template() -> dict[str, Any]:
    """TRL's gpt-oss response template with a call opener that reads every form gpt-oss writes (needs TRL and
    transformers >= 5.13): `tokenizer.response_template = gptoss_response_template()`. The factory sets it by itself
    under a trainer; this is for parsing gpt-oss output anywhere else."""
    stock = _trl_gptoss_template()
    if stock is None:
        raise LookupError(
            "this TRL or transformers has no new-style gpt-oss response template to extend; upgrade TRL and "
            "transformers (>= 5.13)"
        )
    return gptoss.response_template(stock)


def _read_every_gptoss_call(tokenizer: Any, current: Any) -> None:
    stock = _trl_gptoss_template()
    if stock is None:
        logger.warning(
            "agent_env: this TRL has no gpt-oss response template to extend, so calls written "
            "'<|channel|>commentary to=functions.NAME' may be missed; upgrade TRL and transformers (>= 5.13)"
        )
        return
    if current is not None and current != stock:
        return  # the tokenizer's own: the user chose it
    tokenizer.response_template = gptoss.response_template(stock)
    logger.warning(  # it changes how the trainer reads the model's calls: shown by default
        "agent_env: gpt-oss: the tokenizer's response template now reads tool calls with the recipient before or "
        "after the channel (TRL's reads only the first)"
    )


def _trl_gptoss_template() -> dict[str, Any] | None:
    try:
        from trl.chat_template_utils import _SUPPORTS_RESPONSE_TEMPLATE, gptoss_template
    except ImportError:
        return None
    return gptoss_template if _SUPPORTS_RESPONSE_TEMPLATE else None


def _trl_knows(processing_class: Any) -> bool:
    """Whether TRL's `add_response_schema` recognises the processing class's chat template."""
    try:
        from trl.chat_template_utils import add_response_schema
    except ImportError:
        return True  # no TRL to judge with: leave it to the trainer
    probe = SimpleNamespace(chat_template=getattr(processing_class, "chat_template", None))
    try:
        add_response_schema(probe)  # type: ignore[type-var]  # it reads chat_template and sets the template on it
    except ValueError:
        return False
    return True
