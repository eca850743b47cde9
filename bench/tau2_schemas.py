"""How much of τ²-bench's tools a plain TRL port would show, beside what agent_env shows, per domain.

For tau2-airline and tau2-retail (every published tool, `message_user` and `end_turn` included, as TRL shows them):
- keywords: each JSON Schema keyword's occurrences in the published schemas (what agent_env shows) and in what TRL's
  own `get_json_schema` builds from the same tool methods (`agent_env.training.plain`, the lossy arm of
  `agent-env eval --compare lossy`), nested ones included: object properties, enums, required lists, descriptions;
- tokens: the tool block under TRL's qwen3 template (the real Qwen3 vocabulary), full against lossy, and the full
  block lowered for gemma4 and gptoss (each family's special tokens added to the Qwen3 vocabulary: no Gemma or
  gpt-oss tokenizer can be had here, so those counts are indicative).

Run: PYTHONPATH=. uv run python bench/tau2_schemas.py
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from agent_env import AgentEnv
from agent_env.training.families import family_of, lower
from agent_env.training.fidelity import PROBE, entry
from agent_env.training.plain import plain_tools
from agent_env.training.templates import resolve_template
from bench.fidelity import tokenizer_for

KEYWORDS = ("properties", "required", "items", "enum", "description", "additionalProperties", "anyOf")


def keywords(schema: Any, depth: int = 0) -> Counter[str]:
    """How often each keyword occurs in `schema`, at any depth (the top level's `properties` and `type` aside)."""
    found: Counter[str] = Counter()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in KEYWORDS and not (depth == 0 and key == "properties"):
                found[key] += 1
            if key == "properties" and isinstance(value, dict):
                for field in value.values():
                    found += keywords(field, depth + 1)
            elif isinstance(value, dict | list) and key not in ("enum", "required"):
                found += keywords(value, depth + 1)
    elif isinstance(schema, list):
        for item in schema:
            found += keywords(item, depth + 1)
    return found


def block_tokens(template_name: str, tools: list[dict[str, Any]]) -> int:
    template = resolve_template(template_name)
    tokenizer = tokenizer_for(template_name)
    bare = len(tokenizer.encode(template.render(PROBE, None)).ids)
    return len(tokenizer.encode(template.render(PROBE, tools)).ids) - bare


def main() -> None:
    for domain in ("airline", "retail"):
        env = AgentEnv.local(f"tau2-{domain}")
        published = env.tools()
        plain = plain_tools(env.provider)
        full_keywords = sum((keywords(tool["inputSchema"]) for tool in published), Counter())
        lossy_keywords = sum((keywords(tool.schema["function"]["parameters"]) for tool in plain), Counter())
        refused = [tool.name for tool in plain if tool.refused]
        print(f"== tau2-{domain}: {len(published)} tools; TRL's get_json_schema cannot render "
              + (f"{', '.join(refused)} (a plain TRL environment with them could not start; their nearest form below)"
                 if refused else "none of them refused"))  # fmt: skip
        print(f"{'keyword':22} {'agent_env':>10} {'plain TRL':>10}")
        for keyword in KEYWORDS:
            print(f"{keyword:22} {full_keywords[keyword]:10d} {lossy_keywords[keyword]:10d}")
        nested = [
            f"{tool['name']}.{name}"
            for tool in published
            for name, field in tool["inputSchema"].get("properties", {}).items()
            if field.get("type") == "array" and field.get("items", {}).get("type") == "object"
        ]
        print(f"arrays of objects: {', '.join(nested) or 'none'}; plain TRL shows their items as: "
              + ", ".join(sorted({str(tool.schema['function']['parameters']['properties'][name.split('.')[1]].get('items'))
                                  for tool in plain for name in nested if name.startswith(tool.name + '.')})))  # fmt: skip
        qwen_full = block_tokens("qwen3", [entry(tool) for tool in published])
        qwen_lossy = block_tokens("qwen3", [tool.schema for tool in plain])
        lowered = {
            name: block_tokens(name, [entry(lower(tool, family_of(resolve_template(name).text))) for tool in published])
            for name in ("gemma4", "gptoss")
        }  # fmt: skip
        print(
            f"tool block tokens: qwen3 {qwen_full} (plain TRL: {qwen_lossy}, {qwen_full - qwen_lossy:+d}); "
            f"lowered for gemma4 {lowered['gemma4']}, for gptoss {lowered['gptoss']}"
        )


if __name__ == "__main__":
    main()
