"""What each arm of an evaluation shows the model: the tools every request of the arm sends.

`full` sends what `env.factory` puts in front of a trainer's model: each tool's SchemaTool, which carries the
published schema (lowered for a template's family when one is named, as the factory builds it). `lossy` sends what
a plain TRL environment, written without agent_env, shows: TRL's own rendering of the environment's own tool
methods (`agent_env.training.plain`), the view `agent-env render --lossy` prints; for an environment served
elsewhere, its class's methods when its server names a class that can be imported here with the served tool set,
else TRL's port of the listing, and `Arm.shows` says which and why. A tool TRL cannot render at all (or that its
port of listed tools skips) is sent in its nearest form and named in `Arm.unrenderable`. In both arms the calls are
validated against the published schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_env._agent_env import AgentEnv
from agent_env.inspection.probe import schema_tools, trl_instance
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
        unrenderable: The tools TRL cannot render as they are (a plain TRL environment with one could not start),
            or that its port of listed tools skips (one would start without it), each with what TRL raised or did;
            the arm sends their nearest form.
    """

    name: str
    tools: list[dict[str, Any]]
    shows: str
    unrenderable: dict[str, str] = field(default_factory=dict)

    def fingerprint(self) -> str:
        """A short hash of the tools the arm sends."""
        return fingerprint(self.tools)

    def settings(self) -> dict[str, Any]:
        """The arm as the run's settings record it."""
        recorded = {"name": self.name, "shows": self.shows, "tools": self.fingerprint()}
        return {**recorded, "unrenderable": self.unrenderable} if self.unrenderable else recorded


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
        chosen.append(lossy_arm(env))
    return chosen


LOSSY_SHOWS = {
    "method": "TRL's own rendering of the environment's tool methods (get_json_schema)",
    "listing": "TRL's own port of each listed tool (trl.experimental.openreward), rendered by get_json_schema",
}
"""What the lossy arm shows, by the form its tools take (`agent_env.training.plain`)."""


def lossy_arm(env: AgentEnv) -> Arm:
    """The `lossy` arm: each tool as a plain TRL environment shows it (`agent_env.training.plain`)."""
    try:
        from agent_env.training.plain import plain_view, unrenderable
    except ImportError as error:
        raise ImportError(
            f"--compare lossy renders tools as TRL does, with transformers, which is missing ({error}): "
            "pip install 'agent-env[trl]'"
        ) from None
    view = plain_view(env.provider)
    shown = view.tools
    forms = sorted({tool.form for tool in shown}, key=list(LOSSY_SHOWS).index)
    said = [LOSSY_SHOWS[form] for form in forms] + ([view.basis] if view.basis is not None else [])
    return Arm(LOSSY, [tool.schema for tool in shown], "; ".join(said), unrenderable(shown))
