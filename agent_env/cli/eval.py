"""The `agent-env` command: one thin typer command per job, each calling the layer that does it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agent_env.envs import DEFAULT_ENVIRONMENT
from agent_env.server._limits import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_BODY_VALUES,
    DEFAULT_MAX_EPISODES,
    DEFAULT_MCP_IDLE_TIMEOUT,
    LOOPBACK_ORIGINS,
)
from agent_env.server._serve import DEFAULT_HEADER_TIMEOUT, DEFAULT_HOST, DEFAULT_PORT, parse_config
from agent_env.training.templates import DEFAULT_TEMPLATE

if TYPE_CHECKING:
    from rich.console import Console

app = typer.Typer(
    name="agent-env",
    help="Tool-using LLM environments whose tools publish their full JSON Schema.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def agent_env() -> None:
    """Tool-using LLM environments whose tools publish their full JSON Schema."""


@app.command()
def serve(
    environment: Annotated[
        str | None,
        typer.Argument(
            help=f"A built-in environment name (default: {DEFAULT_ENVIRONMENT}), or package.module:Class (or an "
            "MCPEnvironment by name).",
            show_default=False,
        ),
    ] = None,
    host: Annotated[
        str, typer.Option(help="Address to bind; without a token, only loopback unless allowed.")
    ] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(help="Port to bind.")] = DEFAULT_PORT,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="AGENT_ENV_TOKEN", help="Bearer token every request must carry (or AGENT_ENV_TOKEN)."
        ),
    ] = None,
    allow_unauthenticated: Annotated[
        bool, typer.Option("--allow-unauthenticated", help="Serve a non-loopback --host without a token.")
    ] = False,
    max_episodes: Annotated[
        int, typer.Option(help="Most live episodes at once; more get 503.")
    ] = DEFAULT_MAX_EPISODES,
    idle_timeout: Annotated[
        float, typer.Option(help="Seconds before an unused episode is closed.")
    ] = DEFAULT_IDLE_TIMEOUT,
    mcp_idle_timeout: Annotated[
        float,
        typer.Option(help="Seconds before an MCP session without requests ends, closing its episode."),
    ] = DEFAULT_MCP_IDLE_TIMEOUT,
    call_timeout: Annotated[
        float, typer.Option(help="Seconds a reset, tool call or reward may run.")
    ] = DEFAULT_CALL_TIMEOUT,
    max_body_bytes: Annotated[
        int, typer.Option(help="Largest request body accepted; larger gets 413.")
    ] = DEFAULT_MAX_BODY_BYTES,
    max_body_values: Annotated[
        int, typer.Option(help="Most JSON values in one body (counted before parsing); more gets 413.")
    ] = DEFAULT_MAX_BODY_VALUES,
    body_timeout: Annotated[
        float, typer.Option(help="Seconds a request body may take to arrive; slower gets 408.")
    ] = DEFAULT_BODY_TIMEOUT,
    header_timeout: Annotated[
        float, typer.Option(help="Seconds request headers may take to arrive; slower is disconnected.")
    ] = DEFAULT_HEADER_TIMEOUT,
    http: Annotated[
        str,
        typer.Option(help="HTTP parser: auto (httptools where installed, else h11), httptools or h11."),
    ] = "auto",
    loop: Annotated[
        str, typer.Option(help="Event loop: auto (uvloop where installed, else asyncio), uvloop or asyncio.")
    ] = "auto",
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            help="A browser origin to let in besides this machine's pages (scheme://host[:port], :* any port, "
            "or * for any); repeatable."
        ),
    ] = None,
    config: Annotated[
        list[str] | None,
        typer.Option(
            "--config", "-c", help="Environment constructor argument key=value (JSON values parsed)."
        ),
    ] = None,
    mcp_row: Annotated[
        str | None,
        typer.Option(
            help="JSON dataset row an MCP session starts from when its URL names none (default: the first test row)."
        ),
    ] = None,
    openenv: Annotated[
        bool,
        typer.Option(
            "--openenv", help="Also serve OpenEnv's /ws, /mcp dialect, /health, /schema at /openenv."
        ),
    ] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    mcp: McpOption = None,
    mcp_header: McpHeaderOption = None,
) -> None:
    """Serve ENVIRONMENT over HTTP: MCP at /mcp, the episode control API beside it (see docs/server.md), and with
    --openenv OpenEnv's wire surface at /openenv (see docs/openenv.md)."""
    from agent_env.envs import search_working_directory
    from agent_env.errors import AgentEnvError
    from agent_env.inspection.targets import environment_reference
    from agent_env.openenv.server import OpenEnvSurface
    from agent_env.server._serve import parse_row
    from agent_env.server._serve import serve as run_server

    search_working_directory()  # as tools, render and check do
    try:
        options = parse_config(config or [])
        run_server(
            environment_reference(environment, mcp or [], mcp_header or []),
            host=host,
            port=port,
            token=token,
            allow_unauthenticated=allow_unauthenticated,
            max_body_bytes=max_body_bytes,
            max_episodes=max_episodes,
            idle_timeout=idle_timeout,
            call_timeout=call_timeout,
            log_level=log_level,
            mcp_row=parse_row(mcp_row),
            header_timeout=header_timeout,
            http=http,
            loop=loop,
            mcp_idle_timeout=mcp_idle_timeout,
            allowed_origins=[*LOOPBACK_ORIGINS, *(allow_origin or [])],
            body_timeout=body_timeout,
            max_body_values=max_body_values,
            surfaces=[OpenEnvSurface()] if openenv else [],
            **options,
        )
    except (ValueError, LookupError, ImportError, AgentEnvError) as error:
        typer.echo(f"agent-env serve: {error}", err=True)
        raise typer.Exit(2) from None


EnvironmentArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="ENV",
        help=f"A built-in environment (default: {DEFAULT_ENVIRONMENT}), package.module:Class (or an MCPEnvironment "
        "by name), or the URL of a served one.",
        show_default=False,
    ),
]
McpOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp",
        metavar="[NAME=]COMMAND|URL",
        help="An MCP server instead of ENV: a command run over stdio ('node index.js'), or a streamable-HTTP URL. "
        "Repeat with NAME= for several, their tools prefixed NAME_.",
    ),
]
McpHeaderOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp-header",
        metavar="'NAME: VALUE'",
        help="A header sent to every --mcp URL (not --token, which is agent-env's own); repeatable. ${VAR} in VALUE "
        "is read from the environment, to keep secrets off the command line: 'Authorization: Bearer ${MCP_TOKEN}'.",
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(envvar="AGENT_ENV_TOKEN", help="Bearer token of a served environment (or AGENT_ENV_TOKEN)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for machines instead of tables.")]


@app.command()
def tools(
    environment: EnvironmentArgument = None,
    json_output: JsonOption = False,
    token: TokenOption = None,
    mcp: McpOption = None,
    mcp_header: McpHeaderOption = None,
) -> None:
    """List ENV's published tools with their input schemas and fingerprints.

    Each schema gets a short fingerprint, and so does the whole tool set: the one EnvironmentFactory logs when it
    builds, so a training log can be matched to the tools the model saw.
    """
    from agent_env.inspection.listing import tool_listing
    from agent_env.inspection.targets import open_environment

    with (
        _reported("tools"),
        closing(
            open_environment(environment, token=token, mcp=mcp or (), mcp_headers=mcp_header or ())
        ) as env,
    ):
        listing = tool_listing(env)
    if json_output:
        typer.echo(json.dumps(listing, indent=2, ensure_ascii=False))
        return
    from agent_env.inspection.views import show_tools

    show_tools(_console(), listing)


@app.command()
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
        str, typer.Option(help="The dataset split whose first row starts the conversation.")
    ] = "train",
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
    from agent_env.inspection.targets import open_environment
    from agent_env.training.families import family_of
    from agent_env.training.plain import plain_tools, unrenderable
    from agent_env.training.templates import resolve_template

    refused: dict[str, str] = {}
    with (
        _reported("render"),
        closing(
            open_environment(environment, token=token, mcp=mcp or (), mcp_headers=mcp_header or ())
        ) as env,
    ):
        chat_template = resolve_template(template)
        with trl_instance(env, None if stock or lossy else chat_template) as instance:
            conversation = first_turn(env, instance, split)
            if lossy:
                plain = plain_tools(env.provider)
                shown: list[Any] = [tool.schema for tool in plain]
                refused = unrenderable(plain)
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
    for name, why in refused.items():
        typer.echo(
            f"# {name}: TRL cannot render it as written ({why}), so a plain TRL environment could not even start; "
            "shown in its nearest form",
            err=True,
        )
    typer.echo(prompt, nl=False)


