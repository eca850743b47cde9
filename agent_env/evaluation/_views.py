"""How an evaluation's report reads in a terminal: the metrics of each arm side by side, the paired differences, the
faults, and the first errors that ended episodes (rich; the `cli` extra)."""

from __future__ import annotations

import math
from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agent_env.evaluation._calls import MALFORMED, REFUSED
from agent_env.evaluation._run import Report
from agent_env.evaluation._stats import ArmSummary, Estimate, pairs_needed
from agent_env.training.plain import SKIPPED

DETECTABLE = 0.03
"""The difference in mean reward the sample-size line is written for ("a few points")."""


def show_report(console: Console, report: Report) -> None:
    """The summary table, the faults, why episodes failed, and any notes on the endpoint."""
    summaries, comparison = report.summaries, report.comparison
    episodes = max(summary.episodes for summary in summaries)
    console.print(
        f"[bold]{escape(report.environment)}[/] on [bold]{escape(report.model)}[/], split {escape(report.split)}: "
        + counted(episodes, "episode")
        + (f" in each of {len(summaries)} arms" if len(summaries) > 1 else "")
        + f" ({escape(report.out)})"
    )
    for name, shows in report.arms:
        console.print(f"  {name}: {escape(shows)}")
    _show_unrenderable(console, report.unrenderable)
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("")
    for summary in summaries:
        table.add_column(summary.arm, justify="right")
    if comparison is not None:
        table.add_column(f"{comparison.first} - {comparison.second} [95% CI]", justify="right")
    for row in _rows(summaries, report):
        table.add_row(*row)
    console.print(table)
    if comparison is not None:
        line = f"Paired over {counted(comparison.pairs, 'episode')} (same row, same seed in both arms)"
        if math.isfinite(comparison.reward_sd) and comparison.reward_sd > 0:
            needed = pairs_needed(comparison.reward_sd, DETECTABLE)
            line += (
                f"; the paired reward differences have SD {comparison.reward_sd:.3f}, so a true difference of "
                f"{DETECTABLE} is found 80% of the time (at 5%) with about {needed:,} pairs"
            )
        console.print(line + ".", soft_wrap=True)
    pace = report.episodes_per_minute
    console.print(
        f"This invocation played {counted(report.played, 'episode')}"
        + (f" ({pace:.1f} a minute)" if pace is not None else "")
        + (f"; {report.skipped} were already finished in the file" if report.skipped else "")
        + "."
    )
    _show_faults(console, summaries)
    _show_errors(console, report)
    for note in report.notes:
        console.print(f"[yellow]Note:[/] {escape(note)}", soft_wrap=True)


def _show_unrenderable(console: Console, unrenderable: dict[str, str]) -> None:
    """The tools TRL cannot render: the lossy arm sends their nearest form, and a plain TRL environment with one of
    them could not even start."""
    if not unrenderable:
        return
    skipped = {name for name, why in unrenderable.items() if why.startswith(SKIPPED)}
    cannot = len(unrenderable) - len(skipped)
    said = []
    if cannot:
        said.append(
            f"TRL cannot render {counted(cannot, 'tool')} as written, so a plain TRL environment with "
            f"{'it' if cannot == 1 else 'them'} could not even start"
        )
    if skipped:
        said.append(
            f"TRL's port of listed tools skips {counted(len(skipped), 'tool')}, so a plain TRL environment would "
            f"not offer {'it' if len(skipped) == 1 else 'them'}"
        )
    console.print(
        f"  {'; '.join(said)}; the lossy arm sends the nearest form TRL accepts (agent_env.training.plain):",
        soft_wrap=True,
    )
    for name, why in unrenderable.items():
        console.print(f"    {escape(name)}: {escape(why)}", soft_wrap=True)


