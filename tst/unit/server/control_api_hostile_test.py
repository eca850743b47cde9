"""Hostile requests to the control API of the served desk (in process): each gets a clear error in the wire form,
the episode it aimed at is unchanged, and the server goes on serving every episode."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from agent_env.server.app import build_app

pytestmark = pytest.mark.anyio

JSON = {"Content-Type": "application/json"}

CURVE = {"hours": "HE02", "points": [[-50, 20], [0, 21]]}


@pytest.fixture
async def desk() -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A client on the served desk, and an episode with one curve booked."""
    app = build_app("gridsim-desk")
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            opened = await client.post("/episodes", json={"task_id": "desk-v4/train/0001"})
            episode = opened.json()["episode_id"]
            await client.post(f"/episodes/{episode}/tools/submit_dam_offers", json={"curves": [CURVE]})
            yield client, episode


async def still_serving(client: httpx.AsyncClient, episode: str) -> None:
    """The episode still holds its one curve, the server answers, and a fresh episode runs."""
    book = await client.post(f"/episodes/{episode}/tools/list_offers", json={})
    assert json.loads(book.json()["result"])["curves"] == [
        {"hours": "HE02", "points": [[-50.0, 20.0], [0.0, 21.0]]}
    ]
    assert (await client.get("/health")).json()["status"] == "ok"
    other = (await client.post("/episodes", json={"seed": 5})).json()["episode_id"]
    assert (await client.post(f"/episodes/{other}/tools/battery_status", json={})).status_code == 200


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


BODIES = {
    "nested 10,000 levels": (
        b'{"hours": ' + nested(10_000) + b"}",
        "it nests arrays and objects too deeply to read",
    ),
    "NaN": (b'{"curves": [{"hours": "HE05", "points": [[0, NaN], [1, 2]]}]}', "NaN is not a JSON number"),
    "Infinity": (
        b'{"curves": [{"hours": "HE05", "points": [[0, 1], [1, Infinity]]}]}',
        "Infinity is not a JSON number",
    ),
    "a number past a double": (
        b'{"curves": [{"hours": "HE05", "points": [[0, 1e999], [1, 2]]}]}',
        'the number "1e999"',
    ),
    "950 integers of 4,299 digits": (  # 4 MB within both limits, 80-130 ms of CPU to convert
        b'{"curves": [{"hours": [' + b",".join([b"9" * 4_299] * 950) + b"]}]}",
        "it holds an integer of 4299 digits, more than the 100 the server reads",
    ),
    "a duplicate key": (
        b'{"curves": [], "curves": [{"hours": "HE05", "points": [[0, 1], [1, 2]]}]}',
        'key "curves" appears twice',
    ),
    "Latin-1": ('{"curves": [{"hours": "HÉ05"}]}'.encode("latin-1"), "it is not UTF-8 text"),
    "UTF-16": ('{"curves": []}'.encode("utf-16"), "it is not UTF-8 text"),
    "a lone surrogate": (
        b'{"curves": [{"hours": "\\ud800", "points": []}]}',
        "it escapes a lone UTF-16 surrogate",
    ),
}


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
async def test_a_body_that_is_not_standard_json_gets_400_saying_what_to_send(desk, body):
    client, episode = desk
    content, message = body
    for path in (f"/episodes/{episode}/tools/submit_dam_offers", f"/episodes/{episode}/reset", "/episodes"):
        answer = await client.post(path, content=content, headers=JSON)
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "invalid_request"
        assert message in answer.json()["error"]["message"]
    await still_serving(client, episode)


async def test_arguments_nested_past_the_limit_but_within_the_parser_get_422_naming_the_path(desk):
    client, episode = desk
    answer = await client.post(
        f"/episodes/{episode}/tools/dam_price_forecast",
        content=b'{"hours": ' + nested(900) + b"}",
        headers=JSON,
    )
    assert answer.status_code == 422
    assert answer.json()["error"]["message"].endswith(
        "- hours[0][0]...: nested more than 100 levels deep; send the shape the schema describes"
    )
    await still_serving(client, episode)


