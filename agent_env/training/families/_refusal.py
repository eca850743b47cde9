"""What a template cannot show of a tool whatever the lowering: a refusal, naming the parameter and the fix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Refusal:
    """What a template of a family cannot show of one tool, whatever the lowering, and how to fix it.

    Attributes:
        tool: The tool's name.
        problem: What is wrong and how to fix it.
        place: The parameter it is about (`type`, `rows[].required`), written as the labels of lost keywords begin
            (`agent_env.training.keywords.Occurrence.label`), or None for the whole tool.
    """

    tool: str
    problem: str
    place: str | None = None

    def covers(self, lost: str) -> bool:
        """Whether a lost keyword's label (`type.description`, `rows[].required.type (value)`) lies under the
        parameter this refusal is about, so the refusal already says why it is lost."""
        return self.place is not None and lost.startswith((f"{self.place}.", f"{self.place}[]"))
