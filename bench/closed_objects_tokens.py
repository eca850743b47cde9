"""Measure what `"additionalProperties": false` costs the prompt: the desk's tool block with every object closed (as
published) against the same block with those keywords taken out, in real Qwen3 tokens under the qwen3 template.

Run: PYTHONPATH=. uv run python bench/closed_objects_tokens.py
"""

from __future__ import annotations

from typing import Any

from agent_env.envs import load_environment
from agent_env.inspection.tokens import TOKEN_TEMPLATE, count_tokens
from agent_env.training.fidelity import PROBE, entry
from agent_env.training.rendering import render


def opened(schema: Any) -> Any:
    """`schema` without its `"additionalProperties": false` keywords."""
    if isinstance(schema, dict):
        return {
            key: opened(value)
            for key, value in schema.items()
            if (key, value) != ("additionalProperties", False)
        }
    if isinstance(schema, list):
        return [opened(value) for value in schema]
    return schema


def closed_objects(schema: Any) -> int:
    """How many `"additionalProperties": false` keywords `schema` has."""
    if isinstance(schema, dict):
        own = schema.get("additionalProperties") is False
        return own + sum(closed_objects(value) for value in schema.values())
    if isinstance(schema, list):
        return sum(closed_objects(value) for value in schema)
    return 0


def block_tokens(tools: list[dict[str, Any]]) -> int:
    """Tokens the tools add to the probe conversation's prompt."""
    return count_tokens(render(PROBE, tools, TOKEN_TEMPLATE)) - count_tokens(
        render(PROBE, [], TOKEN_TEMPLATE)
    )


def main() -> None:
    published = load_environment("gridsim-desk").tools.published
    rows = []
    for tool in published:
        closed = block_tokens([entry(tool)])
        baseline = block_tokens([entry({**tool, "inputSchema": opened(tool["inputSchema"])})])
        rows.append((tool["name"], closed_objects(tool["inputSchema"]), baseline, closed))
    print(
        f'"additionalProperties": false in the desk\'s tool block (Qwen3 tokens, {TOKEN_TEMPLATE} template)'
    )
    print(f"  {'tool':<20} {'objects':>7} {'open':>6} {'closed':>7} {'added':>6} {'per object':>10}")
    for name, objects, baseline, closed in rows:
        print(
            f"  {name:<20} {objects:>7} {baseline:>6} {closed:>7} {closed - baseline:>6} "
            f"{(closed - baseline) / objects:>10.1f}"
        )
    objects = sum(row[1] for row in rows)
    baseline = block_tokens([entry({**t, "inputSchema": opened(t["inputSchema"])}) for t in published])
    closed = block_tokens([entry(tool) for tool in published])
    print(
        f"  {'the whole block':<20} {objects:>7} {baseline:>6} {closed:>7} {closed - baseline:>6} "
        f"{(closed - baseline) / objects:>10.1f}   (+{(closed - baseline) / baseline:.1%})"
    )


if __name__ == "__main__":
    main()
