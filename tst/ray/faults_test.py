"""Faults on the pool: an actor killed mid-episode fails only its own episodes, with the typed error, and the next
reset starts afresh on a live actor; a call past its timeout raises the typed timeout error and closes its episode.
No call is ever retried."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import ray

from agent_env.errors import EpisodeEndedError, InfrastructureFailedError, TimedOutEpisodeError
from agent_env.ray import RayProvider
from agent_env.ray import _provider as provider_module
from agent_env.server.errors import CallTimeoutError, EpisodeNotFoundError
from tst.ray.envs import WhereDesk


def test_killing_an_actor_mid_episode_fails_only_its_episodes_and_later_episodes_work(ray_cluster):
    provider = RayProvider(WhereDesk, actors=2, episodes_per_actor=4, pool="doomed")
    try:
        sessions = [provider.open() for _ in range(4)]
        for seed, session in enumerate(sessions):
            session.reset(seed=10 * seed)
        doomed = [session for session in sessions if session.episode_id.startswith("doomed/0/")]
        spared = [session for session in sessions if session.episode_id.startswith("doomed/1/")]
        assert len(doomed) == len(spared) == 2
        old_pid = doomed[0].call_tool("where", {})

        with ThreadPoolExecutor(1) as caller:
            in_flight = caller.submit(doomed[0].call_tool, "hang", {"seconds": 60})
            time.sleep(
                1.0
            )  # let the call reach the actor; if it has not, it meets the restarted actor instead
            ray.kill(ray.get_actor("doomed/0", namespace="agent_env"), no_restart=False)
            with pytest.raises(EpisodeNotFoundError, match=r"call reset\(\.\.\.\) to start a new episode$"):
                in_flight.result(timeout=120)
        assert doomed[0].episode_id is None  # the session let go of the lost episode

        with pytest.raises(EpisodeNotFoundError, match=r"call reset\(\.\.\.\) to start a new episode$"):
            doomed[1].call_tool("add", {"amount": 1})
        for session in spared:  # the other actor's episodes go on, state and all
            seed = int(session.call_tool("add", {"amount": 0}).removeprefix("total "))
            assert session.call_tool("add", {"amount": 1}) == f"total {seed + 1}"

        assert doomed[0].reset(seed=7) == "counter starts at 7"  # afresh, on a live actor
        assert doomed[0].call_tool("add", {"amount": 1}) == "total 8"
        assert doomed[0].call_tool("where", {}) != old_pid
        assert doomed[1].reset(seed=1) == "counter starts at 1"
        for session in sessions:
            session.close()
        assert provider.loads() == {0: 0, 1: 0}  # the restarted actor is back in the pool, empty
    finally:
        provider.shutdown()


def test_a_call_past_the_timeout_raises_the_typed_error_and_closes_its_episode(where):
    for tool in ("hang", "snooze"):  # a blocking tool in its thread, an async one on the actor's event loop
        with where.open() as session:
            session.reset(seed=3)
            episode_id = session.episode_id
            live = sum(where.loads().values())
            started = time.monotonic()
            with pytest.raises(CallTimeoutError) as raised:
                session.call_tool(tool, {"seconds": 30})
            assert time.monotonic() - started < 20
            assert str(raised.value) == (
                f"tool '{tool}' did not finish within the Ray pool's call timeout of 2 s; episode {episode_id!r} "
                "was closed because its state is unknown: call reset(...) to start a new one"
            )
            assert session.episode_id is None and sum(where.loads().values()) == live - 1
            with pytest.raises(EpisodeNotFoundError, match="expired or unknown: it was closed"):
                where.attach(episode_id).call_tool("add", {"amount": 1})
            assert session.reset(seed=4) == "counter starts at 4"
            assert session.episode_id != episode_id


def test_a_reset_past_the_timeout_raises_the_typed_error_once_and_is_not_run_again(where):
    with where.open() as session:
        session.reset(seed=3)
        episode_id = session.episode_id
        live = sum(where.loads().values())
        with pytest.raises(TimedOutEpisodeError) as raised:  # unscored: the episode could not start
            session.reset(seed=4, sleep=30)
        late = raised.value.cause
        assert isinstance(late, CallTimeoutError) and raised.value.starting
        assert str(late).startswith("reset did not finish within the Ray pool's call timeout of 2 s; ")
        assert repr(episode_id) in str(late)  # the session's own episode, not a second try elsewhere
        assert session.episode_id is None and sum(where.loads().values()) == live - 1
        assert session.reset(seed=5) == "counter starts at 5"


def test_an_actor_that_does_not_answer_at_all_times_out_on_the_caller_side(ray_cluster):
    provider = RayProvider(WhereDesk, actors=1, pool="frozen", call_timeout=1.0)
    try:
        with provider.open() as session:
            session.reset()
            started = time.monotonic()
            with pytest.raises(
                CallTimeoutError, match=r"^tool 'freeze': no answer from Ray actor 'frozen/0' "
            ):
                session.call_tool(
                    "freeze", {"seconds": 12}
                )  # blocks the actor's event loop: it cannot time out
            assert 5.5 < time.monotonic() - started < 11
            assert session.episode_id is None
    finally:
        provider.shutdown()


def test_an_actor_dead_for_good_is_made_again_for_the_next_episode(ray_cluster):
    provider = RayProvider(WhereDesk, actors=1, pool="mortal", actor_options={"max_restarts": 0})
    try:
        session = provider.open()
        session.reset(seed=1)
        old_pid = session.call_tool("where", {})
        ray.kill(ray.get_actor("mortal/0", namespace="agent_env"))  # no restart: it is gone for good
        deadline = time.monotonic() + 60
        with pytest.raises(EpisodeNotFoundError, match=r"was lost with Ray actor 'mortal/0', which died"):
            while time.monotonic() < deadline:  # the kill lands a moment later
                session.call_tool("add", {"amount": 1})
                time.sleep(0.1)
        with pytest.raises(EpisodeEndedError, match="the episode was lost where it ran"):
            session.call_tool("add", {"amount": 1})  # opens no episode that was never reset
        with pytest.raises(
            InfrastructureFailedError, match=r"the episode was lost: .* was lost with Ray actor"
        ):
            session.reward()  # unscored, never a reward it did not earn; a trainer reads None
        assert session.reset(seed=5) == "counter starts at 5"
        assert session.call_tool("where", {}) != old_pid  # a new actor under the same name
        session.close()
    finally:
        provider.shutdown()


def test_an_actor_that_does_not_answer_is_passed_over_without_waiting_until_it_answers(
    ray_cluster, monkeypatch
):
    """An actor that cannot answer (frozen here; cut off by a partition, or restarting, on a cluster) costs the
    placement that first asks it `LOAD_TIMEOUT`, once; later placements pass it over at once, and it rejoins the pool
    when it answers."""
    monkeypatch.setattr(provider_module, "LOAD_TIMEOUT", 3.0)
    provider = RayProvider(WhereDesk, actors=2, pool="silent", call_timeout=60.0)
    try:
        frozen = provider.open()
        frozen.reset()
        silent = int(frozen.episode_id.split("/")[1])
        with ThreadPoolExecutor(1) as caller:
            freezing = caller.submit(frozen.call_tool, "freeze", {"seconds": 12})
            time.sleep(0.5)  # let the freeze reach the actor
            started = time.monotonic()
            first = provider.open()
            first.reset(seed=1)
            waited = time.monotonic() - started
            started = time.monotonic()
            later = [provider.open() for _ in range(3)]
            for session in later:
                session.reset(seed=2)
            quick = time.monotonic() - started
            assert waited >= 3.0  # the first placement asked the silent actor and waited for it
            assert quick < 2.0  # the next three did not wait again (they would have, 3 s each)
            placed = {int(session.episode_id.split("/")[1]) for session in [first, *later]}
            assert placed == {1 - silent}
            assert freezing.result(timeout=60) == "thawed"
        assert provider.loads() == {silent: 1, 1 - silent: 4}  # it answered: back in the pool
        for session in [frozen, first, *later]:
            session.close()
    finally:
        provider.shutdown()
