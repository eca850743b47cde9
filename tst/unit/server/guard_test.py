"""The request guard (`_guard.py`): Host, Origin, the bearer token, JSON bodies and the body limits, each with its
error; the same judge of headers holds a WebSocket handshake."""

from __future__ import annotations

from typing import Any

import pytest

from agent_env.server._guard import RequestGuard, host_allowed, judge_headers, origin_allowed
from agent_env.server.limits import LOOPBACK_HOSTS, LOOPBACK_ORIGINS, Limits

pytestmark = pytest.mark.anyio

JSON = {"Content-Type": "application/json"}

TOKEN = "s3cret-token"


async def test_without_the_token_every_path_but_health_gets_401(control):
    client = await control(token=TOKEN)
    assert (await client.get("/health")).status_code == 200
    for answer in [
        await client.get("/tools"),
        await client.post("/episodes", json={}),
        await client.post("/mcp", json={}),
        await client.get("/tools", headers={"Authorization": "Bearer wrong"}),
        await client.get("/tools", headers={"Authorization": f"Basic {TOKEN}"}),
    ]:
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == "Bearer"
        assert answer.json()["error"] == {
            "code": "unauthorized",
            "message": "missing or wrong bearer token: send the header 'Authorization: Bearer <token>' with the "
            "token the server was started with",
        }


async def test_the_right_token_is_let_through(control):
    client = await control(token=TOKEN)
    answer = await client.post("/episodes", json={}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 201


async def test_a_non_ascii_token_matches_its_utf8_bytes_and_nothing_else(control):
    client = await control(token="pässwörd")
    for encoding, status in [("utf-8", 200), ("latin-1", 401)]:
        headers = {"Authorization": b"Bearer " + "pässwörd".encode(encoding)}
        assert (await client.get("/tools", headers=headers)).status_code == status, encoding
    client = await control(token="€uro")  # no Latin-1 reading of any bytes is this token
    assert (await client.get("/tools", headers={"Authorization": "Bearer €uro".encode()})).status_code == 200


async def test_a_body_over_the_limit_gets_413_whether_declared_or_streamed(control):
    client = await control(max_body_bytes=1000)
    episode = (await client.post("/episodes", json={})).json()["episode_id"]
    big = b'{"text": "' + b"x" * 2000 + b'"}'

    async def chunks():
        for start in range(0, len(big), 100):
            yield big[start : start + 100]

    for answer in [
        await client.post(f"/episodes/{episode}/tools/echo", content=big, headers=JSON),
        await client.post(f"/episodes/{episode}/tools/echo", content=chunks(), headers=JSON),
    ]:
        assert answer.status_code == 413
        assert answer.json()["error"] == {
            "code": "request_too_large",
            "message": "the request body is larger than the server's limit of 1000 bytes",
        }
    small = await client.post(f"/episodes/{episode}/tools/echo", json={"text": "x" * 900})
    assert small.status_code == 200


async def test_a_host_the_server_does_not_answer_to_gets_421(control):
    client = await control(allowed_hosts=LOOPBACK_HOSTS)
    answer = await client.get("/tools", headers={"Host": "evil.example:8000"})
    assert answer.status_code == 421
    assert answer.json()["error"]["message"] == (
        "this server does not answer to Host 'evil.example:8000'; it answers to " + ", ".join(LOOPBACK_HOSTS)
    )
    assert (await client.get("/tools", headers={"Host": "127.0.0.1:8000"})).status_code == 200


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8000", True),
        ("localhost:1", True),
        ("[::1]:8000", True),
        ("localhost", True),
        ("localhost:", False),
        ("localhost:80x", False),
        ("localhost.evil.example:80", False),
        ("127.0.0.1.nip.io:8000", False),
        ("", False),
        (None, False),
    ],
)
def test_host_patterns_allow_any_port_of_a_name_and_nothing_else(host, allowed):
    assert host_allowed(host, LOOPBACK_HOSTS) is allowed


CROSS_SITE = [  # what a web page on another site can send anywhere without asking (no CORS preflight)
    {"Origin": "http://evil.example", "Content-Type": "text/plain"},
    {"Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"},
    {"Origin": "http://evil.example", "Content-Type": "multipart/form-data; boundary=x"},
    {"Origin": "null", "Content-Type": "text/plain"},  # a sandboxed frame or a file:// page
]


@pytest.mark.parametrize("headers", CROSS_SITE, ids=lambda h: f"{h['Origin']} {h['Content-Type']}")
async def test_a_cross_site_post_gets_403_and_opens_nothing(control, headers):
    client = await control()
    for path in ("/episodes", "/mcp"):
        answer = await client.post(path, content=b'{"seed": 1}', headers=headers)
        assert answer.status_code == 403, path
        assert answer.json()["error"] == {
            "code": "invalid_request",
            "message": f"requests from the web page at {headers['Origin']!r} are not allowed; a client that is "
            "not a browser sends no Origin, and the server's operator can allow a browser origin with "
            "--allow-origin",
        }
    assert client.app.state.episodes.count() == 0


