"""The build-time check: what each tool shows the model under a chat template, and a refusal if anything is lost.

`plan_tools` decides, per published tool, what its SchemaTool carries: the published tool itself when the template
shows it exactly, otherwise the template family's lowering, and judges it (`agent_env.training.fidelity`).
`render_check` then looks at an environment instance the way TRL does: every tool, `end_turn` included, must be a
SchemaTool carrying what was judged; the prompt of all tools together must carry each tool's judged part; and every
tool must be exact or lossless. Otherwise it raises, naming each tool and what it loses.
"""

from __future__ import annotations

import inspect
import threading
from dataclasses import dataclass
from typing import Any

from agent_env.errors import AgentEnvError
from agent_env.training._tools import SchemaTool
from agent_env.training.families import Family, Refusal, lower
from agent_env.training.fidelity import PROBE, ToolFidelity, entry, tool_fidelity, tool_part
from agent_env.training.rendering import render, shows_exactly, tojson
from agent_env.training.templates import ChatTemplate

__all__ = [
    "RenderCheckError",
    "ToolPlan",
    "discovered_tools",
    "discovery_problems",
    "expected_rendering",
    "methods_discovered",
    "plan_tools",
    "refusals",
    "render_check",
    "render_tools",
    "tojson",
]

_checked: set[tuple[str, str]] = set()
_checked_lock = threading.Lock()
expected_rendering = entry


class RenderCheckError(AgentEnvError, RuntimeError):
    """Under the chat template the trainer renders, the model would not see every tool's every constraint."""

    code = "render_check"


@dataclass(frozen=True)
class ToolPlan:
    """What one tool shows the model under a template.

    Attributes:
        published: The tool as published.
        shown: What its SchemaTool carries: the published tool, or its lowering for the template's family.
        fidelity: The verdict on it.
    """

    published: dict[str, Any]
    shown: dict[str, Any]
    fidelity: ToolFidelity


def plan_tools(
    template: ChatTemplate, published: list[dict[str, Any]], family: Family | None
) -> list[ToolPlan]:
    """What each published tool shows the model under `template`, and the verdict on it."""
    plans = []
    for tool in published:
        fidelity = tool_fidelity(template, tool, family)
        lowered = fidelity.status not in ("exact", "no tool block", "fails") and family is not None
        plans.append(ToolPlan(tool, lower(tool, family) if lowered else dict(tool), fidelity))
    return plans


