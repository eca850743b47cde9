"""Deadlines hold on every provider: a call that never returns fails at its call timeout with an error the model
reads, a call past what is left of the episode's budget fails too, and either ends the episode, whose reward is then
`TimedOutEpisodeError` (None under TRL); the next reset starts afresh; and once the stuck call returns, nothing is
left running where the episode ran."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_env import CallTimeoutError, EpisodeEndedError, LocalProvider, TimedOutEpisodeError
from agent_env.schema import fingerprint
from agent_env.session import Provider, abandoned_calls
from agent_env.training.trl import environment_class
from testbed.stuck import StuckDesk

CALL_TIMEOUT = 1.0
EPISODE_BUDGET = 2.0
LIMITS = {"call_timeout": CALL_TIMEOUT, "episode_budget": EPISODE_BUDGET}

Stuck = Callable[[], int]
"""How many calls given up on still run where a provider's episodes run."""


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(scope="module")
def local_stuck() -> Iterator[tuple[Provider, Stuck]]:
    yield LocalProvider(StuckDesk, **LIMITS), abandoned_calls


@pytest.fixture(scope="module")
def served_stuck() -> Iterator[tuple[Provider, Stuck]]:
    from agent_env.server.app import build_app
    from agent_env.server.client import RemoteProvider
    from tst.unit.server.running import running

    app = build_app(StuckDesk, **LIMITS)
    with running(app) as url:
        yield RemoteProvider(url), app.state.episodes.stuck_workers


@pytest.fixture(scope="module")
def ray_stuck(ray_cluster: str) -> Iterator[tuple[Provider, Stuck]]:
    from agent_env.ray import RayProvider

    provider = RayProvider(StuckDesk, actors=1, pool="deadlines", **LIMITS)
    yield provider, provider.stuck_calls
    provider.shutdown()


@pytest.fixture(scope="module")
def openenv_stuck() -> Iterator[tuple[Provider, Stuck]]:
    from agent_env.openenv import OpenEnvProvider, OpenEnvSurface
    from agent_env.server.app import build_app
    from tst.unit.server.running import running

    app = build_app(StuckDesk, surfaces=[OpenEnvSurface()], **LIMITS)
    with running(app) as url:
        yield OpenEnvProvider(f"{url}/openenv"), app.state.episodes.stuck_workers


@pytest.fixture(params=["local", "served", "ray", "openenv"])
def stuck(request: pytest.FixtureRequest) -> tuple[Provider, Stuck]:
    """Each provider of StuckDesk under a 1 s call timeout and a 2 s episode budget, with its gauge of stuck calls."""
    found: tuple[Provider, Stuck] = request.getfixturevalue(f"{request.param}_stuck")
    return found


@pytest.fixture
def release(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "release"
    yield str(path)
    path.touch()


def test_a_call_that_never_returns_is_read_by_the_model_and_ends_the_episode_unscored(stuck, release):
    provider, stuck_calls = stuck
    with provider.open() as session:
        session.reset(release=release)
        assert session.call_tool("add", {}) == "1"
        started = time.monotonic()
        with pytest.raises(CallTimeoutError) as late:
            session.call_tool("hang", {})
        assert CALL_TIMEOUT <= time.monotonic() - started < CALL_TIMEOUT + 3
        assert "tool 'hang' did not finish within" in str(late.value) and "call timeout of 1 s" in str(
            late.value
        )
        assert session.ended() == "tool 'hang' did not finish in time"
        with pytest.raises(
            EpisodeEndedError, match=r"the episode has ended \(tool 'hang' did not finish in time\)"
        ):
            session.call_tool("add", {})
        with pytest.raises(TimedOutEpisodeError) as unscored:
            session.score()
        assert unscored.value.infrastructure
        assert stuck_calls() == 1  # a thread cannot be stopped: counted where it runs
        session.reset(release=release)  # the next episode starts afresh
        assert session.call_tool("add", {}) == "1" and session.reward() == 1.0
    Path(release).touch()
    assert eventually(lambda: stuck_calls() == 0), "the stuck call is still running once released"


def test_an_episode_past_its_budget_ends_unscored_and_the_next_one_has_its_whole_budget(stuck):
    provider, stuck_calls = stuck
    with provider.open() as session:
        session.reset()
        for _ in range(2):
            session.call_tool("nap", {"seconds": 0.7})
            time.sleep(0.5)  # between calls: not the episode's time
        started = time.monotonic()
        with pytest.raises(CallTimeoutError) as spent:  # an EpisodeBudgetError where the wire names it
            session.call_tool("nap", {"seconds": 0.7})
        assert (
            time.monotonic() - started < 0.7 + 0.5
        )  # cut at what was left, 0.6 s (the actor's answer: +grace)
        assert "time budget of 2 s" in str(spent.value)
        with pytest.raises(TimedOutEpisodeError):
            session.reward()
        session.reset()
        for _ in range(2):
            session.call_tool("nap", {"seconds": 0.7})
        assert session.reward() == 2.0
    assert eventually(lambda: stuck_calls() == 0)


def test_the_trl_adapter_gets_none_for_an_episode_out_of_time_with_one_warning(stuck, release, caplog):
    provider, _ = stuck
    published = provider.tools()
    environment = environment_class(provider.name, published, fingerprint(published))(provider.open())
    environment.reset(release=release)
    with pytest.raises(CallTimeoutError):  # TRL tells the model {'error': ...} and goes on
        environment.hang()
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        assert environment.get_reward() is None
    (warning,) = [record for record in caplog.records if record.name == "agent_env.training"]
    assert "tool 'hang' did not finish within" in warning.getMessage()
    assert "TRL gets None (unscorable" in warning.getMessage()
    environment._session.close()


def test_a_reset_that_never_returns_could_not_start_its_episode(stuck, release):
    provider, stuck_calls = stuck
    with provider.open() as session:
        with pytest.raises(TimedOutEpisodeError) as unscored:
            session.reset(release=release, reset_hangs=True)
        assert unscored.value.starting and "could not start" in str(unscored.value)
        assert "reset did not finish within" in str(unscored.value) or "reset: no answer" in str(
            unscored.value
        )
        Path(release).touch()
        assert session.reset().startswith("Count")
    assert eventually(lambda: stuck_calls() == 0)


def test_ctrl_c_during_a_call_in_process_retires_its_instance_and_the_next_reset_starts_afresh(release):
    # Ctrl-C reaches the thread waiting on the call, never the worker running it: the call runs on, given up on
    import os
    import signal
    import threading

    from agent_env.session import EpisodeState

    with LocalProvider(StuckDesk, **LIMITS).open() as session:
        session.reset(release=release)
        session.call_tool("add", {})
        old = session.environment
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            session.call_tool("hang", {})
        assert session.state is EpisodeState.NEW and abandoned_calls() == 1  # what it did is unknown
        session.reset(release=release)
        assert session.environment is not old and session.call_tool("add", {}) == "1"
        Path(release).touch()
        assert eventually(lambda: abandoned_calls() == 0)
        assert old.count == 101 and session.reward() == 1.0  # the late call changed only the retired instance