async def test_the_origin_is_checked_with_a_token_too(control):
    client = await control(token=TOKEN)
    headers = {"Origin": "http://evil.example", "Authorization": f"Bearer {TOKEN}"}
    assert (await client.post("/episodes", json={}, headers=headers)).status_code == 403
    assert (
        await client.post("/episodes", json={}, headers={**headers, "Origin": "http://localhost:5173"})
    ).status_code == 201


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("text/plain", 415),
        ("application/x-www-form-urlencoded", 415),
        ("application/jsonx", 415),
        ("text/json", 415),
        (None, 415),  # a body that does not say what it is
        ("application/json", 201),
        ("Application/JSON; charset=utf-8", 201),
    ],
)
async def test_the_control_api_takes_only_json_bodies(control, content_type, status):
    client = await control()
    headers = {"Content-Type": content_type} if content_type else {}
    answer = await client.post("/episodes", content=b'{"seed": 1}', headers=headers)
    assert answer.status_code == status
    if status == 415:
        sent = f"not {content_type!r}" if content_type else "and this request names no Content-Type"
        assert answer.json()["error"] == {
            "code": "invalid_request",
            "message": f"the body must be JSON, sent with 'Content-Type: application/json', {sent}",
        }
        assert client.app.state.episodes.count() == 0


async def test_a_post_without_a_body_needs_no_content_type(control):
    client = await control()
    episode = (await client.post("/episodes", json={"seed": 2})).json()["episode_id"]
    assert (await client.post(f"/episodes/{episode}/reward")).json() == {"reward": 2.0}
    assert (
        await client.post(f"/episodes/{episode}/reward", headers={"Content-Type": "text/plain"})
    ).status_code == 415


async def test_pages_from_this_machine_are_let_in_by_default_and_others_when_allowed(control):
    client = await control()
    for origin in ("http://localhost:5173", "http://127.0.0.1", "https://[::1]:8443"):
        assert (await client.get("/tools", headers={"Origin": origin})).status_code == 200, origin
    client = await control(allowed_origins=[*LOOPBACK_ORIGINS, "https://app.example.com"])
    assert (await client.get("/tools", headers={"Origin": "https://app.example.com"})).status_code == 200
    assert (await client.get("/tools", headers={"Origin": "https://app.example.com.evil"})).status_code == 403
    client = await control(allowed_origins=["*"])
    assert (await client.get("/tools", headers={"Origin": "http://anything.example"})).status_code == 200


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost:3000", True),
        ("http://localhost", True),
        ("HTTP://LOCALHOST:3000", True),
        ("https://127.0.0.1:8443", True),
        ("http://[::1]:80", True),
        ("http://localhost.evil.example", False),
        ("http://localhost:3000.evil.example", False),
        ("http://evil.example/http://localhost:3000", False),
        ("null", False),
        ("", False),
    ],
)
def test_origin_patterns_allow_any_port_of_a_loopback_name_and_nothing_else(origin, allowed):
    assert origin_allowed(origin, LOOPBACK_ORIGINS) is allowed


def test_an_allowed_origin_that_is_not_an_origin_is_refused_at_build_time():
    from agent_env.server.app import build_app

    from .toy import ToyDesk

    with pytest.raises(
        ValueError, match=r"allowed origin 'app.example.com' is not an origin: write scheme://host"
    ):
        build_app(ToyDesk, allowed_origins=["app.example.com"])


def test_the_same_judge_holds_a_websocket_handshake_to_host_origin_and_token():
    limits = Limits(token=TOKEN, allowed_hosts=LOOPBACK_HOSTS)

    def handshake(**headers: str) -> dict:
        raw = [(name.lower().encode(), value.encode()) for name, value in headers.items()]
        return {"type": "websocket", "path": "/ws", "headers": raw}

    good = {"Host": "127.0.0.1:8000", "Authorization": f"Bearer {TOKEN}"}
    assert judge_headers(handshake(**good), limits) is None
    assert judge_headers(handshake(**{**good, "Origin": "http://localhost:3000"}), limits) is None
    refusals = [
        judge_headers(handshake(**{**good, "Host": "evil.example"}), limits),
        judge_headers(handshake(**{**good, "Origin": "http://evil.example"}), limits),
        judge_headers(handshake(Host="127.0.0.1:8000"), limits),
    ]
    assert [(refusal.status, refusal.error.code) for refusal in refusals if refusal] == [
        (421, "invalid_request"),
        (403, "invalid_request"),
        (401, "unauthorized"),
    ]


async def test_a_client_that_goes_before_its_body_has_all_arrived_runs_nothing_and_is_sent_nothing():
    reached: list[bytes] = []

    async def app(scope: dict, receive: Any, send: Any) -> None:
        reached.append((await receive())["body"])

    messages = [
        {"type": "http.request", "body": b'{"seed": ', "more_body": True},
        {"type": "http.disconnect"},  # the client left, or the server is stopping and has answered it
    ]
    sent: list[dict] = []

    async def receive() -> dict:
        return messages.pop(0)

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/episodes",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", b"100"),
        ],
    }
    await RequestGuard(app, Limits())(scope, receive, send)
    assert reached == [] and sent == []  # before, the app got `{"seed": ` as if it were the whole body


async def test_a_request_without_a_body_whose_client_hung_up_still_runs():
    reached: list[dict] = []

    async def app(scope: dict, receive: Any, send: Any) -> None:
        reached.append(await receive())

    async def receive() -> dict:
        return {
            "type": "http.disconnect"
        }  # uvicorn's answer once the client is gone, whatever arrived before

    async def send(message: dict) -> None:
        pass

    scope = {"type": "http", "method": "DELETE", "path": "/mcp", "headers": [(b"host", b"127.0.0.1")]}
    await RequestGuard(app, Limits())(scope, receive, send)
    assert reached == [
        {"type": "http.request", "body": b"", "more_body": False}
    ]  # a DELETE /mcp ends its session
