"""`agent-env check`: the fidelity matrix of ENV's tools under each chat template, and their token cost."""

from __future__ import annotations

import json
from contextlib import ExitStack, closing
from typing import Annotated

import typer

from agent_env.cli._command import Command
from agent_env.cli._options import (
    EnvironmentArgument,
    JsonOption,
    McpHeaderOption,
    McpOption,
    TokenOption,
    open_target,
    reported,
    rich_console,
)


def check(
    environment: EnvironmentArgument = None,
    templates: Annotated[
        str,
        typer.Option(
            "--templates",
            "-t",
            help="all (TRL's shipped templates, _training variants left out), or names, files or tokenizer folders "
            "separated by commas.",
        ),
    ] = "all",
    stock: Annotated[
        bool,
        typer.Option("--stock", help="Judge each template alone, without the Gemma 4 and gpt-oss lowerings."),
    ] = False,
    json_output: JsonOption = False,
    token: TokenOption = None,
    mcp: McpOption = None,
    mcp_header: McpHeaderOption = None,
) -> None:
    """The fidelity matrix: how each chat template shows each of ENV's tools, and their token cost.

    Each tool is rendered alone, as env.factory builds it for the template: exact (its published schema's JSON
    appears unchanged), lossless (the template rewrites it, lowered for Gemma 4 and gpt-oss, and removing or
    changing any keyword still changes the prompt), transformed (some keywords do not reach the model: listed),
    no tool block, or fails (the template raises). Then what the published tools leave the model to guess under
    any template (no description, undescribed parameters, open objects). Tokens (with all templates, or when
    qwen3 is named): the real Qwen3 tokenizer under qwen3, what a plain TRL environment shows (TRL's own rendering of
    the tool methods) against the published schemas. Exits 1 when a tool is neither exact nor lossless under a template
    named explicitly, or when a trainer's factory would refuse that template for a reason no lowering fixes (said
    under the table).
    """
    from rich.markup import escape

    from agent_env.inspection.probe import judged, schema_tools, trl_instance
    from agent_env.inspection.tokens import TOKEN_TEMPLATE, tool_tokens
    from agent_env.inspection.views import fidelity_json, show_fidelity, show_gaps, show_tokens
    from agent_env.schema import fingerprint
    from agent_env.session import tools_published_elsewhere
    from agent_env.training.families import family_of
    from agent_env.training.fidelity import PROBE
    from agent_env.training.plain import plain_view
    from agent_env.training.templates import resolve_template, shipped_template_names

    explicit = templates != "all"
    with reported("check"), ExitStack() as stack:
        names = (
            [name.strip() for name in templates.split(",") if name.strip()]
            if explicit
            else shipped_template_names()
        )
        if not names:
            raise LookupError(
                "no chat templates to check: TRL, which ships them, is not installed; pass --templates FILE"
            )
        env = stack.enter_context(
            closing(open_target(environment, token=token, mcp=mcp, mcp_header=mcp_header))
        )
        published = env.tools()
        chat_templates = [resolve_template(name) for name in names]
        reports = [
            judged(chat_template, published, None if stock else family_of(chat_template.text))
            for chat_template in chat_templates
        ]
        tokens, basis = None, None
        # Tokens are counted under qwen3 only, so they are shown only when it is asked (or with every template).
        if not explicit or TOKEN_TEMPLATE in names:
            with trl_instance(env) as instance:
                try:
                    view = plain_view(env.provider)
                    tokens = tool_tokens(PROBE, schema_tools(instance), [tool.schema for tool in view.tools])
                    basis = view.basis
                except (LookupError, ImportError) as error:  # no tokenizer, or no TRL to port a listing
                    typer.echo(f"agent-env check: no token counts: {error}", err=True)
    tool_set = fingerprint(published)
    if json_output:
        typer.echo(
            json.dumps(fidelity_json(env.provider.name, tool_set, reports, tokens, published), indent=2)
        )
    else:
        console = rich_console()
        show_fidelity(console, env.provider.name, tool_set, reports)
        show_gaps(console, env.provider.name, published, tools_published_elsewhere(env.provider))
        if tokens is not None:
            console.print()
            show_tokens(console, tokens)
            if basis is not None:
                console.print(f"The lossy column rests on {escape(basis)}.", soft_wrap=True)
    losing = [report.template for report in reports if not report.shows_every_tool()]
    refused = [report.template for report in reports if report.refusals and report.template not in losing]
    if explicit and (losing or refused):
        if losing:
            typer.echo(
                f"agent-env check: not every tool reaches the model whole under {', '.join(losing)}", err=True
            )
        if refused:
            typer.echo(
                f"agent-env check: a trainer's factory refuses {', '.join(refused)} (see why above)", err=True
            )
        raise typer.Exit(1)


COMMAND = Command("check", 40, check)
