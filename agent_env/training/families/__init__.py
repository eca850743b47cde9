"""Template families whose chat templates rewrite tool schemas, each with a pure lowering that loses nothing.

A chat template that writes a tool's JSON as it is shows the published schema exactly and needs nothing. Two
families write tools in their own syntax and drop parts of every real schema: Gemma 4 and gpt-oss. For each, a pure
function maps a published tool to the tool that family's template renders without loss: what the template shows
stays, and what it would drop is said in the nearest description in fixed words. A family is recognised by text
its templates carry, so a model's own copy of a template (a Hub revision) is lowered like TRL's shipped one; the
lossless verdict (`agent_env.training.fidelity`) then proves, per template, that nothing is lost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_env.training.families import gemma4, gptoss
from agent_env.training.families._refusal import Refusal

Lowering = Callable[[Mapping[str, Any]], dict[str, Any]]
Render = Callable[[Mapping[str, Any]], str]
"""The prompt a template renders for one tool (`name`, `description`, `inputSchema`)."""
Refusals = Callable[[Render, list[dict[str, Any]]], list[Refusal]]
"""What a template of the family cannot show of the tools it would be given, whatever the lowering."""


def _no_refusals(render: Render, shown: list[dict[str, Any]]) -> list[Refusal]:
    return []


@dataclass(frozen=True)
class Family:
    """A family of chat templates that rewrite tool schemas.

    Attributes:
        name: What the family is called (`gemma4`, `gptoss`).
        markers: Text every template of the family carries.
        lower: Maps a published tool (`name`, `description`, `inputSchema`) to the tool to render instead.
        refusals: Given a template's renderer and the lowered tools, what no lowering can fix.
    """

    name: str
    markers: tuple[str, ...]
    lower: Lowering
    refusals: Refusals = _no_refusals

    def matches(self, template: str) -> bool:
        """Whether a template's text is one of this family's."""
        return all(marker in template for marker in self.markers)


FAMILIES = (
    Family(gemma4.NAME, gemma4.MARKERS, gemma4.lower, gemma4.refusals),
    Family(gptoss.NAME, gptoss.MARKERS, gptoss.lower),
)


def family_of(template: str) -> Family | None:
    """The family a chat template's text belongs to, or None for a template that needs no lowering."""
    return next((family for family in FAMILIES if family.matches(template)), None)


def lower(tool: Mapping[str, Any], family: Family | None) -> dict[str, Any]:
    """The tool to render under a template of `family`: lowered, or the published tool itself for none."""
    return family.lower(tool) if family is not None else dict(tool)


__all__ = ["FAMILIES", "Family", "Refusal", "family_of", "gemma4", "gptoss", "lower"]
