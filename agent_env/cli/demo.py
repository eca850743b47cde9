"""`agent-env demo`: the main job on the built-in GridSim desk, what `make demo` runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent_env.cli._command import Command
from agent_env.cli._options import reported, rich_console


def demo(
    train: Annotated[
        bool,
        typer.Option("--train", help="Then run real trl.GRPOTrainer steps (needs TRL and torch installed)."),
    ] = False,
    model: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            file_okay=False,
            help="Train this local model folder instead of a tiny random Qwen3 (implies --train).",
        ),
    ] = None,
    steps: Annotated[
        int, typer.Option(min=1, help="GRPO steps with --train (about 30 s each on 2 CPU cores).")
    ] = 2,
) -> None:
    """The main job on the built-in default, the GridSim desk: what `make demo` runs.

    Builds the TRL factory (render check included), shows the submit_dam_offers tool block the model sees next to the
    lossy one with token counts, plays one episode through the SchemaTools (a malformed call included) and scores it.
    With --train, then runs real trl.GRPOTrainer steps: TRL and torch must be installed.
    """
    import os

    # The short form needs no torch, and `make demo` installs none: transformers' "PyTorch was not found" is noise.
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    from agent_env.demo import run_demo

    with reported("demo"):
        run_demo(rich_console(), train=train, model=str(model) if model else None, steps=steps)


COMMAND = Command("demo", 70, demo)
