"""The registry's episodes as OpenEnv sessions: which have a WebSocket attached, and each one's step count.

An OpenEnv session is an episode of the server's registry (`Episodes`, the registry's face a surface sees) and its
id is the episode id, so the control API and the OpenEnv surface act on the same episodes under the same limits.
This keeps only what OpenEnv adds: a WebSocket attached to an episode (one at most), an `openenv/session/close`
that waits for that socket to go, and the step count its `state` message reports.
"""

from __future__ import annotations

from typing import Any

from agent_env.server.errors import InvalidRequestError
from agent_env.server.surface import ClientAdvice, Episodes

OPENENV = ClientAdvice(
    start_hint="call reset(...)",
    start_again="reset on a new session (a new /ws connection, or openenv/session/create)",
    make_room="close sessions you no longer use (a close message, or openenv/session/close)",
)
"""OpenEnv's clients reset an episode, and start afresh on a new connection or session."""


class OpenEnvSessions:
    """The OpenEnv view of one registry's episodes."""

    def __init__(self, episodes: Episodes) -> None:
        self.episodes = episodes
        self._attached: set[str] = set()
        self._closing: set[str] = set()
        self._steps: dict[str, int] = {}

    async def open(self, row: dict[str, Any] | None = None, *, attach: bool) -> tuple[str, str | None]:
        """A new episode, reset from `row` (None: opened but not started, as OpenEnv's reset starts it); attached to
        the caller's socket if `attach`. Returns its id and first observation.

        Raises:
            TooManyEpisodesError: The server holds `max_episodes` already.
            ResetError: The environment's reset refused the row (nothing is left open).
        """
        self._forget_closed()
        episode_id, observation = await self.episodes.open(row, OPENENV)
        self._steps[episode_id] = 0
        if attach:
            self._attached.add(episode_id)
        return episode_id, observation

    def attach(self, episode_id: str) -> None:
        """Attach a WebSocket to an episode opened over `POST /mcp` (`/ws?session_id=`).

        Raises:
            EpisodeNotFoundError: No live episode has that id.
            InvalidRequestError: A WebSocket is attached to it already.
        """
        if not self.episodes.is_live(episode_id):
            self.episodes.close(episode_id, OPENENV)  # raises the registry's own "expired or unknown" error
        if episode_id in self._attached:
            raise InvalidRequestError(
                f"session {episode_id[:64]!r} already has a WebSocket attached; one socket drives a session at a time"
            )
        self._attached.add(episode_id)
        self._steps.setdefault(episode_id, 0)

    def detach(self, episode_id: str, *, close: bool) -> None:
        """The socket attached to an episode went away: close the episode if `close` or if a close waits for it."""
        self._attached.discard(episode_id)
        if close or episode_id in self._closing:
            self._closing.discard(episode_id)
            self._close_now(episode_id)

    def close(self, episode_id: str) -> bool:
        """Close an episode now, or once its socket detaches; returns whether it closed now.

        Raises:
            EpisodeNotFoundError: No live episode has that id.
        """
        if not self.episodes.is_live(episode_id):
            self.episodes.close(episode_id, OPENENV)  # raises the registry's own "expired or unknown" error
        if episode_id in self._attached:
            self._closing.add(episode_id)
            return False
        self._close_now(episode_id)
        return True

    def step(self, episode_id: str) -> None:
        """Count one step (a `step` message, or a `tools/call`)."""
        self._steps[episode_id] = self._steps.get(episode_id, 0) + 1

    def restart(self, episode_id: str) -> None:
        """The episode was reset: its steps count from zero."""
        self._steps[episode_id] = 0

    def steps(self, episode_id: str) -> int:
        """Steps since the episode's last reset."""
        return self._steps.get(episode_id, 0)

    def _close_now(self, episode_id: str) -> None:
        self._steps.pop(episode_id, None)
        if self.episodes.is_live(episode_id):
            self.episodes.close(episode_id)

    def _forget_closed(self) -> None:
        """Forget the counts of episodes the registry closed behind our back (idled out, timed out)."""
        for episode_id in [key for key in self._steps if not self.episodes.is_live(key)]:
            if episode_id not in self._attached:
                del self._steps[episode_id]
