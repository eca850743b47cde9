"""`RayProvider`: episodes placed on the least-loaded actor and kept there, routed by id from any process, a factory
that travels as names and settings, a full pool refused clearly, and a pool that serves other tools refused."""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import re
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import pytest
import ray

from agent_env import AgentEnv, Environment, InfrastructureFailedError, ToolFailedError
from agent_env.ray import PoolMismatchError, RayProvider, RaySession
from agent_env.server.errors import EpisodeNotFoundError, ResetError, TooManyEpisodesError
from agent_env.session import Session
from tst.ray.child import continue_an_episode, play_an_episode
from tst.ray.envs import OtherDesk, WhereDesk


def actor_pid(provider: RayProvider, episode_id: str) -> str:
    name = episode_id.rsplit("/", 1)[0]
    return str(ray.get(ray.get_actor(name, namespace="agent_env").describe.remote())["pid"])


def test_each_episode_stays_on_one_actor_and_episodes_spread_evenly_over_the_pool(where):
    with contextlib.ExitStack() as stack:
        sessions = [stack.enter_context(where.open()) for _ in range(8)]
        for seed, session in enumerate(sessions):
            session.reset(seed=seed)
        pids = [{session.call_tool("where", {}) for _ in range(5)} for session in sessions]
        assert all(len(seen) == 1 for seen in pids)  # every call of an episode ran in one process
        for session, seen in zip(sessions, pids, strict=True):
            assert seen == {actor_pid(where, session.episode_id)}  # the actor its id names
        assert where.loads() == {
            0: 2,
            1: 2,
            2: 2,
            3: 2,
        }  # placed on the least-loaded actor, one after another
        assert len(set().union(*pids)) == 4
        sessions[0].reset(seed=9)  # a later episode of the session stays where it is
        assert sessions[0].call_tool("where", {}) == next(iter(pids[0]))
    assert where.loads() == {0: 0, 1: 0, 2: 0, 3: 0}  # closing a session frees its episode


def test_a_full_pool_is_waited_on_until_an_episode_closes_and_past_the_wait_is_an_infrastructure_error(
    where, monkeypatch
):
    monkeypatch.setattr(where, "capacity_wait", 0.5)
    with contextlib.ExitStack() as stack:
        sessions = [stack.enter_context(where.open()) for _ in range(12)]
        for session in sessions:
            session.reset()
        extra = stack.enter_context(where.open())
        started = time.monotonic()
        with pytest.raises(InfrastructureFailedError) as raised:  # the episode could not start: unscored
            extra.reset()
        assert time.monotonic() - started >= 0.5
        assert isinstance(raised.value.cause, TooManyEpisodesError) and str(raised.value.cause) == (
            "reset: Ray pool 'where' is full: its 4 actors hold 3 live episodes each (episodes_per_actor); close "
            "finished sessions, wait for idle ones to expire, or make the pool bigger (actors=, "
            "episodes_per_actor=)"
        )
        assert extra.episode_id is None
        freed = sessions[5].episode_id.split("/")[1]
        monkeypatch.setattr(where, "capacity_wait", 10)
        threading.Timer(1.0, sessions[5].close).start()  # room frees while the reset waits
        assert extra.reset(seed=4) == "counter starts at 4"
        assert extra.episode_id.split("/")[1] == freed  # the one actor with room


def test_a_factory_pickled_into_a_spawned_child_plays_a_whole_episode_and_routes_by_episode_id(where):
    env = AgentEnv(where)
    parent = where.open()
    parent.reset(seed=1)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
        played = child.submit(play_an_episode, env.factory).result(timeout=300)
        continued = child.submit(continue_an_episode, where, parent.episode_id).result(timeout=60)
    assert played[:2] == ["counter starts at 2", "total 5"]
    assert played[2] == played[3]  # both calls on one actor
    pool_pids = {actor_pid(where, f"where/{index}/x") for index in range(4)}
    assert played[2] in pool_pids  # the child joined the pool this process made, rather than making its own
    assert played[4] == 5.0
    assert continued == [
        "total 11",
        actor_pid(where, parent.episode_id),
    ]  # the parent's episode, on its actor
    assert parent.call_tool("add", {"amount": 1}) == "total 12"
    parent.close()


