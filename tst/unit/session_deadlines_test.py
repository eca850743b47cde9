"""A `LocalSession`'s deadlines: a call past its call timeout, or past what is left of its episode's budget, fails
with an error the model reads, ends the episode unscored, and retires the instance a stuck thread may still change."""

from __future__ import annotations

import asyncio
import logging
import pickle
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agent_env import (
    CallTimeoutError,
    EpisodeBudgetError,
    EpisodeEndedError,
    LocalProvider,
    LocalSession,
    TimedOutEpisodeError,
)
from agent_env.schema import fingerprint
from agent_env.session import abandoned_calls
from agent_env.training.trl import environment_class
from testbed.stuck import StuckDesk


class Counted(StuckDesk):
    """StuckDesk that remembers which of its instances were closed."""

    closed: ClassVar[list[Counted]] = []

    def close(self) -> None:
        Counted.closed.append(self)


@pytest.fixture
def release(tmp_path: Path):  # type: ignore[no-untyped-def]
    """The release file a `hang` waits for; made at the end of the test, so that nothing is left running."""
    path = tmp_path / "release"
    yield str(path)
    path.touch()
    assert _eventually(lambda: abandoned_calls() == 0), "a call given up on is still running"


def test_a_tool_that_never_returns_fails_at_the_call_timeout_with_an_error_the_model_reads(release):
    session = LocalProvider(StuckDesk, call_timeout=0.3).open()
    session.reset(release=release)
    session.call_tool("add", {})
    started = time.monotonic()
    with pytest.raises(CallTimeoutError) as late:
        session.call_tool("hang", {})
    assert 0.3 <= time.monotonic() - started < 2
    assert str(late.value) == (
        "tool 'hang' did not finish within its call timeout of 0.3 s; what it did is unknown, so the episode has "
        "ended"
    )
    assert session.ended() == late.value.ended == "tool 'hang' did not finish in time"
    with pytest.raises(
        EpisodeEndedError, match=r"^tool 'add' was not run: the episode has ended \(tool 'hang' did"
    ):
        session.call_tool("add", {})
    with pytest.raises(TimedOutEpisodeError) as unscored:
        session.reward()
    assert unscored.value.infrastructure and unscored.value.cause is late.value
    assert str(unscored.value).startswith('StuckDesk could not score the episode of row {"release": ')
    assert abandoned_calls() == 1  # its thread cannot be stopped: counted until it returns


def test_the_instance_of_a_stuck_call_is_never_used_again_and_is_closed_once_the_call_returns(release):
    Counted.closed.clear()
    session = LocalProvider(Counted, call_timeout=0.2).open()
    session.reset(release=release)
    stuck = session.environment
    with pytest.raises(CallTimeoutError):
        session.call_tool("hang", {})
    assert session.reset(release=release).startswith("Count")  # the next episode, on a fresh instance
    assert session.environment is not stuck and Counted.closed == []
    assert session.call_tool("add", {}) == "1"
    Path(release).touch()  # the stuck call returns now, and changes the retired instance only
    assert _eventually(lambda: Counted.closed == [stuck])
    assert stuck.count == 100 and session.reward() == 1.0
    session.close()
    assert Counted.closed == [stuck, session.environment]


def test_a_session_that_cannot_build_another_instance_starts_no_episode_after_a_stuck_call(release):
    session = LocalSession(StuckDesk(), call_timeout=0.2)  # made by hand: no `renew`
    session.reset(release=release)
    with pytest.raises(CallTimeoutError):
        session.call_tool("hang", {})
    with pytest.raises(
        TimedOutEpisodeError, match=r"this session has no way to build another .* open a new session"
    ):
        session.reset(release=release)


@pytest.mark.parametrize("caller", ["sync", "async"])
def test_an_async_tool_past_its_timeout_is_cancelled_and_nothing_is_left_running(caller):
    session = LocalProvider(StuckDesk, call_timeout=0.2).open()
    session.reset()
    with pytest.raises(
        CallTimeoutError, match=r"^tool 'snooze' did not finish within its call timeout of 0\.2 s"
    ):
        if caller == "sync":
            session.call_tool("snooze", {"seconds": 3600})
        else:
            asyncio.run(session.acall_tool("snooze", {"seconds": 3600}))
    assert _eventually(lambda: abandoned_calls() == 0)
    with pytest.raises(TimedOutEpisodeError):
        session.reward()
    session.reset()
    assert asyncio.run(session.acall_tool("snooze", {"seconds": 0})) == "snoozed 0 s"


