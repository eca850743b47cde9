"""Learn which chat template the TRL trainer that called the factory renders its prompts with.

TRL calls `environment_factory()` from inside the trainer: `GRPOTrainer.__init__` (to probe tools, before it sets
the tokenizer's response template) and `_generate_and_score_completions` (to grow its pool), and AsyncGRPO's
`_AsyncRolloutLoop.__init__` in its spawned rollout worker. Each of those frames holds the trainer as `self` and
its tokenizer or processor (`processing_class`, `self.processing_class` or `self.tokenizer`). The factory looks up
its call stack for such a frame, so it needs nothing from the user. Checked against TRL 1.15 and 1.16; a trainer it
does not recognise leaves it with the template it was given, and it says so.

The template TRL renders is the processing class's own, unless that one is not prefix-preserving: then TRL swaps
in a training template (`get_training_chat_template`) when the trainer is built, and renders every prompt with it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

from agent_env.training.templates import ChatTemplate, from_processing_class

logger = logging.getLogger("agent_env")

MAX_DEPTH = 16
"""How many frames up to look for the trainer (TRL calls the factory from one or two frames below it)."""


@dataclass(frozen=True, eq=False)
class Trainer:
    """The TRL trainer that called the factory: its name, its tokenizer or processor, and the template it renders.

    Attributes:
        name: The trainer's class name (`GRPOTrainer`, `_AsyncRolloutLoop`, or a subclass's).
        processing_class: Its tokenizer or processor.
        template: What it renders prompts with (its training template, if TRL swaps one in).
    """

    name: str
    processing_class: Any
    template: ChatTemplate

    @property
    def tokenizer(self) -> Any:
        """The tokenizer that parses the model's replies (a processor's inner one)."""
        return getattr(self.processing_class, "tokenizer", self.processing_class)


def calling_trainer() -> Trainer | None:
    """The TRL trainer on the call stack, or None when the factory was not called by one."""
    frame: FrameType | None = sys._getframe(1)
    for _ in range(MAX_DEPTH):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if owner is not None and _is_trl(type(owner)):
            processing_class = _processing_class(frame.f_locals, owner)
            if processing_class is not None:
                return _trainer(owner, processing_class, frame.f_locals)
        frame = frame.f_back
    return None


def _is_trl(cls: type) -> bool:
    return any(base.__module__ == "trl" or base.__module__.startswith("trl.") for base in cls.__mro__)


def _processing_class(local: Mapping[str, Any], owner: Any) -> Any:
    candidates = [local.get("processing_class")]
    candidates += [getattr(owner, name, None) for name in ("processing_class", "tokenizer", "_tokenizer")]
    return next(
        (
            candidate
            for candidate in candidates
            if hasattr(candidate, "apply_chat_template")
            and getattr(candidate, "chat_template", None) is not None
        ),
        None,
    )


def _trainer(owner: Any, processing_class: Any, local: Mapping[str, Any]) -> Trainer:
    name = type(owner).__name__
    text = _rendered_template(owner, processing_class)
    kwargs = _template_kwargs(owner, local)
    label = f"{name}'s chat template (its {type(processing_class).__name__})"
    template = from_processing_class(processing_class, label=label, text=text, kwargs=kwargs)
    return Trainer(name, processing_class, template)


def _rendered_template(owner: Any, processing_class: Any) -> str | None:
    """The template text TRL passes to `apply_chat_template` (None: the processing class's own)."""
    if "chat_template" in vars(owner):  # set once the trainer is built: None or the training template
        chosen = vars(owner)["chat_template"]
        return chosen if isinstance(chosen, str) else None
    try:  # still being built: make the choice TRL is about to make
        from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving

        if is_chat_template_prefix_preserving(processing_class):
            return None
        training = get_training_chat_template(processing_class)
        return training if isinstance(training, str) else None
    except Exception as error:  # TRL raises its own error for this template right after; render its own
        logger.debug(
            "agent_env: TRL's training-template choice failed (%s); checking the template as is", error
        )
        return None


def _template_kwargs(owner: Any, local: Mapping[str, Any]) -> dict[str, Any]:
    for found in (
        getattr(owner, "chat_template_kwargs", None),
        local.get("chat_template_kwargs"),
        getattr(local.get("args"), "chat_template_kwargs", None),
    ):
        if isinstance(found, Mapping):
            return dict(found)
    return {}
