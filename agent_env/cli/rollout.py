"""`agent-env rollout`: baseline policies played on the GridSim desk through the trainer's tools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent_env.cli._command import Command
from agent_env.cli._options import EnvironmentArgument, TokenOption, open_target, reported, rich_console


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
    from agent_env.inspection.views import show_rollout

    with reported("rollout"):
        env = open_target(environment, token=token)
        names = rollouts.policy_names(env, policy)
        with Progress(console=rich_console(stderr=True), transient=True) as progress:
            task = progress.add_task("playing", total=len(names) * episodes)
            played = rollouts.rollout(
                env,
                names,
                split=split,
                episodes=episodes,
                on_episode=lambda episode: progress.update(task, advance=1, description=episode.policy),
            )
    summaries = rollouts.summarize(played)
    console = rich_console()
    show_rollout(console, summaries, split)
    if plot is not None:
        from agent_env.inspection.plot import plot_episode

        best = max(summaries, key=lambda summary: summary.mean_reward).policy
        episode = next(episode for episode in played if episode.policy == best)
        with reported("rollout"):
            plot_episode(episode, plot)
        console.print(
            f"Drew {episode.task_id} as played by {best} (reward {episode.reward:.3f}) to {plot}",
            soft_wrap=True,
        )


COMMAND = Command("rollout", 50, rollout)
