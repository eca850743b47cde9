"""Waiting for room on a full server: a new episode refused for room (`TooManyEpisodesError`) is asked for again as
the server's `Retry-After` says, within a budget; past it, the episode fails as an infrastructure error.

Every client that opens episodes on a server with a limit uses it: `AgentEnv.connect`'s sessions (503
`too_many_episodes`), OpenEnv's (`CAPACITY_REACHED`), a Ray pool's (every actor full).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from agent_env.errors import InfrastructureFailedError
from agent_env.server.errors import TooManyEpisodesError

T = TypeVar("T")

DEFAULT_CAPACITY_WAIT = 30.0
"""Seconds a new episode waits for room on a full server before it fails: room frees in seconds when other clients'
episodes end (an evaluation's, another rank's, an MCP session's), and a server sized below its clients' batch stays
full, so waiting longer only delays the failure (under `GRPOTrainer`, whose resets run one after another, each
session past the limit waits this long)."""
DEFAULT_RETRY_AFTER = 1.0
"""Seconds between asks when the server says nothing of when to ask again."""


def with_room(
    open_episode: Callable[[], T],
    *,
    wait: float,
    environment: str,
    episode: str,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """`open_episode()`, asked again while the server is full (`while_full`), within `wait` seconds in all.

    Args:
        open_episode: Opens the episode; raises `TooManyEpisodesError` when the server has no room.
        wait: Seconds to wait for room in all; 0 asks once.
        environment: The environment's name, as the failure names it.
        episode: Which episode (its row's id, and where), as the failure names it.
        sleep: How to pause (for tests).

    Raises:
        InfrastructureFailedError: The server was still full after `wait` seconds (its cause is the last refusal):
            the episode never started, and says nothing of the model, so a trainer leaves it out and an evaluation
            counts it (`too_many_episodes`).
    """
    try:
        return while_full(open_episode, wait=wait, sleep=sleep)
    except TooManyEpisodesError as full:
        raise no_room(full, wait, environment=environment, episode=episode) from full


def while_full(attempt: Callable[[], T], *, wait: float, sleep: Callable[[float], None] = time.sleep) -> T:
    """`attempt()`, asked again while it raises `TooManyEpisodesError`, within `wait` seconds in all: each pause the
    server's `Retry-After` (or `DEFAULT_RETRY_AFTER`), plus up to half of it at random, so that clients refused
    together do not ask together again. Past `wait`, the last refusal is raised."""
    give_up = time.monotonic() + wait
    while True:
        try:
            return attempt()
        except TooManyEpisodesError as full:
            left = give_up - time.monotonic()
            if left <= 0:
                raise
            pause = full.retry_after if full.retry_after is not None else DEFAULT_RETRY_AFTER
            sleep(min(left, pause * (1 + random.random() / 2)))


def no_room(
    full: TooManyEpisodesError, wait: float, *, environment: str, episode: str
) -> InfrastructureFailedError:
    """The error of an episode that found no room within `wait` seconds, `full` the server's last refusal."""
    waited = (
        f"still full after {wait:g} s of waiting for room"
        if wait > 0
        else "full, and the client waits for no room"
    )
    failure = InfrastructureFailedError(
        f"{full} ({waited}: size the server for every episode the clients run at once)",
        environment=environment,
        episode=episode,
        cause=full,
        starting=True,
    )
    failure.__cause__ = full
    return failure


def check_wait(wait: float) -> None:
    """Refuse a wait for room that is not 0 or more finite seconds."""
    if isinstance(wait, bool) or not isinstance(wait, int | float) or not (0 <= wait < float("inf")):
        raise ValueError(f"capacity_wait must be 0 or more seconds (0: ask once), not {wait!r}")


__all__ = ["DEFAULT_CAPACITY_WAIT", "check_wait", "no_room", "while_full", "with_room"]
