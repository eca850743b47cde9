"""How the commands' results read in a terminal: rich tables and text (the `--json` forms bypass this module)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_env.inspection.rollout import PolicySummary
from agent_env.inspection.tokens import TOKEN_TEMPLATE, TOKENIZER_NAME, ToolTokens
from agent_env.schema._gaps import gaps, remedy
from agent_env.training.fidelity import TemplateFidelity, ToolFidelity

STATUS_STYLES = {
    "exact": "green",
    "lossless": "green",
    "transformed": "yellow",
    "no tool block": "red",
    "fails": "red",
    "mixed": "yellow",
}


def show_tools(console: Console, listing: dict[str, Any]) -> None:
    """The published tools: a summary table, then each tool's description and input schema."""
    console.print(
        f"[bold]{listing['environment']}[/]: {len(listing['tools'])} tools, tool set [bold]{listing['tool_set']}[/] "
        "(the fingerprint EnvironmentFactory logs)"
    )
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("Tool", style="bold", no_wrap=True)
    table.add_column("Schema", no_wrap=True)
    table.add_column("Arguments (* required)")
    for tool in listing["tools"]:
        schema = tool["inputSchema"]
        required = set(schema.get("required", []))
        arguments = ", ".join(
            f"{name}{'*' if name in required else ''}" for name in schema.get("properties", {})
        )
        table.add_row(tool["name"], tool["fingerprint"], arguments or "-")
    console.print(table)
    for tool in listing["tools"]:
        console.print()
        console.rule(f"[bold]{tool['name']}[/]  schema {tool['fingerprint']}", align="left")
        console.print(Text(tool["description"]))
        console.print(Text(json.dumps(tool["inputSchema"], indent=2, ensure_ascii=False)))


def show_fidelity(console: Console, environment: str, tool_set: str, reports: list[TemplateFidelity]) -> None:
    """The fidelity matrix, templates with identical outcomes grouped, then what each losing template loses."""
    groups: dict[str, list[TemplateFidelity]] = {}
    for report in reports:
        groups.setdefault(json.dumps([[vars(tool) for tool in report.tools], report.refusals]), []).append(
            report
        )
    tools = len(reports[0].tools) if reports else 0
    console.print(
        f"How {'1 chat template shows' if len(reports) == 1 else f'{len(reports)} chat templates show'} "
        f"[bold]{environment}[/]'s {tools} tools (tool set {tool_set}), each tool rendered alone through "
        "apply_chat_template as env.factory builds it"
    )
    table = Table(show_edge=False, pad_edge=False, show_lines=True)
    table.add_column("Template(s)", ratio=2)
    table.add_column("Verdict", no_wrap=True)
    table.add_column("What the model does not see", ratio=3)
    for members in groups.values():
        verdict = members[0].verdict()
        table.add_row(
            ", ".join(member.template for member in members),
            Text(_verdict_text(members[0]), style=STATUS_STYLES.get(verdict, "red")),
            Text(_loss_summary(members[0])),
        )
    console.print(table)
    for report in reports:
        if report.refusals:
            console.print(f"\n[bold]{report.template}[/]: a trainer's factory refuses it")
            for refusal in report.refusals:
                console.print(Text(f"- {refusal}"))
    for members in groups.values():
        losing = [tool for tool in members[0].tools if tool.status in ("transformed", "fails")]
        if not losing:
            continue
        console.print(f"\n[bold]{', '.join(member.template for member in members)}[/]: lost per tool")
        detail = Table(show_edge=False, pad_edge=False)
        detail.add_column("Tool", no_wrap=True)
        detail.add_column("Lost (removing it, or changing its value, leaves the prompt unchanged)")
        for tool in losing:
            detail.add_row(tool.tool, Text(tool.error or ", ".join(tool.lost)))
        console.print(detail)


def show_gaps(
    console: Console,
    environment: str,
    published: list[dict[str, Any]],
    elsewhere: frozenset[str] = frozenset(),
) -> None:
    """What each tool leaves the model to guess, whatever the template shows (nothing when every tool says all): a
    table of the tools written here, with how to fill their gaps, and one of those a server publishes (`elsewhere`:
    their names), which no docstring here fills."""
    noted = [(tool["name"], found) for tool in published if (found := gaps(tool))]
    if not noted:
        return
    console.print(
        f"\n[bold]What {environment}'s tools leave the model to guess[/] (under every template: the verdicts above "
        "judge only what is published)"
    )
    for published_elsewhere in (False, True):
        rows = [(name, found) for name, found in noted if (name in elsewhere) == published_elsewhere]
        if not rows:
            continue
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("Tool", no_wrap=True)
        table.add_column(f"Left unsaid ({remedy(published_elsewhere)})")
        for name, found in rows:
            table.add_row(name, Text(", ".join(found)))
        console.print(table)