@app.command()
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
    from agent_env.inspection.probe import judged, schema_tools, trl_instance
    from agent_env.inspection.targets import open_environment
    from agent_env.inspection.tokens import TOKEN_TEMPLATE, tool_tokens
    from agent_env.inspection.views import fidelity_json, show_fidelity, show_gaps, show_tokens
    from agent_env.schema import fingerprint
    from agent_env.session import tools_published_elsewhere
    from agent_env.training.families import family_of
    from agent_env.training.fidelity import PROBE
    from agent_env.training.plain import plain_tools
    from agent_env.training.templates import resolve_template, shipped_template_names

    explicit = templates != "all"
    with _reported("check"), ExitStack() as stack:
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
            closing(open_environment(environment, token=token, mcp=mcp or (), mcp_headers=mcp_header or ()))
        )
        published = env.tools()
        chat_templates = [resolve_template(name) for name in names]
        reports = [
            judged(chat_template, published, None if stock else family_of(chat_template.text))
            for chat_template in chat_templates
        ]
        tokens = None
        # Tokens are counted under qwen3 only, so they are shown only when it is asked (or with every template).
        if not explicit or TOKEN_TEMPLATE in names:
            with trl_instance(env) as instance:
                try:
                    lossy = [tool.schema for tool in plain_tools(env.provider)]
                    tokens = tool_tokens(PROBE, schema_tools(instance), lossy)
                except (LookupError, ImportError) as error:  # no tokenizer, or no TRL to port a listing
                    typer.echo(f"agent-env check: no token counts: {error}", err=True)
    tool_set = fingerprint(published)
    if json_output:
        typer.echo(
            json.dumps(fidelity_json(env.provider.name, tool_set, reports, tokens, published), indent=2)
        )
    else:
        console = _console()
        show_fidelity(console, env.provider.name, tool_set, reports)
        show_gaps(console, env.provider.name, published, tools_published_elsewhere(env.provider))
        if tokens is not None:
            console.print()
            show_tokens(console, tokens)
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


@app.command()
def rollout(
    environment: EnvironmentArgument = None,
    policy: Annotated[
        str,
        typer.Option(
            help="A baseline policy (do_nothing, arbitrage, arbitrage_with_as), several separated by commas, or all."
        ),
    ] = "all",
    split: Annotated[str, typer.Option(help="The dataset split to play.")] = "test",
    episodes: Annotated[int, typer.Option(help="Episodes per policy: the split's first N tasks.")] = 8,
    plot: Annotated[
        Path | None,
        typer.Option(
            help="Draw the best policy's first episode to this PNG: prices, MW, SoC, AS awards, P&L by hour."
        ),
    ] = None,
    token: TokenOption = None,
) -> None:
    """Play baseline policies on the GridSim desk through the trainer's tools; tabulate rewards.

    Each policy gets an instance from env.factory; each episode is reset(**row), the policy's offers through the
    submit_dam_offers SchemaTool, end_turn, get_reward. Baselines exist only for the desk.
    """
    from rich.progress import Progress

    from agent_env.inspection import rollout as rollouts
    from agent_env.inspection.targets import open_environment
    from agent_env.inspection.views import show_rollout

    with _reported("rollout"):
        env = open_environment(environment, token=token)
        names = rollouts.policy_names(env, policy)
        with Progress(console=_console(stderr=True), transient=True) as progress:
            task = progress.add_task("playing", total=len(names) * episodes)
            played = rollouts.rollout(
                env,
                names,
                split=split,
                episodes=episodes,
                on_episode=lambda episode: progress.update(task, advance=1, description=episode.policy),
            )
    summaries = rollouts.summarize(played)
    console = _console()
    show_rollout(console, summaries, split)
    if plot is not None:
        from agent_env.inspection.plot import plot_episode

        best = max(summaries, key=lambda summary: summary.mean_reward).policy
        episode = next(episode for episode in played if episode.policy == best)
        with _reported("rollout"):
            plot_episode(episode, plot)
        console.print(
            f"Drew {episode.task_id} as played by {best} (reward {episode.reward:.3f}) to {plot}",
            soft_wrap=True,
        )


