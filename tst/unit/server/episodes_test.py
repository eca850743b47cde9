"""The episode registry's limits: idle episodes are freed, the episode cap holds (saying when to ask again), a hung call
times out alone, and an episode's calls share its time budget."""

from __future__ import annotations

import asyncio
import time

import pytest

from agent_env.server.app import build_app

from .toy import RELEASE, ToyDesk

pytestmark = pytest.mark.anyio


async def open_episode(client, row=None) -> str:
    answer = await client.post("/episodes", json=row or {})
    assert answer.status_code == 201, answer.text
    return answer.json()["episode_id"]


async def test_an_idle_episode_is_freed_and_its_id_then_gives_a_clear_404(control):
    # Margins wide enough for a loaded machine: `kept` is touched ten times per idle timeout.
    client = await control(idle_timeout=1.0)
    registry = client.app.state.episodes
    kept, idle = await open_episode(client), await open_episode(client)
    for _ in range(14):
        await asyncio.sleep(0.1)
        await client.post(f"/episodes/{kept}/tools/add", json={"amount": 1})
    assert registry.count() == 1  # the reaper closed the idle one without anyone asking for it
    answer = await client.post(f"/episodes/{idle}/tools/add", json={"amount": 1})
    assert answer.status_code == 404
    assert answer.json()["error"] == {
        "code": "episode_not_found",
        "message": f"episode '{idle}' expired or unknown: it was closed, idled out after 1 s, closed after a call "
        "timed out, or the server restarted; start a new episode (POST /episodes)",
    }


async def test_an_episode_in_a_long_call_is_not_idle(control):
    client = await control(idle_timeout=0.1, call_timeout=5)
    episode = await open_episode(client)
    answer = await client.post(f"/episodes/{episode}/tools/hang", json={"seconds": 0.4})
    assert answer.json() == {"result": "done"}
    assert (await client.post(f"/episodes/{episode}/tools/add", json={"amount": 1})).status_code == 200


async def test_too_many_episodes_get_503_saying_when_to_ask_again_until_one_closes(control):
    client = await control(max_episodes=2)
    first = await open_episode(client)
    await open_episode(client)
    refused = await client.post("/episodes", json={})
    assert refused.status_code == 503
    assert refused.headers["Retry-After"] == "1"
    assert refused.json()["error"]["code"] == "too_many_episodes"
    assert refused.json()["error"]["message"].startswith(
        "the server already holds 2 live episodes, its limit"
    )
    health = (await client.get("/health")).json()
    assert (health["episodes"], health["max_episodes"]) == (2, 2)
    await client.delete(f"/episodes/{first}")
    await open_episode(client)


async def test_a_call_past_the_timeout_fails_clearly_closes_its_episode_and_the_server_keeps_serving(control):
    client = await control(call_timeout=0.3)
    registry = client.app.state.episodes
    hung, other = await open_episode(client), await open_episode(client)
    started = time.monotonic()
    hang, add = await asyncio.gather(
        client.post(f"/episodes/{hung}/tools/hang", json={"seconds": 30}),
        client.post(f"/episodes/{other}/tools/add", json={"amount": 2}),
    )
    assert time.monotonic() - started < 2
    assert hang.status_code == 504
    assert hang.json()["error"] == {
        "code": "call_timeout",
        "message": f"tool 'hang' did not finish within the server's call timeout of 0.3 s; episode '{hung}' was "
        "closed because its state is unknown: start a new episode (POST /episodes)",
    }
    assert add.json() == {"result": "total 2"}
    assert (await client.post(f"/episodes/{hung}/reward")).status_code == 404
    assert registry.stuck_workers() == 1
    many = await asyncio.gather(
        *(client.post(f"/episodes/{other}/tools/add", json={"amount": 1}) for _ in range(40))
    )
    assert all(answer.status_code == 200 for answer in many)
    assert (await client.get("/health")).status_code == 200