def discovered_tools(instance: object) -> list[Any]:
    """The tools TRL (>= 1.15) finds on an environment instance: functions listed on the class, fetched from it
    (`GRPOTrainer._generate_and_score_completions` in TRL 1.16)."""
    return [
        getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def methods_discovered(instance: object) -> list[Any]:
    """The tools TRL <= 1.14 (and TRL's main as of July 2026) finds on an environment instance: its bound methods
    (`inspect.getmembers(instance, predicate=inspect.ismethod)`)."""
    return [
        member
        for name, member in inspect.getmembers(instance, predicate=inspect.ismethod)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def render_check(
    instance: object, plans: list[ToolPlan], tool_set: str, template: ChatTemplate, family: Family | None
) -> None:
    """Raise `RenderCheckError` naming every tool the model would not see with all its constraints.

    Runs once per process, tool set and template.
    """
    key = (tool_set, template.key)
    with _checked_lock:
        if key in _checked:
            return
    tools = discovered_tools(instance)
    found = {getattr(tool, "__name__", None): tool for tool in tools}
    prompt = template.render(PROBE, tools)  # the tool block TRL renders: all tools at once
    refused = refusals(template, plans, family)
    problems: list[str] = []
    for plan in plans:
        covered = [refusal for refusal in refused if refusal.tool == plan.published["name"]]
        problems += _tool_problems(plan, found.get(plan.published["name"]), template, prompt, covered)
    problems += [f"{refusal.tool}: {refusal.problem}" for refusal in refused]
    problems += discovery_problems(instance, tools)
    if problems:
        raise RenderCheckError(
            f"refusing to build: under {_named(template)} the model would not see every tool with all its "
            "constraints:\n" + "\n".join(f"- {problem}" for problem in problems) + "\n`agent-env check -t "
            "TEMPLATE` shows what a template does with each tool; exact and lossless templates are listed in "
            "docs/templates.md."
        )
    with _checked_lock:
        _checked.add(key)


def discovery_problems(instance: object, tools: list[Any]) -> list[str]:
    """Where the other way TRL has found tools (`methods_discovered`: TRL <= 1.14's, and July 2026's main) would
    find other tools than `tools`, those TRL >= 1.15 finds, which the rest of the check judges: a tool missing, an
    extra one, or another object under a tool's name."""
    rule = "TRL <= 1.14, which lists the instance's bound methods"
    expected = {getattr(tool, "__name__", None): tool for tool in tools}
    found = {getattr(tool, "__name__", None): tool for tool in methods_discovered(instance)}
    problems = []
    for name in sorted(set(expected) | set(found), key=str):
        if name not in found:
            problems.append(f"{name}: not found under {rule}")
        elif name not in expected:
            problems.append(
                f"{name}: found only under {rule}, which would show the model a tool it should not see"
            )
        elif found[name] is not expected[name]:
            problems.append(f"{name}: under {rule}, TRL would call a {type(found[name]).__name__}")
    return problems


def refusals(template: ChatTemplate, plans: list[ToolPlan], family: Family | None) -> list[Refusal]:
    """What `template` does to the planned tools that no lowering fixes, by its family's own judgement: e.g. Gemma 4
    revisions that leave out parameters named like keywords."""
    if family is None:
        return []
    shown = [plan.shown for plan in plans]
    return family.refusals(lambda tool: template.render(PROBE, [entry(dict(tool))]), shown)


def unfixable(template: ChatTemplate, plans: list[ToolPlan], family: Family | None) -> list[str]:
    """`refusals`, each as a `tool: problem` line."""
    return [f"{refusal.tool}: {refusal.problem}" for refusal in refusals(template, plans, family)]


def _tool_problems(
    plan: ToolPlan, tool: Any, template: ChatTemplate, prompt: str, covered: list[Refusal]
) -> list[str]:
    name = plan.published["name"]
    if tool is None:
        return [f"{name}: not found on the environment the way TRL looks for tools"]
    if not isinstance(tool, SchemaTool):
        return [f"{name}: TRL would call a {type(tool).__name__}, not its SchemaTool"]
    if dict(tool) != entry(plan.shown):
        return [f"{name}: its SchemaTool does not carry the schema that was checked"]
    shown, fidelity = plan.shown, plan.fidelity
    if not fidelity.shown:
        return _verdict_problem(fidelity, covered)
    exact = fidelity.status == "exact"
    if not (shows_exactly(prompt, shown) if exact else tool_part(template, shown) in prompt):
        return [f"{name}: the prompt with every tool does not show it as it shows alone"]
    return []


def _verdict_problem(fidelity: ToolFidelity, covered: list[Refusal]) -> list[str]:
    """The line saying why a tool is not shown whole; none when a refusal already says why of all it loses."""
    if fidelity.status == "fails":
        return [f"{fidelity.tool}: the template raises ({fidelity.error})"]
    if fidelity.status == "no tool block":
        return [f"{fidelity.tool}: the template writes no trace of it"]
    lost = [label for label in fidelity.lost if not any(refusal.covers(label) for refusal in covered)]
    if not lost:
        return []
    lowered = f" even after the {fidelity.lowering} lowering" if fidelity.lowering else ""
    return [f"{fidelity.tool}: loses {', '.join(lost)}{lowered}"]


def _named(template: ChatTemplate) -> str:
    return template.label if " " in template.label else f"chat template {template.label!r}"


def render_tools(tools: list[Any], chat_template: Any) -> str:
    """The prompt text for a first user turn with `tools`, through the real `apply_chat_template`."""
    return render(PROBE, tools, chat_template)