def test_a_provider_pickles_as_names_and_settings_and_carries_the_cluster_it_is_in(where, ray_cluster):
    fresh = RayProvider(WhereDesk, actors=3, pool="never-used", call_timeout=None, start=2)
    data = pickle.dumps(fresh)
    assert b"ActorHandle" not in data and len(data) < 2000
    copy = pickle.loads(data)
    assert copy.pool.settings.address == ray_cluster  # a spawned child joins this cluster, not a new one
    assert (copy.pool.settings.actors, copy.pool.host.call_timeout, copy.config) == (3, None, {"start": 2})
    assert copy.tools() == WhereDesk.tools.published and copy.name == "WhereDesk"
    assert repr(copy) == "RayProvider('WhereDesk', pool='never-used', namespace='agent_env', actors=3)"
    assert copy.dataset_rows("train") == [{"seed": 0}, {"seed": 1}, {"seed": 2}]
    env = AgentEnv.ray(WhereDesk, chat_template="llama3_1", pool="never-used", actors=3, start=2)
    factory = pickle.loads(pickle.dumps(env.factory))
    assert "llama3_1" in repr(factory) and factory.provider.config == {"start": 2}


def test_a_pool_serving_other_tools_or_settings_is_refused_before_any_episode_runs(ray_cluster):
    first = RayProvider(WhereDesk, actors=1, pool="versioned")
    try:
        with first.open() as session:
            session.reset()
        newer = RayProvider(OtherDesk, actors=1, pool="versioned")
        with pytest.raises(PoolMismatchError) as raised:
            newer.open().reset()
        assert str(raised.value).startswith(
            "Ray actor 'versioned/0' (namespace 'agent_env') serves tool set "
            f"{first.pool.tool_set} of tst.ray.envs:WhereDesk, but this process publishes tool set "
            f"{newer.pool.tool_set}: the pool was started from another version of the environment."
        )
        configured = RayProvider(WhereDesk, actors=1, pool="versioned", start=5)
        with pytest.raises(PoolMismatchError, match=r"\(config=\{\} there, \{'start': 5\} here\)"):
            configured.open().reset()
    finally:
        first.shutdown()


def test_a_row_the_environment_refuses_is_a_reset_error_and_holds_nothing(where):
    live = sum(where.loads().values())
    with where.open() as session:
        with pytest.raises(ResetError) as raised:
            session.reset(seed="x")
        assert re.fullmatch(
            r'WhereDesk could not start the episode of row \{"seed": "x"\} \(in episode where/\d+/[0-9a-f]{32} on Ray '
            r"actor 'where/\d+'\): its reset raised TypeError: seed must be an integer, not 'x'",
            str(raised.value),
        ), str(raised.value)
        assert session.episode_id is None and sum(where.loads().values()) == live
        assert session.reset(seed=1) == "counter starts at 1"


def test_a_bug_in_a_tool_reads_as_in_process_without_naming_the_actor(where):
    with where.open() as session:
        session.reset()
        with pytest.raises(ToolFailedError) as raised:
            session.call_tool("crash", {})
        assert str(raised.value) == "tool 'crash' failed: KeyError: 'boom'"  # the actor is in its log
        assert session.call_tool("add", {"amount": 2}) == "total 2"  # the episode goes on


def test_an_episode_id_of_another_pool_is_not_found():
    provider = RayProvider(WhereDesk, actors=2, pool="ids")
    for episode_id in ("other/0/abc", "ids/2/abc", "ids/x/abc", "nonsense"):
        with pytest.raises(EpisodeNotFoundError, match="is not an episode of Ray pool 'ids' \\(2 actors\\)"):
            provider.attach(episode_id)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"actors": 0}, "actors must be a positive whole number, not 0"),
        ({"episodes_per_actor": 1.5}, "episodes_per_actor must be a positive whole number, not 1.5"),
        ({"call_timeout": 0}, "call_timeout must be a positive, finite number of seconds, not 0"),
        (
            {"idle_timeout": float("inf")},
            "idle_timeout must be a positive, finite number of seconds, not inf",
        ),
        ({"actor_options": {"max_task_retries": 3}}, "actor_options may not set max_task_retries: "),
        ({"pool": "a/b"}, "pool must be a non-empty name without '/', not 'a/b'"),
    ],
)
def test_bad_settings_are_refused_when_the_provider_is_made(settings, message):
    with pytest.raises(ValueError, match=f"^{message.replace('(', '.').replace(')', '.')}"):
        RayProvider(WhereDesk, **settings)


def test_an_environment_actors_cannot_import_is_refused_when_the_provider_is_made():
    class Nested(Environment):
        def reward(self) -> float:
            return 0.0

    with pytest.raises(ValueError, match="cannot run on Ray actors: they import it by name"):
        RayProvider(Nested)
    with pytest.raises(LookupError, match="unknown environment 'no-such-desk'"):
        RayProvider("no-such-desk")
    assert RayProvider("gridsim-desk").pool.host.environment == "gridsim-desk"


def test_ray_session_is_a_session():
    assert issubclass(RaySession, Session)
