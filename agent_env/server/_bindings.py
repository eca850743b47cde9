"""Which episode each MCP session acts on: its first tool call opens one, and the control API can replace it."""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_env._splits import first_split, note_first_split
from agent_env.server._episodes import ClientAdvice, EpisodeRegistry
from agent_env.server.errors import DatasetNotFoundError

DEFAULT_SPLITS = ("test", "train")
"""Where the default row of an MCP session comes from when none is configured: the first row of the first of these
splits the environment has (the held-out split first: an MCP client is most often an evaluator), else of the first
split the environment names (τ²-bench's mock domain has only `base`)."""

MCP = ClientAdvice(
    start_hint="open a new MCP session (connect again)",
    start_again="open a new MCP session (connect again) to start another",
    make_room="end MCP sessions you no longer use (DELETE /mcp)",
)
"""An MCP client cannot call `reset`: it starts an episode by opening a session."""


@dataclass(eq=False)
class Binding:
    """The episode one MCP session acts on, when the session last used the server, and its requests in flight."""

    episode_id: str
    last_used: float = field(default_factory=time.monotonic)
    in_flight: int = 0


class SessionEpisodes:
    """The episodes of MCP sessions, kept in the registry like any other.

    A session's episode is closed when the session ends: on the client's DELETE, or once the session has had no
    request for the MCP idle timeout, counted as the MCP SDK counts it (from the end of its last request), so a
    client that never says goodbye holds its episode no longer than the SDK holds its session. A binding outlives
    its episode (an idled-out or timed-out episode keeps answering "expired or unknown" to its session, which is
    never moved to a fresh one behind its back); it is forgotten after twice the idle timeout.

    Args:
        episodes: Where the episodes live.
        row: The dataset row a session's episode starts from when its client names none; None: the first row of
            the environment's `test` split (else `train`, else its first split), or the empty row for an environment
            without a dataset.
    """

    def __init__(self, episodes: EpisodeRegistry, row: Mapping[str, Any] | None = None) -> None:
        self.episodes = episodes
        self.row = dict(row) if row is not None else None
        self._bindings: dict[str, Binding] = {}
        self._opening: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    async def episode_for(
        self, mcp_session_id: str, row: Mapping[str, Any] | None = None
    ) -> tuple[str, str | None]:
        """The episode an MCP session acts on; its first call opens one, reset from `row` (None: `default_row`).

        Returns:
            The episode id, and the first observation when this call opened the episode (None otherwise).
        """
        observation = None
        async with self._lock(mcp_session_id):
            binding = self._bindings.get(mcp_session_id)
            if binding is None:
                self.reap()
                start = row if row is not None else await self.default_row()
                episode_id, observation = await self.episodes.open(start, MCP)
                binding = self._bindings[mcp_session_id] = Binding(episode_id)
        binding.last_used = time.monotonic()
        return binding.episode_id, observation

    def bound(self, mcp_session_id: str) -> str | None:
        """The episode an MCP session acts on, when it has one and nothing is opening another for it (then
        `episode_for` waits for that); marks the session used. A session's every call after its first asks this."""
        binding = self._bindings.get(mcp_session_id)
        if binding is None or self._opening.get(mcp_session_id) is not None:
            return None
        binding.last_used = time.monotonic()
        return binding.episode_id

    async def open(self, mcp_session_id: str, row: Mapping[str, Any] | None) -> tuple[str, str | None]:
        """A new episode reset from `row` that the MCP session acts on from now on; its previous one is closed."""
        # Under the lock: a first call that is opening an episode finishes first, and this one replaces it.
        async with self._lock(mcp_session_id):
            self.reap()  # the id is the caller's word: bindings for ids no session uses must not pile up
            episode_id, observation = await self.episodes.open(row, MCP)
            previous = self._bindings.get(mcp_session_id)
            self._bindings[mcp_session_id] = Binding(episode_id)
            if previous is not None and self.episodes.is_live(previous.episode_id):
                self.episodes.close(previous.episode_id)
        return episode_id, observation

    async def default_row(self) -> dict[str, Any]:
        """The row an MCP session starts from when its client names none (see the class's `row`)."""
        if self.row is None:
            self.row = {}
            missing: DatasetNotFoundError | None = None
            for split in DEFAULT_SPLITS:
                try:
                    rows = await self.episodes.dataset_rows(split)
                except DatasetNotFoundError as error:
                    missing = error
                    continue
                if rows:
                    self.row = dict(rows[0])
                    return self.row
            first = first_split(missing, DEFAULT_SPLITS) if missing is not None else None
            if (
                first is not None
            ):  # the rule of every default split (`agent_env._splits`): the environment's first
                note_first_split(self.episodes.environment.__name__, DEFAULT_SPLITS, first)
                rows = await self.episodes.dataset_rows(first)
                self.row = dict(rows[0]) if rows else {}
        return self.row

    def end(self, mcp_session_id: str) -> None:
        """The MCP session ended: close its episode."""
        binding = self._bindings.pop(mcp_session_id, None)
        if binding is not None and self.episodes.is_live(binding.episode_id):
            self.episodes.close(binding.episode_id)

    @contextlib.contextmanager
    def in_use(self, mcp_session_id: str | None) -> Iterator[None]:
        """Around one MCP request of a session: it is not idle while the request runs, and is used when it ends."""
        binding = self._bindings.get(mcp_session_id) if mcp_session_id else None
        if binding is not None:
            binding.in_flight += 1
        try:
            yield
        finally:
            if binding is not None:
                binding.in_flight -= 1
            current = self._bindings.get(mcp_session_id) if mcp_session_id else None
            if current is not None:
                current.last_used = time.monotonic()

    def reap(self) -> None:
        """Close the episodes of sessions idle past the MCP idle timeout, and forget long-idle bindings."""
        idle = self.episodes.limits.mcp_idle_timeout
        if idle is None:
            return
        now = time.monotonic()
        for mcp_session_id, binding in list(self._bindings.items()):
            if binding.in_flight or now - binding.last_used <= idle:
                continue
            if self.episodes.is_live(binding.episode_id):
                self.episodes.close(binding.episode_id)
            if now - binding.last_used > 2 * idle:
                del self._bindings[mcp_session_id]

    @contextlib.asynccontextmanager
    async def reaping(self) -> AsyncIterator[None]:
        """Reap idle sessions' episodes (`reap`) in the background until the context exits."""
        idle = self.episodes.limits.mcp_idle_timeout
        if idle is None:
            yield
            return

        async def reap_forever() -> None:
            while True:
                await asyncio.sleep(min(max(idle / 4, 0.05), 30.0))
                self.reap()

        reaper = asyncio.create_task(reap_forever())
        try:
            yield
        finally:
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper

    def count(self) -> int:
        """How many MCP sessions have an episode."""
        return len(self._bindings)

    def clear(self) -> None:
        """Forget every binding (the server stopped: its sessions and episodes are gone)."""
        self._bindings.clear()

    def _lock(self, mcp_session_id: str) -> asyncio.Lock:
        """The lock that keeps one session's bindings changing one at a time (it lives while someone holds it)."""
        return self._opening.setdefault(mcp_session_id, asyncio.Lock())
