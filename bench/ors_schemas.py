"""For the same ORS environment, what TRL's ORS adapter shows the model against what `AgentEnv.ors` shows, per tool,
under TRL's qwen3, gemma4 and gptoss templates.

The environments: `orders`, written with the openreward SDK's own tools and pydantic inputs and served by the SDK's
own server (testbed/ors_orders.py, in the SDK's venv: testbed/ors_venv.py, built on first use); and the GridSim desk
and tau2-airline served by `agent-env serve --ors` (tau2-airline when its data can be had: `AGENT_ENV_TAU2_DATA`).

- TRL's adapter (`trl.experimental.openreward`): its own `_bind_tool_method` writes a typed method per listed tool
  from the listing as the server sent it, and transformers' `get_json_schema` renders that method; the template gets
  that, unlowered (`agent_env.training.plain`'s listing form, which runs TRL's own code).
- `AgentEnv.ors`: the published schema (the listing normalized: refs inlined, titles pruned), lowered for the
  template's family as the factory lowers it.

Per tool and template: the keyword occurrences of the published schema (nested ones included) that do not reach the
model (each one tried: removing it or changing its value leaves the prompt unchanged; for TRL's side each variant goes
through TRL's port first), and the tool block's tokens (the real Qwen3 vocabulary, with each family's special tokens
added: no Gemma or gpt-oss tokenizer can be had here, so those counts are indicative).

    PYTHONPATH=. uv run --frozen python bench/ors_schemas.py
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agent_env import AgentEnv
from agent_env.training.families import family_of, lower
from agent_env.training.fidelity import PROBE, entry, lost_keywords
from agent_env.training.keywords import occurrences
from agent_env.training.plain import _listing_tool
from agent_env.training.templates import resolve_template
from bench._served import served
from bench.tau2_schemas import block_tokens

TEMPLATES = ("qwen3", "gemma4", "gptoss")


@contextlib.contextmanager
def sdk_orders() -> Iterator[str | None]:
    """The SDK's own server on testbed/ors_orders.py; None (and why, printed) when its venv cannot be built."""
    from testbed import ors_venv

    try:
        python = ors_venv.python()
    except ors_venv.PyPIUnreachableError as error:
        print(f"(orders skipped: {error})")
        yield None
        return
    with tempfile.TemporaryDirectory() as folder:
        server = ors_venv.orders(python, Path(folder) / "sdk.log")
        try:
            yield server.url()
        finally:
            server.stop()


def trl_view(tool: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """What TRL's adapter hands the template for a variant of a published tool (its port of the variant as listed)."""
    return lambda variant: (
        _listing_tool(tool.name, variant["description"], variant["inputSchema"], tool.listed_name).schema
    )


def shown_by(
    template: Any, view: Callable[[dict[str, Any]], dict[str, Any]]
) -> Callable[[dict[str, Any]], str]:
    """The prompt `template` renders for a variant of a tool, as `view` hands it over."""
    return lambda variant: template.render(PROBE, [view(variant)])


def report(label: str, env: AgentEnv) -> None:
    tools = env.provider.environment.tools  # type: ignore[attr-defined]
    published = [tool for tool in env.tools() if tool["name"] != "end_turn"]
    print(f"\n== {label}: {len(published)} tools (end_turn aside)")
    for name in TEMPLATES:
        template = resolve_template(name)
        family = family_of(template.text)
        print(
            f"-- {name} ({'lowered for ' + family.name if family else 'no lowering needed'} on agent_env's side)"
        )
        print(
            f"{'tool':28} {'keywords':>8} {'lost: TRL adapter':>18} {'AgentEnv.ors':>12} {'tokens: TRL':>12} {'AgentEnv.ors':>12}"
        )
        totals = [0, 0, 0, 0, 0]
        for tool in published:
            listed = tools[tool["name"]]
            ours = shown_by(template, lambda variant, family=family: entry(lower(variant, family)))
            theirs = shown_by(template, trl_view(listed))
            keywords = sum(1 for _ in occurrences(tool["inputSchema"])) + (1 if tool["description"] else 0)
            lost_trl = len(lost_keywords(tool, theirs, theirs(tool), outermost=False)[0])
            lost_ours = len(lost_keywords(tool, ours, ours(tool), outermost=False)[0])
            as_listed = _listing_tool(
                tool["name"], tool["description"], listed.listed_schema, listed.listed_name
            ).schema
            tokens_trl = block_tokens(name, [as_listed])
            tokens_ours = block_tokens(name, [entry(lower(tool, family))])
            row = [keywords, lost_trl, lost_ours, tokens_trl, tokens_ours]
            totals = [total + value for total, value in zip(totals, row, strict=True)]
            print(f"{tool['name']:28} {row[0]:8d} {row[1]:18d} {row[2]:12d} {row[3]:12d} {row[4]:12d}")
        print(f"{'all':28} {totals[0]:8d} {totals[1]:18d} {totals[2]:12d} {totals[3]:12d} {totals[4]:12d}")


def main() -> None:
    with sdk_orders() as url:
        if url is not None:
            report("orders, on the openreward SDK's own server", AgentEnv.ors(url, "orders"))
    with served("gridsim-desk", ors=True) as (url, _):
        report("gridsim-desk, on agent-env serve --ors", AgentEnv.ors(url, "gridsimdesk"))
    if os.environ.get("AGENT_ENV_TAU2_DATA"):
        with served("tau2-airline", ors=True) as (url, _):
            report("tau2-airline, on agent-env serve --ors", AgentEnv.ors(url, "tau2airline"))
    else:
        print("\n(tau2-airline skipped: set AGENT_ENV_TAU2_DATA to τ²-bench's data folder)")


if __name__ == "__main__":
    main()
