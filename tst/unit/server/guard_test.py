"""The request guard (`_guard.py`): the bearer token, the body size limit and the Host check, each with its error."""

from __future__ import annotations

import pytest

from agent_env.server._guard import host_allowed
from agent_env.server._limits import LOOPBACK_HOSTS

pytestmark = pytest.mark.anyio

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
        await client.post(f"/episodes/{episode}/tools/echo", content=big),
        await client.post(f"/episodes/{episode}/tools/echo", content=chunks()),
        await client.post("/mcp", content=big),
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
