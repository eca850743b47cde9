"""What each arm of an evaluation shows the model: the tools every request of the arm sends.

`full` sends what `env.factory` puts in front of a trainer's model: each tool's SchemaTool, which carries the
published schema (lowered for a template's family when one is named, as the factory builds it). `lossy` sends what
TRL would show without agent_env: each tool method's schema as transformers' `get_json_schema` builds it, the view
`agent-env render --lossy` prints. In both arms the calls are validated against the published schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_env._agent_env import AgentEnv
from agent_env.inspection.probe import method_tools, schema_tools, trl_instance
from agent_env.schema import fingerprint

FULL, LOSSY = "full", "lossy"
COMPARISONS = (LOSSY,)
"""What `--compare` can name."""


@dataclass(frozen=True)
class Arm:
    """One way of showing the tools.

    Attributes:
        name: `full` or `lossy`.
        tools: The OpenAI-format tools (`{"type": "function", "function": {...}}`) every request sends.
        shows: What they are, in words.
    """

    name: str
    tools: list[dict[str, Any]]
    shows: str

    def fingerprint(self) -> str:
        """A short hash of the tools the arm sends."""
        return fingerprint(self.tools)


def arms(env: AgentEnv, *, compare: str | None = None, template: str | None = None) -> list[Arm]:
    """The arms of a run: `full`, and `lossy` beside it when `compare` says so.

    Args:
        env: The environment.
        compare: None, or "lossy".
        template: A chat template (a TRL shipped name, a `.jinja` file, a tokenizer folder) whose family's lowering
            the full arm sends, as `env.factory` builds it for that template; None sends the published schemas.

    Raises:
        LookupError: `compare` names no comparison, or `template` no template.
        ImportError: transformers (the `trl` extra) is missing, which the lossy view and templates need.
    """
    if compare is not None and compare not in COMPARISONS:
        raise LookupError(f"unknown comparison {compare!r}; --compare takes {', '.join(COMPARISONS)}")
    chat_template = None
    if template is not None:
        from agent_env.training.families import family_of
        from agent_env.training.templates import resolve_template

        chat_template = resolve_template(template)
        family = family_of(chat_template.text)
        lowered = f", lowered for {family.name}" if family else ""
        shows = f"published schemas{lowered} as env.factory builds them for template {chat_template.label}"
    else:
        shows = "published schemas"
    with trl_instance(env, chat_template) as instance:
        chosen = [Arm(FULL, [dict(tool) for tool in schema_tools(instance)], shows)]
        if compare == LOSSY:
            chosen.append(Arm(LOSSY, lossy_tools(instance), "TRL's method schemas (get_json_schema)"))
    return chosen


def lossy_tools(instance: object) -> list[dict[str, Any]]:
    """Each tool as TRL's method schema: what `apply_chat_template` makes of the class's method."""
    try:
        from transformers.utils import get_json_schema
    except ImportError as error:
        raise ImportError(
            f"--compare lossy builds TRL's method schemas with transformers, which is missing ({error}): "
            "pip install 'agent-env[trl]'"
        ) from None
    return [get_json_schema(method) for method in method_tools(instance)]