def counted(count: int, noun: str) -> str:
    """`count` and `noun`, plural unless one: "1 episode", "2 episodes"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _rows(summaries: list[ArmSummary], report: Report) -> list[list[str]]:
    comparison = report.comparison
    rows = [
        ["mean reward [95% CI]", *(_estimate(s.reward) for s in summaries)],
        ["valid-call rate", *(_valid(s) for s in summaries)],
        *(
            [f"  {kind}", *(_share(s.malformed_rates()[kind]) for s in summaries)]
            for kind in MALFORMED
            if any(s.verdicts.get(kind) for s in summaries)
        ),
        [
            "refused by the environment",
            *(
                ", ".join(f"{k} {s.verdicts[k]}" for k in REFUSED if s.verdicts.get(k)) or "0"
                for s in summaries
            ),
        ],
        ["recovery rate (failed calls)", *(_recovery(s) for s in summaries)],
        ["calls / episode", *(_number(s.calls_per_episode, 2) for s in summaries)],
        ["turns / episode", *(_number(s.turns_per_episode, 2) for s in summaries)],
        ["prompt tokens / episode", *(_number(s.prompt_tokens_per_episode, 0) for s in summaries)],
        ["completion tokens / episode", *(_number(s.completion_tokens_per_episode, 0) for s in summaries)],
        *_pass_rows(summaries),
        ["ended by", *(", ".join(f"{k} {v}" for k, v in s.ended_by.items()) for s in summaries)],
        ["failed (not scored)", *(str(s.failed) for s in summaries)],
    ]
    if comparison is not None:
        differences = {
            "mean reward [95% CI]": _estimate(comparison.reward, signed=True),
            "valid-call rate": _estimate(comparison.valid_rate, signed=True, percent=True),
            "calls / episode": _estimate(comparison.calls_per_episode, signed=True, digits=2),
            "prompt tokens / episode": _estimate(comparison.prompt_tokens_per_episode, signed=True, digits=0),
        }
        rows = [[*row, differences.get(row[0], "")] for row in rows]
    return rows


def _pass_rows(summaries: list[ArmSummary]) -> list[list[str]]:
    """pass^k for each k, when every task kept at least two scored plays (`--trials`)."""
    most = max((max(s.pass_k, default=0) for s in summaries), default=0)
    if most < 2:
        return []
    return [[f"pass^{k} (tasks)", *(_pass(s.pass_k.get(k)) for s in summaries)] for k in range(1, most + 1)]


def _pass(estimate: Estimate | None) -> str:
    return "-" if estimate is None else f"{estimate.value:.3f} ({estimate.n})"


def _show_faults(console: Console, summaries: list[ArmSummary]) -> None:
    faults = sorted({fault for summary in summaries for fault in summary.faults})
    if not faults:
        console.print("Faults: none.")
        return
    table = Table(
        title="Faults: episodes each touched", title_justify="left", show_edge=False, pad_edge=False
    )
    table.add_column("fault")
    for summary in summaries:
        table.add_column(summary.arm, justify="right")
    for fault in faults:
        table.add_row(fault, *(f"{s.faults.get(fault, 0)} of {s.episodes}" for s in summaries))
    console.print(table)


def _show_errors(console: Console, report: Report) -> None:
    """The first distinct errors that ended episodes, so the terminal says why they failed (the file has each)."""
    errors: Counter[str] = Counter()
    for summary in report.summaries:
        errors.update(summary.errors)
    if not errors:
        return
    console.print(
        f"Why episodes failed (the first distinct errors; each episode's is in {escape(report.out)}):",
        soft_wrap=True,
    )
    for message, count in errors.items():
        console.print(f"  {counted(count, 'episode')}: {escape(message)}", soft_wrap=True)


def _estimate(
    estimate: Estimate | None, *, signed: bool = False, percent: bool = False, digits: int = 3
) -> str:
    if estimate is None or not math.isfinite(estimate.value):
        return "-"
    scale, unit = (100.0, " pts") if percent else (1.0, "")
    sign = "+" if signed else ""
    value = f"{estimate.value * scale:{sign},.{digits if not percent else 1}f}{unit}"
    if not (math.isfinite(estimate.low) and math.isfinite(estimate.high)):
        return value
    places = digits if not percent else 1
    return f"{value} [{estimate.low * scale:{sign},.{places}f}, {estimate.high * scale:{sign},.{places}f}]"


def _valid(summary: ArmSummary) -> str:
    if not summary.calls:
        return "- (no calls)"
    valid = summary.calls - sum(summary.verdicts.get(kind, 0) for kind in MALFORMED)
    return f"{summary.valid_rate():.1%} ({valid}/{summary.calls})"


def _recovery(summary: ArmSummary) -> str:
    if not summary.recoverable:
        return "- (none failed)"
    return f"{summary.recovery_rate():.1%} ({summary.recovered}/{summary.recoverable})"


def _share(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.1%}"


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:,.{digits}f}"
