"""The control API (`_http.py`) in process: episodes open, run, score and close, and every error has its wire form."""

from __future__ import annotations

import json
import logging
import re

import httpx
import pytest

from agent_env.errors import ToolArgumentError
from agent_env.server.app import build_app
from agent_env.session import LocalSession

from .toy import ToyDesk

pytestmark = pytest.mark.anyio

JSON = {"Content-Type": "application/json"}

BAD_OFFERS = {"offers": [{"hour": 30, "mw": -1}]}


def in_process_error(name: str, arguments: dict) -> str:
    session = LocalSession(ToyDesk())
    session.reset()
    with pytest.raises(ToolArgumentError) as caught:
        session.call_tool(name, arguments)
    return str(caught.value)


async def open_episode(client, row=None) -> str:
    answer = await client.post("/episodes", json=row or {})
    assert answer.status_code == 201, answer.text
    return answer.json()["episode_id"]


async def test_health_answers_ok_with_its_live_episodes_its_limit_and_its_stuck_calls(control):
    client = await control(max_episodes=5)
    await open_episode(client)
    answer = await client.get("/health")
    assert (answer.status_code, answer.json()) == (
        200,
        {"status": "ok", "episodes": 1, "max_episodes": 5, "stuck_calls": 0},
    )


async def test_tools_lists_the_published_schemas_byte_for_byte(control):
    client = await control()
    answer = await client.get("/tools")
    listing = json.loads(answer.content)
    assert listing["environment"] == "ToyDesk"
    assert json.dumps(listing["tools"]) == json.dumps(ToyDesk.tools.published)
    assert listing["class"] == f"{ToyDesk.__module__}:ToyDesk"  # for a client to import the class, if it can


async def test_an_episode_opens_runs_scores_and_closes(control):
    client = await control()
    opened = await client.post("/episodes", json={"seed": 3})
    assert opened.status_code == 201
    assert opened.json()["observation"] == "counter starts at 3"
    episode = opened.json()["episode_id"]
    called = await client.post(f"/episodes/{episode}/tools/add", json={"amount": 4})
    assert called.json() == {"result": "total 7"}
    nested = await client.post(f"/episodes/{episode}/tools/submit", json={"offers": [{"hour": 7, "mw": 5}]})
    assert json.loads(nested.json()["result"]) == {"accepted": 1, "mw": 5.0}
    assert (await client.post(f"/episodes/{episode}/tools/echo", json={"text": "hi"})).json() == {
        "result": "hi"
    }
    assert (await client.post(f"/episodes/{episode}/reward")).json() == {"reward": 7.0}
    assert (await client.delete(f"/episodes/{episode}")).status_code == 204
    gone = await client.post(f"/episodes/{episode}/reward")
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "episode_not_found"


async def test_reset_starts_the_next_episode_on_the_same_instance(control):
    client = await control()
    episode = await open_episode(client, {"seed": 1})
    await client.post(f"/episodes/{episode}/tools/end_turn")
    again = await client.post(f"/episodes/{episode}/reset", json={"seed": 5})
    assert again.json() == {"episode_id": episode, "observation": "counter starts at 5"}
    assert (await client.post(f"/episodes/{episode}/tools/add", json={"amount": 1})).json() == {
        "result": "total 6"
    }


async def test_two_episodes_do_not_see_each_others_state(control):
    client = await control()
    first, second = await open_episode(client, {"seed": 10}), await open_episode(client, {"seed": 20})
    await client.post(f"/episodes/{first}/tools/add", json={"amount": 1})
    await client.post(f"/episodes/{second}/tools/add", json={"amount": 100})
    assert (await client.post(f"/episodes/{first}/reward")).json() == {"reward": 11.0}
    assert (await client.post(f"/episodes/{second}/reward")).json() == {"reward": 120.0}


async def test_bad_nested_arguments_get_422_with_the_in_process_message(control):
    client = await control()
    episode = await open_episode(client)
    answer = await client.post(f"/episodes/{episode}/tools/submit", json=BAD_OFFERS)
    assert answer.status_code == 422
    assert answer.json() == {
        "error": {"code": "invalid_arguments", "message": in_process_error("submit", BAD_OFFERS)}
    }


@pytest.mark.parametrize(
    ("path", "status", "code", "message"),
    [
        (
            "tools/nope",
            422,
            "unknown_tool",
            'unknown tool "nope"; the tools are: add, submit, echo, sleep, hang, crash',
        ),
        ("tools/submit", 422, "tool_error", "offers[*].hour: each hour may be offered once"),
    ],
)
async def test_tool_errors_get_422_with_their_code(control, path, status, code, message):
    client = await control()
    episode = await open_episode(client)
    body = {"offers": [{"hour": 1, "mw": 1}, {"hour": 1, "mw": 2}]} if path == "tools/submit" else {}
    answer = await client.post(f"/episodes/{episode}/{path}", json=body)
    assert answer.status_code == status
    assert answer.json()["error"]["code"] == code
    assert answer.json()["error"]["message"].startswith(message)


