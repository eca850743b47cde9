"""What agent_env does with every tool of the real listings in this folder: published (under which name) or refused
(why), and how each chat template family shows it, as `agent-env check` judges it. `outcomes.tsv` holds the answer
that `tst/unit/mcp/listings_test.py` expects; write it again when a listing or agent_env's judgement changes on
purpose, and read the diff:

    uv run --frozen python -m tst.data.mcp.outcomes

A tool is published as an MCP environment publishes it (its name made an identifier, `get-sum` as `get_sum`), then
judged with the other tools of its server under each template of `TEMPLATES`. A cell says:

- `exact`: the published schema's JSON is in the prompt unchanged (qwen3 and other plain-JSON templates);
- `lowered`: the family's lowering (Gemma 4, gpt-oss) is shown, and every keyword reaches the model;
- `lossless`: the template rewrites the schema itself, and every keyword reaches the model;
- `refused`: the template loses a part that no lowering saves, and a trainer's factory refuses it saying why (the
  `why` column, after the template's name);
- `transformed`, `no tool block`, `fails`: lost for a reason no refusal names (a defect), with what was lost.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_env import Tool, ToolDefinitionError
from agent_env.inspection.probe import judged
from agent_env.mcp._runtime import _identifier
from agent_env.training._render_check import plan_tools, refusals
from agent_env.training.families import family_of
from agent_env.training.fidelity import ToolFidelity
from agent_env.training.templates import resolve_template

HERE = Path(__file__).parent
TABLE = HERE / "outcomes.tsv"
TEMPLATES = ("qwen3", "gemma4", "gemma4_v2", "gptoss")
"""Plain JSON (qwen3), the Gemma 4 revision that keeps parameters named like keywords and one that leaves them out,
and gpt-oss: the families whose templates agent_env lowers for, and a plain one."""
COLUMNS = ("tool", "published as", *TEMPLATES, "why")
WHOLE_TEMPLATE = "(every tool)"
"""The `tool` of a row saying what a factory refuses under a template whatever the tools."""


@dataclass(frozen=True)
class Listing:
    """One saved listing: its file's name, and its tools as the server listed them."""

    name: str
    tools: list[dict[str, Any]]


def listings() -> list[Listing]:
    """Every listing saved in this folder, by file name."""
    return [Listing(path.stem, json.loads(path.read_text())["tools"]) for path in sorted(HERE.glob("*.json"))]


def published(tool: dict[str, Any]) -> Tool:
    """The tool as an MCP environment publishes it, or `ToolDefinitionError` saying why it cannot be."""
    return Tool.from_schema(
        _identifier(tool["name"]), tool["description"] or "", tool["inputSchema"], lambda **a: a
    )


def outcomes() -> list[dict[str, str]]:
    """The table's rows: a row per listed tool (`listing/name`), and per template that a factory refuses whole."""
    rows = []
    for listing in listings():
        tools: dict[str, dict[str, Any]] = {}
        for tool in listing.tools:
            label = f"{listing.name}/{tool['name']}"
            try:
                tools[label] = published(tool).published()
            except ToolDefinitionError as refused:
                rows.append(
                    {"tool": label, "published as": "", **dict.fromkeys(TEMPLATES, ""), "why": str(refused)}
                )
        cells: dict[str, dict[str, str]] = {label: {} for label in tools}
        why: dict[str, list[str]] = {label: [] for label in tools}
        for name in TEMPLATES:
            template = resolve_template(name)
            family = family_of(template.text)
            shown = list(tools.values())
            plans = plan_tools(template, shown, family)
            refused = refusals(template, plans, family)
            for label, plan in zip(tools, plans, strict=True):
                own = [refusal for refusal in refused if refusal.tool == plan.published["name"]]
                cells[label][name], reasons = _cell(plan.fidelity, own)
                why[label] += [f"{name}: {reason}" for reason in reasons]
            whole = [
                problem for problem in judged(template, shown, family).refusals if _whole(problem, shown)
            ]
            rows += [
                {"tool": f"{listing.name}/{WHOLE_TEMPLATE}", "published as": "", **dict.fromkeys(TEMPLATES, ""),
                 name: "refused", "why": problem}
                for problem in dict.fromkeys(whole)
            ]  # fmt: skip
        rows += [
            {"tool": label, "published as": tool["name"], **cells[label], "why": " | ".join(why[label])}
            for label, tool in tools.items()
        ]
    return sorted(rows, key=lambda row: row["tool"])


def _cell(fidelity: ToolFidelity, own: list[Any]) -> tuple[str, list[str]]:
    """What one template does with one tool, and why when it is not shown whole."""
    problems = list(dict.fromkeys(refusal.problem for refusal in own))
    if fidelity.status == "exact":
        return "exact", problems
    if fidelity.status == "lossless":
        return ("lowered" if fidelity.lowering else "lossless"), problems
    unexplained = [lost for lost in fidelity.lost if not any(refusal.covers(lost) for refusal in own)]
    if fidelity.status == "transformed" and not unexplained and problems:
        return "refused", problems
    detail = fidelity.error or ", ".join(unexplained) or ", ".join(fidelity.lost)
    return fidelity.status, [*problems, f"loses {detail}" if fidelity.status == "transformed" else detail]


def _whole(problem: str, shown: list[dict[str, Any]]) -> bool:
    """Whether a factory's refusal is of the template rather than of one of the tools (`tool: problem`)."""
    return not any(problem.startswith(f"{tool['name']}: ") for tool in shown)


def read_table() -> list[dict[str, str]]:
    """The rows `outcomes.tsv` holds."""
    with TABLE.open(newline="") as table:
        return list(csv.DictReader(table, delimiter="\t"))


def write_table(rows: list[dict[str, str]]) -> None:
    with TABLE.open("w", newline="") as table:
        writer = csv.DictWriter(table, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    found = outcomes()
    write_table(found)
    print(f"{TABLE}: {len(found)} rows")
