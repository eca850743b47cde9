"""MCP sessions and their episodes (`_bindings.py`): one each, replaced only on request, closed with the session."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_env.server import EpisodeNotFoundError
from agent_env.server._bindings import SessionEpisodes
from agent_env.server._episodes import EpisodeRegistry
from agent_env.server._limits import Limits

from .toy import ToyDesk

pytestmark = pytest.mark.anyio


@pytest.fixture
async def registry() -> AsyncIterator[EpisodeRegistry]:
    episodes = EpisodeRegistry(ToyDesk, {}, Limits(idle_timeout=1.0))
    await episodes.start()
    yield episodes
    await episodes.stop()


async def test_a_session_keeps_its_episode_and_concurrent_first_calls_open_one(registry):
    sessions = SessionEpisodes(registry, {"seed": 5})
    first, second = await asyncio.gather(sessions.episode_for("s1"), sessions.episode_for("s1"))
    assert first == second and registry.count() == 1
    assert await registry.call(first, "add", {"amount": 1}) == "total 6"
    assert await sessions.episode_for("s2") != first


async def test_an_expired_episode_is_not_replaced_behind_the_sessions_back(registry):
    sessions = SessionEpisodes(registry)
    episode = await sessions.episode_for("s1")
    await asyncio.sleep(1.2)
    assert await sessions.episode_for("s1") == episode
    with pytest.raises(EpisodeNotFoundError, match="expired or unknown"):
        await registry.call(episode, "add", {"amount": 1})


async def test_opening_replaces_and_closes_the_previous_episode_and_ending_closes_it(registry):
    sessions = SessionEpisodes(registry)
    implicit = await sessions.episode_for("s1")
    chosen, observation = await sessions.open("s1", {"seed": 9})
    assert observation == "counter starts at 9"
    assert await sessions.episode_for("s1") == chosen
    assert not registry.is_live(implicit)
    sessions.end("s1")
    assert not registry.is_live(chosen) and sessions.count() == 0


async def test_bindings_of_sessions_gone_for_the_idle_timeout_are_forgotten(registry):
    sessions = SessionEpisodes(registry)
    await sessions.episode_for("gone")
    await asyncio.sleep(1.2)
    registry.reap()
    await sessions.episode_for("new")
    assert sessions.count() == 1


class HeldReset(ToyDesk):
    """A toy whose `reset(hold=True)` waits for `GATE`, so a session's first call can be caught mid-open."""

    GATE = threading.Event()

    def reset(self, seed: int = 0, hold: bool = False, **row: Any) -> str:
        if hold:
            self.GATE.wait(10)
        return super().reset(seed)


async def test_an_episode_opened_for_a_session_while_its_first_call_opens_one_is_the_one_it_keeps():
    HeldReset.GATE.clear()
    registry = EpisodeRegistry(HeldReset, {}, Limits())
    await registry.start()
    try:
        sessions = SessionEpisodes(registry, {"hold": True})
        first_call = asyncio.ensure_future(sessions.episode_for("s1"))
        await asyncio.sleep(0.05)  # the first call is opening its episode, held in reset
        opened = asyncio.ensure_future(sessions.open("s1", {"seed": 40}))
        await asyncio.sleep(0.05)
        HeldReset.GATE.set()
        implicit = await first_call
        chosen, _ = await opened
        assert await sessions.episode_for("s1") == chosen  # the episode POST /episodes answered with
        assert not registry.is_live(implicit) and registry.count() == 1  # and no orphan
        assert await registry.call(chosen, "add", {"amount": 2}) == "total 42"
    finally:
        HeldReset.GATE.set()
        await registry.stop()