def _above_zero(value: float) -> float:
    """A typer callback refusing a number that must be above 0 (a timeout) when the options are read."""
    if value <= 0:
        raise typer.BadParameter(f"{value:g} is not above 0")
    return value


def _json_object(option: str, text: str | None) -> dict[str, Any]:
    """An option's JSON object (empty when the option is not given); a ValueError naming the option otherwise."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ValueError(
            f"{option} is not JSON ({error}): give a JSON object, e.g. '{{\"top_k\": 20}}'"
        ) from None
    if not isinstance(value, dict):
        raise ValueError(f"{option} must be a JSON object; got {text}")
    return value


def _model_settings(
    role: str,
    configured: Any,
    base_url: str | None,
    model: str | None,
    api_key_env: str | None,
    temperature: float | None,
) -> dict[str, Any]:
    """The `user=` or `judge=` setting: the --user-* (or --judge-*) options given, each over its key of the mapping
    `-c user='{...}'` (`configured`) gives; nothing when no option is given, and the configuration then stands.

    Raises:
        ValueError: Options over a `-c` setting that is not an endpoint's (`"scripted"`), or options and settings
            that say nowhere the model is (no base URL): the agent's is never used for it.
    """
    given = {"base_url": base_url, "model": model, "api_key_env": api_key_env, "temperature": temperature}
    chosen = {key: value for key, value in given.items() if value is not None}
    if not chosen:
        return {}
    flags = ", ".join(f"--{role}-{key.replace('_', '-')}" for key in chosen)
    name, say = ("names", "says") if len(chosen) == 1 else ("name", "say")
    if configured is not None and not isinstance(configured, dict):
        raise ValueError(
            f"{flags} {name} an endpoint's settings, but -c {role}={json.dumps(configured)} names no endpoint to "
            f"set them on: leave out one or the other, or give the settings as -c {role}='{{\"base_url\": ...}}'"
        )
    merged = {**(configured or {}), **chosen}
    if not merged.get("base_url"):
        raise ValueError(
            f"{flags} {say} how to ask the {role}'s model but not where it is served: add --{role}-base-url (or "
            f"base_url in -c {role}='{{...}}'); the agent's --base-url is never used for it"
        )
    return {role: merged}


def _check_user_settings(env: Any, settings: dict[str, Any]) -> None:
    """Refuse --user-* or --judge-* for an environment without a simulated user, which would ignore them."""
    from agent_env.users import USER_CHANNEL

    named = [f"--{role}-*" for role in ("user", "judge") if role in settings]
    if named and USER_CHANNEL not in {tool["name"] for tool in env.tools()}:
        raise ValueError(
            f"{' and '.join(named)} name a simulated user's or judge's endpoint, but {env.provider.name} has no "
            "simulated user (it publishes no message_user tool): leave them out, or evaluate tau2-airline, "
            "tau2-retail or tau2-mock"
        )


@app.command("eval")
def eval_command(
    environment: EnvironmentArgument = None,
    base_url: Annotated[
        str,
        typer.Option(help="The OpenAI-compatible endpoint's API root, usually ending in /v1."),
    ] = "http://127.0.0.1:8000/v1",  # agent_env.evaluation.DEFAULT_BASE_URL, which imports openai
    model: Annotated[
        str | None, typer.Option(help="The model to ask; by default the one model the server lists.")
    ] = None,
    api_key_env: Annotated[
        str, typer.Option(help="The environment variable holding the API key (the key is never an option).")
    ] = "OPENAI_API_KEY",
    split: Annotated[
        str | None,
        typer.Option(help="The dataset split whose rows start the episodes.", show_default="test"),
    ] = None,
    rows: Annotated[
        Path | None,
        typer.Option(
            "--rows",
            metavar="FILE",
            help="Start the episodes from these rows instead of a split's: JSON lines, one row (a JSON object "
            "with its prompt) a line. How a bare --mcp server, which has no dataset, is evaluated.",
        ),
    ] = None,
    episodes: Annotated[
        int | None,
        typer.Option(
            min=1, help="Episodes to play: the first N rows (cycling, new seeds); default all rows."
        ),
    ] = None,
    trials: Annotated[
        int,
        typer.Option(min=1, help="Play each episode this many times; the summary gives pass^k up to it."),
    ] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes in flight at once.")] = 8,
    max_turns: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="The most replies an episode gets. Default: 200 for an environment with a simulated user "
            "(τ²-bench's max_steps: a τ² environment's own step limit, 200, ends its episodes first), else 10.",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path, typer.Option(help="The JSONL file: the run's settings, then one line per finished episode.")
    ] = Path("eval.jsonl"),
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run --out holds, skipping its finished episodes.")
    ] = False,
    compare: Annotated[
        str | None,
        typer.Option(
            help="lossy: play every episode again with the tools as a plain TRL environment shows them (TRL's own "
            "rendering of the tool methods), and print the paired differences."
        ),
    ] = None,
    template: Annotated[
        str | None,
        typer.Option(
            "--template",
            "-t",
            help="Send the published schemas as env.factory builds them for this chat template (gemma4, gptoss: "
            "lowered).",
        ),
    ] = None,
    temperature: Annotated[float | None, typer.Option(min=0.0, help="Sampling temperature.")] = None,
    top_p: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="Nucleus sampling mass.")] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Most tokens a reply may have.")] = None,
    seed: Annotated[int, typer.Option(help="Episode i is asked with seed + i, in every arm.")] = 0,
    extra_body: Annotated[
        str | None,
        typer.Option(help="JSON object of more request fields, e.g. '{\"top_k\": 20}'."),
    ] = None,
    timeout: Annotated[
        float, typer.Option(callback=_above_zero, help="Seconds one request may take.")
    ] = 300.0,
    max_retries: Annotated[
        int, typer.Option(min=0, help="Retries of a request that met a 429, 5xx, timeout or lost connection.")
    ] = 3,
    plot: Annotated[
        Path | None,
        typer.Option(
            help="Draw the reward distribution (each arm, and the paired differences) to this file, in the format "
            "its suffix names (.png, .pdf, .svg, ...; PNG without one)."
        ),
    ] = None,
    user_base_url: Annotated[
        str | None,
        typer.Option(
            help="The simulated user's OpenAI-compatible endpoint (an environment with a user: τ²-bench)."
        ),
    ] = None,
    user_model: Annotated[
        str | None,
        typer.Option(
            help="The simulated user's model; by default the one its server lists. Needs --user-base-url (or "
            "base_url in -c user='{...}')."
        ),
    ] = None,
    user_api_key_env: Annotated[
        str | None,
        typer.Option(
            help="The environment variable holding the simulated user's API key (default: OPENAI_API_KEY)."
        ),
    ] = None,
    user_temperature: Annotated[
        float | None,
        typer.Option(min=0.0, help="The simulated user's temperature (τ²-bench: 0, the default)."),
    ] = None,
    judge_base_url: Annotated[
        str | None,
        typer.Option(help="The endpoint that judges natural-language assertions (τ²-bench retail's reward)."),
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option(help="The judge's model; by default the one its server lists. Needs --judge-base-url."),
    ] = None,
    judge_api_key_env: Annotated[
        str | None,
        typer.Option(help="The environment variable holding the judge's API key (default: OPENAI_API_KEY)."),
    ] = None,
    config: Annotated[
        list[str] | None,
        typer.Option(
            "--config", "-c", help="Environment constructor argument key=value (JSON values parsed)."
        ),
    ] = None,
    json_output: JsonOption = False,
    token: TokenOption = None,
    mcp: McpOption = None,
    mcp_header: McpHeaderOption = None,
) -> None:
    """Play ENV's episodes against a model behind an OpenAI-compatible endpoint and sum them up.

    Each request sends ENV's tools with their published schemas; each call runs through a session as in training
    (the same validation, the same error text TRL gives the model). An episode ends on end_turn, on a reply with no
    tool calls, or at --max-turns (10 unless ENV has a simulated user); its reward is the environment's. The API key comes from --api-key-env's
    variable (OPENAI_API_KEY; unset sends none), never from an option. See the README, "Evaluate a model".

    An environment with a simulated user (tau2-airline, tau2-retail, tau2-mock) is played by the official protocol:
    a plain reply goes to the user, whose answer comes back as the next user message. --user-* name the user's own
    endpoint (without them the user is scripted, which is not the benchmark's user), each over its key of a
    -c user='{...}' setting, --judge-* the judge of natural-language assertions likewise, and --trials k gives
    pass^k. An episode there takes dozens of replies, and reaching --max-turns scores 0, so it defaults to 200.
    """
    from contextlib import nullcontext

    from rich.progress import Progress

    from agent_env.inspection.targets import open_environment

    with _reported("eval"), ExitStack() as stack:
        try:
            from agent_env.evaluation import Endpoint, Sampling, evaluate
        except ImportError as error:
            if error.name != "openai":
                raise
            raise ImportError(
                "agent-env eval needs the `eval` extra (the openai client): pip install 'agent-env[eval]'"
            ) from None
        body = _json_object("--extra-body", extra_body)
        if rows is not None and split is not None:
            raise ValueError(
                "name either --split or --rows (the rows to play instead of a split's), not both"
            )
        given = None
        if rows is not None:  # read now, before any server starts
            from agent_env.evaluation._given_rows import read_rows

            given = read_rows(rows)
        configured = parse_config(config or [])
        settings = {**configured, **_model_settings(
            "user", configured.get("user"), user_base_url, user_model, user_api_key_env, user_temperature
        ), **_model_settings(
            "judge", configured.get("judge"), judge_base_url, judge_model, judge_api_key_env, None
        )}  # fmt: skip
        if plot is not None:  # found now, not after the whole run
            from agent_env.evaluation._plot import check_plot_path

            check_plot_path(plot)
        env = stack.enter_context(
            closing(
                open_environment(
                    environment, token=token, mcp=mcp or (), mcp_headers=mcp_header or (), config=settings
                )
            )
        )
        _check_user_settings(env, settings)
        endpoint = Endpoint(base_url, model, api_key_env, timeout=timeout, max_retries=max_retries)
        sampling = Sampling(temperature, top_p, max_tokens, seed, body)
        console = _console(stderr=True)
        progress = Progress(console=console, transient=True)
        task = progress.add_task("episodes", total=None)
        with progress if console.is_terminal else nullcontext():  # no bar where nobody watches one
            report = evaluate(
                env,
                endpoint,
                split=split or "test",
                episodes=episodes,
                trials=trials,
                concurrency=concurrency,
                max_turns=max_turns,
                sampling=sampling,
                compare_with=compare,
                template=template,
                out=out,
                resume=resume,
                on_episode=lambda episode, done, total: progress.update(
                    task, completed=done, total=total, description=f"{episode.arm} {episode.episode}"
                ),
                rows=given,
            )
    if json_output:
        typer.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        from agent_env.evaluation._views import show_report

        show_report(_console(), report)
    if plot is not None:
        from agent_env.evaluation._plot import plot_rewards

        with _reported("eval"):
            plot_rewards(report, plot)
        typer.echo(f"Drew the reward distribution to {plot}", err=json_output)
    if not any(episode.scored() for episode in report.episodes):
        typer.echo("agent-env eval: no episode ran to a reward; see the faults", err=True)
        raise typer.Exit(1)


@app.command()
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

    with _reported("demo"):
        run_demo(_console(), train=train, model=str(model) if model else None, steps=steps)


@contextmanager
def _reported(command: str) -> Iterator[None]:
    """Turn the errors a user can fix into one line on stderr and exit code 2, without a traceback."""
    from agent_env.errors import AgentEnvError

    try:
        yield
    except (LookupError, ImportError, ValueError, OSError, AgentEnvError) as error:
        typer.echo(f"agent-env {command}: {error}", err=True)
        raise typer.Exit(2) from None


def _console(*, stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(highlight=False, stderr=stderr)


def main() -> None:
    """The `agent-env` entry point."""
    app()


if __name__ == "__main__":
    main()
