"""`agent_env.server.capacity`: a new episode refused for room is asked for again as the server says, within a
budget, then fails as an infrastructure error that names the refusal."""

from __future__ import annotations

import time

import pytest

from agent_env.errors import InfrastructureFailedError
from agent_env.server.capacity import check_wait, while_full, with_room
from agent_env.server.errors import TooManyEpisodesError


def refusals(count: int, retry_after: float | None = 1.0) -> object:
    """An attempt refused `count` times, then answered."""
    left = [count]

    def attempt() -> str:
        if left[0]:
            left[0] -= 1
            full = TooManyEpisodesError("the server already holds 2 live episodes, its limit")
            full.retry_after = retry_after
            raise full
        return "opened"

    return attempt


def test_a_refusal_is_asked_again_after_the_servers_retry_after_plus_up_to_half_of_it():
    pauses: list[float] = []
    assert while_full(refusals(3, retry_after=2.0), wait=60, sleep=pauses.append) == "opened"  # type: ignore[arg-type]
    assert len(pauses) == 3 and all(2.0 <= pause <= 3.0 for pause in pauses)
    assert len(set(pauses)) > 1  # at random, so that clients refused together do not ask together


def test_a_server_that_says_nothing_of_when_is_asked_again_about_each_second():
    pauses: list[float] = []
    while_full(refusals(1, retry_after=None), wait=60, sleep=pauses.append)  # type: ignore[arg-type]
    assert 1.0 <= pauses[0] <= 1.5


def test_past_the_wait_the_episode_fails_as_an_infrastructure_error_that_never_started():
    started = time.monotonic()
    with pytest.raises(InfrastructureFailedError) as failed:
        with_room(
            refusals(100, retry_after=0.1), wait=0.3, environment="ToyDesk", episode="an empty row (there)"
        )  # type: ignore[arg-type]
    assert 0.3 <= time.monotonic() - started < 1.0
    assert failed.value.starting and failed.value.infrastructure
    assert isinstance(failed.value.cause, TooManyEpisodesError)
    assert str(failed.value) == (
        "ToyDesk could not start the episode of an empty row (there): the server already holds 2 live episodes, its "
        "limit (still full after 0.3 s of waiting for room: size the server for every episode the clients run at "
        "once)"
    )


def test_no_wait_asks_once():
    pauses: list[float] = []
    with pytest.raises(InfrastructureFailedError, match="full, and the client waits for no room"):
        with_room(refusals(1), wait=0, environment="ToyDesk", episode="x", sleep=pauses.append)  # type: ignore[arg-type]
    assert pauses == []
    with pytest.raises(TooManyEpisodesError):
        while_full(refusals(1), wait=0)  # type: ignore[arg-type]


@pytest.mark.parametrize("wait", [-1, float("inf"), float("nan"), True])
def test_a_wait_that_is_no_number_of_seconds_is_refused(wait):
    with pytest.raises(ValueError, match="capacity_wait must be 0 or more seconds"):
        check_wait(wait)
