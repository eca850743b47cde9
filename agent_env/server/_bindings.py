"""Which episode each MCP session acts on: its first tool call opens one, and the control API can replace it."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_env.server._episodes import EpisodeRegistry


@dataclass(eq=False)
class Binding:
    """The episode one MCP session acts on, and when the session last used it."""

    episode_id: str
    last_used: float = field(default_factory=time.monotonic)


class SessionEpisodes:
    """The episodes of MCP sessions, kept in the registry like any other.

    A binding outlives its episode (an idled-out or timed-out episode keeps answering "expired or unknown" to its
    session, which is never moved to a fresh one behind its back); it is forgotten when the session ends, or once
    it has gone unused for the idle timeout, by which time the MCP SDK has ended that session too.

    Args:
        episodes: Where the episodes live.
        row: The dataset row a session's first tool call resets its episode from.
    """

    def __init__(self, episodes: EpisodeRegistry, row: Mapping[str, Any] | None = None) -> None:
        self.episodes = episodes
        self.row = dict(row or {})
        self._bindings: dict[str, Binding] = {}
        self._opening: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    async def episode_for(self, mcp_session_id: str) -> str:
        """The episode an MCP session acts on; its first call opens one, reset from `row`."""
        async with self._lock(mcp_session_id):
            binding = self._bindings.get(mcp_session_id)
            if binding is None:
                self._forget_idle()
                episode_id, _ = await self.episodes.open(self.row)
                binding = self._bindings[mcp_session_id] = Binding(episode_id)
        binding.last_used = time.monotonic()
        return binding.episode_id

    async def open(self, mcp_session_id: str, row: Mapping[str, Any] | None) -> tuple[str, str | None]:
        """A new episode reset from `row` that the MCP session acts on from now on; its previous one is closed."""
        # Under the lock: a first call that is opening an episode finishes first, and this one replaces it.
        async with self._lock(mcp_session_id):
            self._forget_idle()  # the id is the caller's word: bindings for ids no session uses must not pile up
            episode_id, observation = await self.episodes.open(row)
            previous = self._bindings.get(mcp_session_id)
            self._bindings[mcp_session_id] = Binding(episode_id)
            if previous is not None and self.episodes.is_live(previous.episode_id):
                self.episodes.close(previous.episode_id)
        return episode_id, observation

    def end(self, mcp_session_id: str) -> None:
        """The MCP session ended: close its episode."""
        binding = self._bindings.pop(mcp_session_id, None)
        if binding is not None and self.episodes.is_live(binding.episode_id):
            self.episodes.close(binding.episode_id)

    def count(self) -> int:
        """How many MCP sessions have an episode."""
        return len(self._bindings)

    def clear(self) -> None:
        """Forget every binding (the server stopped: its sessions and episodes are gone)."""
        self._bindings.clear()

    def _lock(self, mcp_session_id: str) -> asyncio.Lock:
        """The lock that keeps one session's bindings changing one at a time (it lives while someone holds it)."""
        return self._opening.setdefault(mcp_session_id, asyncio.Lock())

    def _forget_idle(self) -> None:
        idle = self.episodes.limits.idle_timeout
        if idle is None:
            return
        now = time.monotonic()
        for mcp_session_id, binding in list(self._bindings.items()):
            if now - binding.last_used > idle and not self.episodes.is_live(binding.episode_id):
                del self._bindings[mcp_session_id]