async def test_health_counts_the_calls_stuck_past_their_timeout_until_they_return(control):
    client = await control(call_timeout=0.2)
    episode = await open_episode(client)
    assert (await client.post(f"/episodes/{episode}/tools/hang", json={"seconds": 30})).status_code == 504
    assert (await client.get("/health")).json()["stuck_calls"] == 1  # a thread cannot be stopped: counted
    RELEASE.set()
    for _ in range(100):
        if (await client.get("/health")).json()["stuck_calls"] == 0:
            break
        await asyncio.sleep(0.02)
    assert (await client.get("/health")).json() == {
        "status": "ok",
        "episodes": 0,
        "max_episodes": 2048,
        "stuck_calls": 0,
    }


async def test_an_episodes_calls_share_its_budget_past_which_the_call_fails_and_the_episode_closes(control):
    client = await control(call_timeout=5, episode_budget=0.8)
    episode = await open_episode(client)
    for _ in range(2):
        await asyncio.sleep(0.5)  # between calls: the client's time, not the episode's
        assert (
            await client.post(f"/episodes/{episode}/tools/sleep", json={"seconds": 0.3})
        ).status_code == 200
    started = time.monotonic()
    spent = await client.post(f"/episodes/{episode}/tools/sleep", json={"seconds": 0.3})
    assert time.monotonic() - started < 0.3  # cut at what was left of the budget
    assert spent.status_code == 504
    assert spent.json()["error"] == {
        "code": "episode_budget",
        "message": "tool 'sleep' was still running when the episode's time budget of 0.8 s (what all its calls may "
        f"take together) ran out; episode '{episode}' was closed because its state is unknown: start a new episode "
        "(POST /episodes)",
    }
    assert (await client.post(f"/episodes/{episode}/reward")).status_code == 404
    again = await open_episode(client)  # a new episode has a whole budget
    assert (await client.post(f"/episodes/{again}/tools/sleep", json={"seconds": 0.3})).status_code == 200


async def test_a_reset_starts_the_budget_again(control):
    client = await control(call_timeout=5, episode_budget=0.5)
    episode = await open_episode(client)
    for _ in range(3):
        assert (
            await client.post(f"/episodes/{episode}/tools/sleep", json={"seconds": 0.3})
        ).status_code == 200
        assert (await client.post(f"/episodes/{episode}/reset", json={})).status_code == 200


async def test_an_async_tool_past_the_timeout_fails_the_same_way(control):
    client = await control(call_timeout=0.2)
    episode = await open_episode(client)

    answer = await client.post(f"/episodes/{episode}/tools/sleep", json={"seconds": 10})
    assert answer.status_code == 504
    assert answer.json()["error"]["message"].startswith(
        "tool 'sleep' did not finish within the server's call timeout"
    )


async def test_calls_on_one_episode_run_one_at_a_time(control):
    client = await control()
    episode = await open_episode(client)
    answers = await asyncio.gather(
        *(client.post(f"/episodes/{episode}/tools/add", json={"amount": 1}) for _ in range(30))
    )
    totals = sorted(int(answer.json()["result"].split()[1]) for answer in answers)
    assert totals == list(range(1, 31))


async def test_stopping_the_server_closes_every_episode():
    app = build_app(ToyDesk)
    registry = app.state.episodes
    async with app.router.lifespan_context(app):
        for _ in range(3):
            await registry.open({})
        sessions = [episode.session for episode in registry._episodes.values()]
        assert registry.count() == 3
    assert registry.count() == 0
    assert all(session.state.value == "closed" for session in sessions)


async def test_a_server_whose_lifespan_has_not_run_says_so(control):
    import httpx

    app = build_app(ToyDesk)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://testserver") as client:
        answer = await client.post("/episodes", json={})
    assert answer.status_code == 503
    assert answer.json()["error"]["message"].startswith("the server is not started: its lifespan has not run")


async def test_objects_alive_at_start_are_out_of_the_collectors_passes_until_the_last_registry_stops():
    import gc

    from agent_env.server import _episodes

    first, second = build_app(ToyDesk), build_app(ToyDesk)
    async with first.router.lifespan_context(first):
        assert gc.get_freeze_count() > 0
        async with second.router.lifespan_context(second):
            pass
        assert gc.get_freeze_count() > 0  # the first still serves
    if _episodes._serving == 0:  # no other test's server is running in this process
        assert gc.get_freeze_count() == 0