def test_the_budget_bounds_all_of_an_episodes_calls_together_not_the_time_between_them():
    session = LocalProvider(StuckDesk, call_timeout=5, episode_budget=0.8).open()
    session.reset()
    assert session.call_tool("nap", {"seconds": 0.3}) == "napped 0.3 s"
    time.sleep(1.0)  # the model generating: not the environment's time
    assert session.call_tool("nap", {"seconds": 0.3}) == "napped 0.3 s"
    started = time.monotonic()
    with pytest.raises(EpisodeBudgetError) as spent:
        session.call_tool("nap", {"seconds": 0.3})
    assert time.monotonic() - started < 0.3  # cut at what was left, about 0.2 s
    assert str(spent.value).startswith(
        "tool 'nap' was still running when the episode's time budget of 0.8 s (what all its calls may take "
        "together) ran out"
    )
    assert session.ended() == "its time budget ran out during tool 'nap'"
    with pytest.raises(TimedOutEpisodeError) as unscored:
        session.reward()
    assert unscored.value.cause is spent.value
    session.reset()  # a new episode has its whole budget again
    assert session.call_tool("nap", {"seconds": 0.3}) == "napped 0.3 s"


def test_a_reset_past_its_deadline_could_not_start_the_episode(release):
    session = LocalProvider(StuckDesk, call_timeout=0.2).open()
    with pytest.raises(TimedOutEpisodeError) as unscored:
        session.reset(release=release, reset_hangs=True)
    assert unscored.value.starting and str(unscored.value).startswith(
        'StuckDesk could not start the episode of row {"release": '
    )
    assert "reset did not finish within its call timeout of 0.2 s" in str(unscored.value)
    Path(release).touch()
    assert session.reset().startswith("Count")  # on a fresh instance


def test_reading_the_reward_is_bounded_too(release):
    class SlowReward(StuckDesk):
        def reward(self) -> float:
            self._wait_for_release()
            return 0.0

    session = LocalSession(SlowReward(), episode_budget=0.3)
    session.reset(release=release)
    with pytest.raises(
        TimedOutEpisodeError, match=r"reward\(\) was still running when the episode's time budget"
    ):
        session.reward()


def test_without_limits_every_call_runs_in_the_callers_thread():
    class Where(StuckDesk):
        def reset(self, **row: Any) -> str:
            self.threads = [threading.current_thread()]
            return super().reset(**row)

        def reward(self) -> float:
            self.threads.append(threading.current_thread())
            return 0.0

    session = LocalSession(
        Where()
    )  # as a server or a Ray actor builds its sessions: they bound calls themselves
    session.reset()
    session.reward()
    assert session.environment.threads == [threading.current_thread()] * 2


def test_a_provider_bounds_its_sessions_by_default_and_pickles_its_limits():
    provider = LocalProvider(StuckDesk)
    assert (provider.call_timeout, provider.episode_budget) == (60.0, 600.0)
    copy = pickle.loads(pickle.dumps(LocalProvider(StuckDesk, call_timeout=3, episode_budget=None)))
    assert (copy.call_timeout, copy.episode_budget) == (3, None)
    with pytest.raises(ValueError, match="episode_budget must be a positive, finite number of seconds"):
        LocalProvider(StuckDesk, episode_budget=0)


def test_the_trl_adapter_leaves_a_timed_out_episode_out_with_one_warning(release, caplog):
    provider = LocalProvider(StuckDesk, call_timeout=0.2)
    published = provider.tools()
    environment = environment_class(provider.name, published, fingerprint(published))(provider.open())
    environment.reset(release=release)
    with pytest.raises(CallTimeoutError):  # TRL catches it, and the model reads {'error': ...}
        environment.hang()
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        assert environment.get_reward() is None
    (warning,) = [record for record in caplog.records if record.name == "agent_env.training"]
    assert "TRL gets None (unscorable" in warning.getMessage()
    assert "tool 'hang' did not finish within its call timeout of 0.2 s" in warning.getMessage()


def _eventually(condition, timeout: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