async def test_very_long_strings_and_arrays_get_short_clear_errors(desk):
    client, episode = desk
    tool = f"/episodes/{episode}/tools"
    long_string = await client.post(f"{tool}/dam_price_forecast", json={"hours": "x" * 3_000_000})
    assert (long_string.status_code, long_string.json()["error"]["code"]) == (422, "invalid_hour_set")
    assert len(long_string.content) < 400
    long_array = await client.post(f"{tool}/dam_price_forecast", json={"hours": [30] * 15_000})
    assert (long_array.status_code, long_array.json()["error"]["code"]) == (422, "invalid_arguments")
    assert "- hours[0]: 30 is greater than the maximum of 24" in long_array.json()["error"]["message"]
    assert len(long_array.content) < 1000
    many_curves = {"curves": [{"hours": "HE09", "points": [[0, 1], [1, 2]]}] * 2_000}
    refused = await client.post(f"{tool}/submit_dam_offers", json=many_curves)
    assert refused.status_code == 422
    assert len(refused.content) < 1000
    too_many = await client.post(
        f"{tool}/dam_price_forecast", content=b'{"hours": [' + b"30," * 1_300_000 + b"30]}", headers=JSON
    )
    assert too_many.status_code == 413
    assert too_many.json()["error"] == {
        "code": "request_too_large",
        "message": "the request body holds about 1300003 JSON values (counted from its commas and brackets), "
        "more than the server's limit of 20000",
    }
    too_large = await client.post(
        f"{tool}/dam_price_forecast", content=b'{"hours": "' + b"x" * 5_000_000 + b'"}', headers=JSON
    )
    assert (too_large.status_code, too_large.json()["error"]["code"]) == (413, "request_too_large")
    await still_serving(client, episode)


@pytest.mark.parametrize(
    ("path", "status", "code", "message"),
    [
        ("tools/__class__", 422, "unknown_tool", 'unknown tool "__class__"; the tools are: desk_brief'),
        (
            "tools/..%2F..%2Fetc%2Fpasswd",
            422,
            "unknown_tool",
            'unknown tool "../../etc/passwd"; the tools are',
        ),
        ("tools/_day", 422, "unknown_tool", 'unknown tool "_day"'),
        ("tools/reset", 422, "unknown_tool", 'unknown tool "reset"'),
        ("tools/%ED%A0%80", 422, "unknown_tool", 'unknown tool "\ufffd\ufffd\ufffd"'),
        ("tools/../../../etc/passwd", 404, "invalid_request", 'no such path: POST "/etc/passwd"'),
        ("tools/list_offers/../../reward", 200, None, None),
    ],
)
async def test_tool_names_and_paths_that_try_to_escape_are_names_of_nothing(
    desk, path, status, code, message
):
    client, episode = desk
    answer = await client.post(f"/episodes/{episode}/{path}", json={})
    assert answer.status_code == status
    if code is not None:
        assert answer.json()["error"]["code"] == code
        assert answer.json()["error"]["message"].startswith(message)
    if status != 200:
        await still_serving(client, episode)


@pytest.mark.parametrize(
    "arguments",
    [{"__class__": {"x": 1}}, {"../../etc/passwd": 1}, {"self": 1}, {"__dict__": {}, "hours": "all"}],
)
async def test_argument_names_that_are_not_parameters_get_422_naming_them(desk, arguments):
    client, episode = desk
    answer = await client.post(f"/episodes/{episode}/tools/dam_price_forecast", json=arguments)
    assert answer.status_code == 422
    assert "unknown argument; this tool takes bands, hours" in answer.json()["error"]["message"]
    await still_serving(client, episode)


@pytest.mark.parametrize(
    "row",
    [
        {"task_id": "../../etc/passwd"},
        {"task_id": "desk-v4/../../manifest"},
        {"task_id": "/etc/passwd"},
        {"task_id": ["desk-v4/train/0000"]},
        {"task_id": "x" * 1_000_000},
        {"seed": "../../etc/passwd"},
        {"seed": -1},
        {"bundle": "../../etc/passwd"},
    ],
)
async def test_a_row_that_tries_to_reach_outside_the_bundle_gets_400_reset_failed(desk, row):
    client, episode = desk
    live = (await client.get("/health")).json()["episodes"]
    opened = await client.post("/episodes", json=row)
    again = await client.post(f"/episodes/{episode}/reset", json=row)
    for answer in (opened, again):
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "reset_failed"
        assert answer.json()["error"]["message"].startswith("GridSimDesk could not start the episode of ")
        assert "its reset raised " in answer.json()["error"]["message"]
        assert len(answer.content) < 600
    assert (await client.get("/health")).json()["episodes"] == live  # nothing was opened
    assert (await client.post("/episodes", json={"task_id": "desk-v4/test/0002"})).status_code == 201


@pytest.mark.parametrize("split", ["..%2F..%2Fetc%2Fpasswd", "__class__", "train%00", "x" * 2_000])
async def test_a_dataset_split_that_is_not_one_gets_404(desk, split):
    client, episode = desk
    answer = await client.get(f"/datasets/{split}")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] in ("dataset_not_found", "invalid_request")
    await still_serving(client, episode)
