"""`agent-env eval`: ENV's episodes played against a model behind an OpenAI-compatible endpoint, summed up."""

from __future__ import annotations

import json
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Annotated, Any

import typer

from agent_env.cli._command import Command
from agent_env.cli._options import (
    ConfigOption,
    EnvironmentArgument,
    JsonOption,
    McpHeaderOption,
    McpOption,
    TokenOption,
    constructor_arguments,
    open_target,
    reported,
    rich_console,
)


def _above_zero(value: float | None) -> float | None:
    """A typer callback refusing a number that must be above 0 (a timeout) when the options are read."""
    if value is not None and value <= 0:
        raise typer.BadParameter(f"{value:g} is not above 0")
    return value


def _not_negative(value: float | None) -> float | None:
    """A typer callback refusing a number of seconds below 0."""
    if value is not None and value < 0:
        raise typer.BadParameter(f"{value:g} is below 0")
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
        typer.Option(
            help="The dataset split whose rows start the episodes; without one, the split the environment names "
            "for evaluation (tau2-bench's base), else test, or the environment's first split if it has no test split.",
            show_default="the environment's, else test",
        ),
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
        typer.Option(
            min=1,
            help="Play each episode this many times; the summary gives pass^k up to it (as τ²-bench: up to the "
            "fewest scored plays of a task).",
        ),
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
        float,
        typer.Option(
            callback=_above_zero,
            help="Seconds one request to the agent's endpoint may take (the user's and the judge's: "
            "-c user='{\"timeout\": S}', 300 unless set).",
        ),
    ] = 300.0,
    max_retries: Annotated[
        int,
        typer.Option(
            min=0,
            help="Retries of a request to the agent's endpoint that met a 429, 5xx, timeout or lost connection. "
            "The simulated user's and the judge's retries are their own: -c user='{\"max_retries\": N}' (and "
            "judge=...), 3 unless set.",
        ),
    ] = 3,
    call_timeout: Annotated[
        float | None,
        typer.Option(
            callback=_above_zero,
            help="Seconds one call of an episode in this process (its reset, a tool, its reward) may run; past it "
            "the model reads the timeout and the episode ends unscored (fault call_timeout). A served ENV's is its "
            "server's (agent-env serve --call-timeout).",
            show_default="60",
        ),
    ] = None,
    episode_budget: Annotated[
        float | None,
        typer.Option(
            callback=_above_zero,
            help="Seconds all of an episode's calls may run together (the model's time is not counted); past it "
            "the episode ends unscored (fault episode_budget). A served ENV's is its server's.",
            show_default="600",
        ),
    ] = None,
    capacity_wait: Annotated[
        float | None,
        typer.Option(
            callback=_not_negative,
            help="Seconds an episode waits for room on a full served ENV before it ends unscored (fault "
            "too_many_episodes).",
            show_default="30",
        ),
    ] = None,
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
    config: ConfigOption = None,
    json_output: JsonOption = False,
    token: TokenOption = None,
    mcp: McpOption = None,
    mcp_header: McpHeaderOption = None,
) -> None:
    """Play ENV's episodes against a model behind an OpenAI-compatible endpoint and sum them up.

    Each request sends ENV's tools with their published schemas; each call runs through a session as in training
    (the same validation, the same error text TRL gives the model). An episode ends on end_turn, on a reply with no
    tool calls, or at --max-turns (10 unless ENV has a simulated user); its reward is the environment's. The API key
    comes from --api-key-env's variable (OPENAI_API_KEY; unset sends none), never from an option. See docs/eval.md.

    An environment with a simulated user (tau2-airline, tau2-retail, tau2-telecom, tau2-mock) is played by the
    official protocol: a plain reply goes to the user, whose answer comes back as the next user message. --user-*
    name the user's own endpoint (without them the user is scripted, which is not the benchmark's user), each over
    its key of a -c user='{...}' setting, --judge-* the judge of natural-language assertions likewise, and --trials
    k gives pass^k. An episode there takes dozens of replies, and reaching --max-turns scores 0, so it defaults to
    200. --timeout and --max-retries are the agent's endpoint's only: the user's and the judge's are their own
    settings, -c user='{"max_retries": N, "timeout": S}' (and -c judge=...).
    """
    from contextlib import nullcontext

    from rich.progress import Progress

    with reported("eval"), ExitStack() as stack:
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
        configured = constructor_arguments(config)
        settings = {**configured, **_model_settings(
            "user", configured.get("user"), user_base_url, user_model, user_api_key_env, user_temperature
        ), **_model_settings(
            "judge", configured.get("judge"), judge_base_url, judge_model, judge_api_key_env, None
        )}  # fmt: skip
        if plot is not None:  # found now, not after the whole run
            from agent_env.evaluation._plot import check_plot_path

            check_plot_path(plot)
        limits = {
            "call_timeout": call_timeout,
            "episode_budget": episode_budget,
            "capacity_wait": capacity_wait,
        }
        env = stack.enter_context(
            closing(
                open_target(
                    environment,
                    token=token,
                    mcp=mcp,
                    mcp_header=mcp_header,
                    config=settings,
                    limits={name: value for name, value in limits.items() if value is not None},
                )
            )
        )
        _check_user_settings(env, settings)
        endpoint = Endpoint(base_url, model, api_key_env, timeout=timeout, max_retries=max_retries)
        sampling = Sampling(temperature, top_p, max_tokens, seed, body)
        console = rich_console(stderr=True)
        progress = Progress(console=console, transient=True)
        task = progress.add_task("episodes", total=None)
        with progress if console.is_terminal else nullcontext():  # no bar where nobody watches one
            report = evaluate(
                env,
                endpoint,
                split=split,
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

        show_report(rich_console(), report)
    if plot is not None:
        from agent_env.evaluation._plot import plot_rewards

        with reported("eval"):
            plot_rewards(report, plot)
        typer.echo(f"Drew the reward distribution to {plot}", err=json_output)
    if not any(episode.scored() for episode in report.episodes):
        typer.echo("agent-env eval: no episode ran to a reward; see the faults", err=True)
        raise typer.Exit(1)


COMMAND = Command("eval", 60, eval_command)