async def test_episode_state_errors_get_409(control):
    client = await control()
    unstarted = (await client.post("/episodes?reset=false")).json()
    assert unstarted["observation"] is None
    early = await client.post(f"/episodes/{unstarted['episode_id']}/tools/add", json={"amount": 1})
    assert (early.status_code, early.json()["error"]["code"]) == (409, "episode_not_started")
    episode = await open_episode(client)
    await client.post(f"/episodes/{episode}/tools/end_turn")
    late = await client.post(f"/episodes/{episode}/tools/add", json={"amount": 1})
    assert (late.status_code, late.json()["error"]["code"]) == (409, "episode_ended")


async def test_a_tool_that_crashes_gets_500_with_the_in_process_text_and_the_episode_lives_on(
    control, caplog
):
    client = await control()
    episode = await open_episode(client)
    crashed = await client.post(f"/episodes/{episode}/tools/crash")
    assert crashed.status_code == 500
    assert crashed.json()["error"] == {
        "code": "tool_failed",
        "message": "tool 'crash' failed: KeyError: 'boom'",
    }
    [logged] = [record for record in caplog.records if record.name == "agent_env.session"]
    assert logged.getMessage() == f"agent_env: tool 'crash' of ToyDesk failed in served episode {episode}"
    assert logged.exc_info is not None and isinstance(logged.exc_info[1], KeyError)  # the traceback
    assert (await client.post(f"/episodes/{episode}/tools/add", json={"amount": 1})).status_code == 200


async def test_a_body_that_is_not_json_gets_400(control):
    client = await control()
    episode = await open_episode(client)
    answer = await client.post(f"/episodes/{episode}/tools/add", content=b"{nope", headers=JSON)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_request"
    assert answer.json()["error"]["message"].startswith(
        "the body must be a JSON object (the tool's arguments); it is not JSON"
    )


async def test_arguments_that_are_json_but_no_object_are_refused_by_the_session_as_in_process(control):
    client = await control()
    episode = await open_episode(client)
    answer = await client.post(f"/episodes/{episode}/tools/add", content=b"[1, 2]", headers=JSON)
    assert answer.status_code == 422
    assert answer.json()["error"]["code"] == "invalid_arguments"
    assert "(arguments): expected an object of named arguments" in answer.json()["error"]["message"]


async def test_a_row_reset_cannot_take_gets_400_and_opens_nothing(control):
    client = await control()
    extra = await client.post("/episodes", json={"seed": 1, "prompt": [{"role": "user", "content": "hi"}]})
    assert extra.status_code == 201  # reset(**row) takes the keys it needs and ignores the rest
    broken = await client.post("/episodes", json={"seed": "three"})
    assert broken.status_code == 400
    error = broken.json()["error"]
    assert error["code"] == "reset_failed"
    assert re.fullmatch(  # the episode named as the server's log names it, where its traceback is
        r'ToyDesk could not start the episode of row \{"seed": "three"\} \(in served episode [0-9a-f]{32}\): its '
        r"reset raised TypeError: seed must be an integer, not 'three'",
        error["message"],
    ), error["message"]
    assert client.app.state.episodes.count() == 1


async def test_a_refused_row_is_logged_in_one_line_and_a_failing_reset_with_its_traceback(caplog):
    from testbed.toy import ToyDesk as FailingDesk  # its reset raises as a bug would on raise_in="reset"

    app = build_app(FailingDesk)
    async with app.router.lifespan_context(app):
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://testserver")
        with caplog.at_level(logging.DEBUG, logger="agent_env.server"):
            refused = await client.post("/episodes", json={"task": "t1", "down": 5})  # a value it cannot take
            failed = await client.post("/episodes", json={"task": "t1", "raise_in": "reset"})
        await client.aclose()
    assert (refused.status_code, failed.status_code) == (400, 400)
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    refusal, bug = warnings
    assert "its reset raised TypeError: 'int' object is not iterable" in refusal.getMessage()
    assert refusal.exc_info is None and len(refusal.getMessage()) < 300  # one line, from any client
    (kept,) = [record for record in caplog.records if record.levelno == logging.DEBUG and record.exc_info]
    assert kept.exc_info[0] is TypeError  # where it was raised, for whoever turns DEBUG on
    assert "its reset raised RuntimeError: the task store is down" in bug.getMessage()
    assert bug.exc_info is not None and bug.exc_info[0] is RuntimeError  # the environment's own failure


async def test_unknown_episode_gets_404_saying_it_expired_or_is_unknown(control):
    client = await control()
    for answer in [
        await client.post("/episodes/abc/tools/add", json={"amount": 1}),
        await client.post("/episodes/abc/reward"),
        await client.post("/episodes/abc/reset", json={}),
        await client.delete("/episodes/abc"),
    ]:
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "episode_not_found"
        assert answer.json()["error"]["message"].startswith(
            "episode 'abc' expired or unknown: it was closed, idled out"
        )


async def test_datasets_list_rows_and_unknown_splits_get_404(control):
    client = await control()
    assert (await client.get("/datasets/train")).json() == {
        "split": "train",
        "rows": [{"seed": 0}, {"seed": 1}, {"seed": 2}],
    }
    missing = await client.get("/datasets/test")
    assert missing.status_code == 404
    assert missing.json()["error"] == {
        "code": "dataset_not_found",
        "message": "no dataset split 'test': ToyDesk has only a 'train' split, not 'test'",
    }
