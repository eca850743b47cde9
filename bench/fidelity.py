"""What each model family's template shows of the desk's tools, stock and lowered, and what checking it costs.

Prints, for the desk's tools under TRL's qwen3, gemma4 and gptoss templates (and nemotron_3_nano): the keyword
occurrences of the published schemas that do not reach the model (every occurrence tried: removing it, or changing
its value, leaves the prompt unchanged), as the template stands and after the family's lowering; the tool block's
tokens (the real Qwen3 vocabulary with each family's special tokens added: no Gemma or gpt-oss tokenizer can be had
here, so counts under those templates are indicative); and the first build of the factory, render check included,
for the desk's 12 tools under each template.
"""

from __future__ import annotations

import time

from agent_env import AgentEnv, LocalProvider
from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.inspection.tokens import qwen3_tokenizer_folder
from agent_env.training import EnvironmentFactory, _render_check, fidelity
from agent_env.training.families import Family, family_of, lower
from agent_env.training.fidelity import PROBE, entry, lost_keywords
from agent_env.training.keywords import occurrences
from agent_env.training.templates import ChatTemplate, resolve_template

TEMPLATES = ("qwen3", "nemotron_3_nano", "gemma4", "gemma4_v2", "gptoss")
SPECIAL_TOKENS = {
    "gemma4": ["<bos>", "<|turn>", "<turn|>", "<|tool>", "<tool|>", '<|"|>', "<|tool_call>", "<tool_call|>"],
    "gptoss": [
        "<|start|>",
        "<|end|>",
        "<|message|>",
        "<|channel|>",
        "<|constrain|>",
        "<|return|>",
        "<|call|>",
    ],
}


def tokenizer_for(name: str) -> object:
    from tokenizers import AddedToken, Tokenizer

    tokenizer = Tokenizer.from_file(str(qwen3_tokenizer_folder() / "tokenizer.json"))
    family = "gemma4" if name.startswith("gemma4") else name
    tokenizer.add_special_tokens(
        [AddedToken(token, special=True) for token in SPECIAL_TOKENS.get(family, [])]
    )
    return tokenizer


def lost_count(template: ChatTemplate, published: list[dict], family: Family | None) -> int:
    """Keyword occurrences (every one tried, nested ones too) that do not reach the model."""

    def render(variant: dict) -> str:
        return template.render(PROBE, [entry(lower(variant, family))])

    return sum(len(lost_keywords(tool, render, render(tool), outermost=False)[0]) for tool in published)


def main() -> None:
    published = [tool for tool in GridSimDesk.tools.published if tool["name"] != "end_turn"]
    keywords = sum(1 for tool in published for _ in occurrences(tool["inputSchema"])) + sum(
        1 for tool in published if tool["description"]
    )
    print(
        f"GridSimDesk: {len(published)} tools with parameters, {keywords} keyword occurrences (descriptions included)"
    )
    print(
        f"{'template':18} {'lost, stock':>12} {'lost, lowered':>14} {'block tokens, stock':>20} {'lowered':>8}"
    )
    for name in TEMPLATES:
        template = resolve_template(name)
        family = family_of(template.text)
        counts = [lost_count(template, published, chosen) for chosen in (None, family)]
        tokenizer = tokenizer_for(name)
        bare = len(tokenizer.encode(template.render(PROBE, None)).ids)
        blocks = [
            len(
                tokenizer.encode(
                    template.render(PROBE, [entry(lower(t, chosen)) for t in GridSimDesk.tools.published])
                ).ids
            )
            - bare
            for chosen in (None, family)
        ]
        lowered = f"{counts[1]:14d}" if family else f"{'(none)':>14}"
        print(f"{name:18} {counts[0]:12d} {lowered} {blocks[0]:20d} {blocks[1] if family else '':>8}")
    print(
        "first build of the factory, render check included, desk's 12 tools (transformers imported already)"
    )
    GridSimDesk()  # the desk's own first construction (its bundle) is not the check's cost
    for name in TEMPLATES:
        fidelity.clear_cache()
        _render_check._checked.clear()
        factory = EnvironmentFactory(LocalProvider(GridSimDesk), chat_template=name)
        resolve_template(name).render(PROBE, None)  # the template's tokenizer, made once per process
        start = time.perf_counter()
        factory()
        print(f"  {name:18} {(time.perf_counter() - start) * 1e3:8.1f} ms (target <= 300)")


if __name__ == "__main__":
    AgentEnv  # noqa: B018  (the package is what the bench measures)
    main()
