"""The fidelity matrix: how each chat template shows each tool to the model (exact, transformed, lost, or fails)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agent_env.inspection.keywords import lost_keywords
from agent_env.training._render_check import expected_rendering
from agent_env.training.rendering import render, shows_exactly

Status = Literal["exact", "transformed", "lost", "fails"]
FIDELITY_PROBE = [{"role": "user", "content": "Begin."}]


@dataclass(frozen=True)
class ToolFidelity:
    """How one template shows one tool.

    Statuses: `exact`, the published input schema's JSON appears unchanged; `transformed`, the template rewrites
    it, and the `lost` field lists the keywords (by place) whose removal would not change the prompt, out of
    `tested`; `lost`, no trace of the tool or its parameters; `fails`, the template raises (`error`).
    """

    tool: str
    status: Status
    lost: list[str] = field(default_factory=list)
    tested: int = 0
    error: str | None = None


@dataclass(frozen=True)
class TemplateFidelity:
    """How one template shows every tool."""

    template: str
    tools: list[ToolFidelity]

    def renders_tools(self) -> bool:
        """Whether the template writes a tool block at all (a template that raises is not judged)."""
        return any(tool.status in ("exact", "transformed") for tool in self.tools) or all(
            tool.status == "fails" for tool in self.tools
        )

    def verdict(self) -> str:
        """The whole template in a word or two: the status all its tools share, `no tool block`, or `mixed`."""
        if not self.renders_tools():
            return "no tool block"
        statuses = {tool.status for tool in self.tools}
        return statuses.pop() if len(statuses) == 1 else "mixed"

    def is_exact(self) -> bool:
        """Whether every tool reaches the model exactly as published."""
        return all(tool.status == "exact" for tool in self.tools)


def template_fidelity(template: str, tools: list[Any], published: list[dict[str, Any]]) -> TemplateFidelity:
    """Render each tool alone under `template` and classify it against its published schema.

    Args:
        template: A TRL shipped name, a template file, or a tokenizer folder.
        tools: The tools as TRL finds them on an environment instance (SchemaTools, `end_turn`'s method).
        published: The published tools (`name`, `description`, `inputSchema`).
    """
    found = {getattr(tool, "__name__", None): tool for tool in tools}
    try:
        bare = render(FIDELITY_PROBE, None, template)
    except Exception as error:  # any error a template raises is the finding
        return TemplateFidelity(template, [_failure(tool["name"], error) for tool in published])
    return TemplateFidelity(
        template, [_tool_fidelity(template, tool, found.get(tool["name"]), bare) for tool in published]
    )


def _tool_fidelity(template: str, published: dict[str, Any], tool: Any, bare: str) -> ToolFidelity:
    name, schema = published["name"], published["inputSchema"]
    if tool is None:
        return ToolFidelity(name, "fails", error="TRL would not find this tool on the environment")
    try:
        rendered = render(FIDELITY_PROBE, [tool], template)
    except Exception as error:
        return _failure(name, error)
    if rendered == bare or (
        name not in rendered and not any(arg in rendered for arg in schema.get("properties", {}))
    ):
        return ToolFidelity(name, "lost")
    if shows_exactly(rendered, published):
        return ToolFidelity(name, "exact")

    def render_schema(variant: dict[str, Any]) -> str:
        return render(FIDELITY_PROBE, [expected_rendering({**published, "inputSchema": variant})], template)

    lost, tested = lost_keywords(schema, render_schema)
    labels = [occurrence.label() for occurrence in lost]
    if published["description"] and render_schema(schema) == render(
        FIDELITY_PROBE, [expected_rendering({**published, "description": ""})], template
    ):
        labels.insert(0, "(tool description)")
    return ToolFidelity(name, "transformed", lost=labels, tested=tested + bool(published["description"]))


def _failure(name: str, error: Exception) -> ToolFidelity:
    return ToolFidelity(name, "fails", error=f"{type(error).__name__}: {error}")