def _verdict_text(report: TemplateFidelity) -> str:
    refused = "\nrefused under a trainer" if report.refusals else ""
    verdict = report.verdict()
    if verdict == "mixed":
        counts = Counter(tool.status for tool in report.tools)
        return "mixed: " + ", ".join(f"{count} {status}" for status, count in counts.items()) + refused
    lowerings = sorted({tool.lowering for tool in report.tools if tool.lowering})
    if lowerings and verdict != "exact":
        return f"{verdict} ({', '.join(lowerings)} lowering){refused}"
    return verdict + refused


def _loss_summary(report: TemplateFidelity) -> str:
    verdict = report.verdict()
    if verdict == "exact":
        return "nothing: every schema's JSON appears unchanged"
    if verdict == "lossless":
        lowered = any(tool.lowering for tool in report.tools)
        how = (
            "restated in descriptions where the template drops them"
            if lowered
            else "in the template's own layout"
        )
        return f"nothing: every keyword reaches the model, {how}"
    if verdict == "no tool block":
        return "every tool: the template writes no tool block"
    failures = [tool for tool in report.tools if tool.status == "fails"]
    if failures and len(failures) == len(report.tools):
        return f"every tool: the template raises ({failures[0].error})"
    lost = Counter(_keyword(label) for tool in report.tools for label in tool.lost)
    parts = [f"{keyword} x{count}" if count > 1 else keyword for keyword, count in lost.most_common()]
    losing = sum(1 for tool in report.tools if tool.lost)
    summary = f"{losing} of {len(report.tools)} tools lose keywords: {', '.join(parts)}" if parts else ""
    extra = [
        f"{tool.tool} {tool.status}" for tool in report.tools if tool.status in ("no tool block", "fails")
    ]
    return "; ".join(part for part in (summary, ", ".join(extra)) if part)


def _keyword(label: str) -> str:
    return label.removesuffix(" (value)").rsplit(".", 1)[-1]


def show_tokens(console: Console, rows: list[ToolTokens]) -> None:
    """Prompt tokens per tool and in total, lossy (as a plain TRL environment renders them) against full (published
    schemas)."""
    table = Table(
        title=f"Prompt tokens under {TOKEN_TEMPLATE}, {TOKENIZER_NAME} tokenizer",
        show_edge=False,
        pad_edge=False,
    )
    table.add_column("Tool", no_wrap=True)
    table.add_column("Lossy (plain TRL)", justify="right")
    table.add_column("Full (published)", justify="right")
    table.add_column("Full / lossy", justify="right")
    for row in rows:
        name = "total (the tool block)" if row.tool == "total" else row.tool
        table.add_row(name, str(row.lossy), str(row.full), f"{row.full / row.lossy:.1f}x" if row.lossy else "-",
                      style="bold" if row.tool == "total" else None)  # fmt: skip
    console.print(table)


def show_rollout(console: Console, summaries: list[PolicySummary], split: str) -> None:
    """Mean reward and profit per policy."""
    table = Table(title=f"Baseline policies on the {split} split", show_edge=False, pad_edge=False)
    table.add_column("Policy", no_wrap=True)
    table.add_column("Episodes", justify="right")
    table.add_column("Mean reward", justify="right")
    table.add_column("Mean profit", justify="right")
    table.add_column("Mean best achievable", justify="right")
    for summary in summaries:
        table.add_row(
            summary.policy,
            str(summary.episodes),
            f"{summary.mean_reward:.3f}",
            f"${summary.mean_profit:,.0f}",
            f"${summary.mean_bound:,.0f}",
        )
    console.print(table)


def fidelity_json(
    environment: str,
    tool_set: str,
    reports: list[TemplateFidelity],
    tokens: list[ToolTokens] | None,
    published: list[dict[str, Any]],
) -> dict[str, Any]:
    """What `agent-env check --json` prints."""
    return {
        "environment": environment,
        "tool_set": tool_set,
        "gaps": {tool["name"]: gaps(tool) for tool in published},
        "templates": [
            {
                "template": report.template,
                "verdict": report.verdict(),
                "renders_tools": report.renders_tools(),
                "shows_every_tool": report.shows_every_tool(),
                "refusals": list(report.refusals),
                "tools": [_tool_json(tool) for tool in report.tools],
            }
            for report in reports
        ],
        "tokens": None
        if tokens is None
        else {
            "tokenizer": TOKENIZER_NAME,
            "template": TOKEN_TEMPLATE,
            "tools": [vars(row) for row in tokens if row.tool != "total"],
            "total": {"lossy": tokens[-1].lossy, "full": tokens[-1].full},
        },
    }


def _tool_json(tool: ToolFidelity) -> dict[str, Any]:
    return {
        "tool": tool.tool,
        "status": tool.status,
        "lowering": tool.lowering,
        "lost": list(tool.lost),
        "tested": tool.tested,
        "error": tool.error,
    }
