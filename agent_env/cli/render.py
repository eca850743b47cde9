"""`agent-env render`: the exact prompt the model gets for its first turn, tool block included."""

from __future__ import annotations

from contextlib import closing
from typing import Annotated, Any

import typer

from agent_env.cli._command import Command
from agent_env.cli._options import (
    EnvironmentArgument,
    McpHeaderOption,
    McpOption,
    TokenOption,
    open_target,
    reported,
)
from agent_env.training.templates import DEFAULT_TEMPLATE


def render(
    environment: EnvironmentArgument = None,
    template: Annotated[
        str,
        typer.Option(
            "--template",
            "-t",
            help="A TRL shipped template (qwen3, llama3_1, gemma4, gptoss, ...), a .jinja file, or a tokenizer "
            "folder.",
        ),
    ] = DEFAULT_TEMPLATE,
    lossy: Annotated[
        bool,
        typer.Option(
            "--lossy",
            help="Show the tools as a plain TRL environment would (TRL's own rendering of the tool methods) "
            "instead of the published schemas.",
        ),
    ] = False,
    stock: Annotated[
        bool,
        typer.Option(
            "--stock", help="Show the published schemas as the template alone does, without lowering."
        ),
    ] = False,
    split: Annotated[
        str | None,
        typer.Option(
            help="The dataset split whose first row starts the conversation; without one, train, or the "
            "environment's first split if it has no train split.",
            show_default="train",
        ),
    ] = None,
    token: TokenOption = None,
    mcp: McpOption = None,
    mcp_header: McpHeaderOption = None,
) -> None:
    """Print the exact prompt the model gets for its first turn, tool block included.

    The conversation is the split's first row's prompt with the reset observation appended, as TRL builds it (a plain
    user turn when ENV has no dataset). The tools are the SchemaTools `env.factory` builds for the template: the
    published schemas, lowered for Gemma 4 and gpt-oss templates so that nothing is lost (--stock: as published,
    whatever the template drops). The prompt goes to stdout; a one-line summary to stderr.
    """
    from agent_env.inspection.probe import first_turn, schema_tools, trl_instance
    from agent_env.training.families import family_of
    from agent_env.training.plain import PlainTool, plain_view
    from agent_env.training.templates import resolve_template

    refused: dict[str, PlainTool] = {}
    basis: str | None = None
    with (
        reported("render"),
        closing(open_target(environment, token=token, mcp=mcp, mcp_header=mcp_header)) as env,
    ):
        chat_template = resolve_template(template)
        with trl_instance(env, None if stock or lossy else chat_template) as instance:
            conversation = first_turn(env, instance, split)
            if lossy:
                view = plain_view(env.provider)
                shown: list[Any] = [tool.schema for tool in view.tools]
                refused = {tool.name: tool for tool in view.tools if tool.refused is not None}
                basis = view.basis
            else:
                shown = schema_tools(instance)
            prompt = chat_template.render(conversation, shown)
    family = family_of(chat_template.text)
    if lossy:
        kind = "a plain TRL environment renders them (the lossy path)"
    elif family is not None and not stock:
        kind = f"published schemas lowered for {family.name} (SchemaTools)"
    else:
        kind = "published schemas (SchemaTools)"
    typer.echo(f"# {env.provider.name} under {template}: {len(shown)} tools as {kind}", err=True)
    if basis is not None:
        typer.echo(f"# the lossy path rests on {basis}", err=True)
    for name, plain in refused.items():
        if plain.skipped:
            said = f"{plain.refused}"
        else:
            said = f"TRL cannot render it as written ({plain.refused}), so a plain TRL environment could not even start"
        typer.echo(f"# {name}: {said}; shown in its nearest form", err=True)
    typer.echo(prompt, nl=False)


COMMAND = Command("render", 30, render)
