"""MCP sessions and their episodes (`_bindings.py`): one each, from the client's row or the default, replaced
only on request, closed with the session or once it idles."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_env.errors import SplitNotFoundError
from agent_env.server import EpisodeNotFoundError
from agent_env.server._bindings import SessionEpisodes
from agent_env.server._episodes import EpisodeRegistry
from agent_env.server.limits import Limits

from .toy import ToyDesk

pytestmark = pytest.mark.anyio


@pytest.fixture
async def registry() -> AsyncIterator[EpisodeRegistry]:
    episodes = EpisodeRegistry(ToyDesk, {}, Limits(idle_timeout=1.0, mcp_idle_timeout=0.5))
    await episodes.start()
    yield episodes
    await episodes.stop()


async def test_a_session_keeps_its_episode_and_concurrent_first_calls_open_one(registry):
    sessions = SessionEpisodes(registry, {"seed": 5})
    (first, observation), (second, again) = await asyncio.gather(
        sessions.episode_for("s1"), sessions.episode_for("s1")
    )
    assert first == second and registry.count() == 1
    assert [observation, again] == ["counter starts at 5", None]  # only the call that opened it gets it
    assert await registry.call(first, "add", {"amount": 1}) == "total 6"
    assert (await sessions.episode_for("s2"))[0] != first


async def test_a_row_the_client_names_starts_the_episode_instead_of_the_default(registry):
    sessions = SessionEpisodes(registry, {"seed": 5})
    assert (await sessions.episode_for("s1", {"seed": 40}))[1] == "counter starts at 40"
    assert (await sessions.episode_for("s1", {"seed": 1}))[1] is None  # the episode has started already


async def test_without_a_configured_row_a_session_starts_from_the_first_row_of_the_dataset(registry):
    sessions = SessionEpisodes(registry)  # ToyDesk has only a train split: [{"seed": 0}, {"seed": 1}, ...]
    assert await sessions.default_row() == {"seed": 0}
    assert (await sessions.episode_for("s1"))[1] == "counter starts at 0"


class BaseOnly(ToyDesk):
    """A toy whose one split is `base`, as τ²-bench's mock domain's."""

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        if split != "base":
            raise SplitNotFoundError(f"BaseOnly has no split {split!r}", splits=["base"])
        return [{"seed": 7}, {"seed": 8}]


async def test_without_a_test_or_train_split_a_session_starts_from_the_first_split_the_environment_names(
    caplog,
):
    registry = EpisodeRegistry(BaseOnly, {}, Limits())
    await registry.start()
    try:
        with caplog.at_level(logging.WARNING, logger="agent_env"):
            assert await SessionEpisodes(registry).default_row() == {"seed": 7}
        assert caplog.messages == [
            "agent_env: no split was named and BaseOnly has no 'test' or 'train' split: its first split, 'base', "
            "is used instead"
        ]
    finally:
        await registry.stop()


async def test_an_expired_episode_is_not_replaced_behind_the_sessions_back(registry):
    sessions = SessionEpisodes(registry)
    episode, _ = await sessions.episode_for("s1")
    with sessions.in_use("s1"):  # the session is busy (its requests keep the MCP idle timeout off)
        await asyncio.sleep(1.2)  # but its episode idles out in the registry
        assert (await sessions.episode_for("s1"))[0] == episode
    with pytest.raises(EpisodeNotFoundError, match="expired or unknown"):
        await registry.call(episode, "add", {"amount": 1})


async def test_opening_replaces_and_closes_the_previous_episode_and_ending_closes_it(registry):
    sessions = SessionEpisodes(registry)
    implicit, _ = await sessions.episode_for("s1")
    chosen, observation = await sessions.open("s1", {"seed": 9})
    assert observation == "counter starts at 9"
    assert (await sessions.episode_for("s1"))[0] == chosen
    assert not registry.is_live(implicit)
    sessions.end("s1")
    assert not registry.is_live(chosen) and sessions.count() == 0


async def test_an_idle_sessions_episode_is_closed_and_its_binding_forgotten_later(registry):
    sessions = SessionEpisodes(registry)
    episode, _ = await sessions.episode_for("gone")
    with sessions.in_use("gone"):
        await asyncio.sleep(0.7)  # a request in flight is not idle
        sessions.reap()
        assert registry.is_live(episode)
    await asyncio.sleep(0.6)
    sessions.reap()
    assert not registry.is_live(episode) and sessions.count() == 1  # it answers "expired" to its session
    assert (await sessions.episode_for("gone"))[0] == episode
    await asyncio.sleep(1.1)
    sessions.reap()
    assert sessions.count() == 0


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
        implicit, _ = await first_call
        chosen, _ = await opened
        assert (await sessions.episode_for("s1"))[0] == chosen  # the episode POST /episodes answered with
        assert not registry.is_live(implicit) and registry.count() == 1  # and no orphan
        assert await registry.call(chosen, "add", {"amount": 2}) == "total 42"
    finally:
        HeldReset.GATE.set()
        await registry.stop()
