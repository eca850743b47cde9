"""OpenEnv's surface on an agent_env server (`openenv/server/`): transcripts through an in-memory WebSocket.

Every frame here is one OpenEnv's servers send (shapes read from `openenv/core/env_server/http_server.py` and
checked against its real servers); the tier under tst/openenv drives the same surface with OpenEnv's real clients.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient, WebSocketDenialResponse
from starlette.websockets import WebSocketDisconnect

from agent_env.openenv import OpenEnvSurface
from agent_env.openenv import _wire as wire
from agent_env.openenv.server import _socket as openenv_socket
from agent_env.server.app import build_app
from agent_env.session import LocalSession
from tst.unit.server.toy import ToyDesk

WS = "/openenv/ws"
RPC = "/openenv/mcp"


START_AGAIN = "reset on a new session (a new /ws connection, or openenv/session/create)"
"""How every OpenEnv message says to start afresh: OpenEnv's own ways, never the control API's POST /episodes."""


@pytest.fixture
def serve() -> Iterator[Callable[..., TestClient]]:
    """`serve(**build_app_options)`: a started toy app with the OpenEnv surface at /openenv, in process."""
    clients: list[TestClient] = []

    def start(**options: Any) -> TestClient:
        client = TestClient(build_app(ToyDesk, surfaces=[OpenEnvSurface()], **options))
        client.__enter__()
        clients.append(client)
        return client

    yield start
    for client in reversed(clients):
        client.__exit__(None, None, None)


def ask(ws: Any, message: Any) -> dict[str, Any]:
    ws.send_text(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.receive_text())


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "step", "data": {"type": "call_tool", "tool_name": name, "arguments": arguments}}


def rpc(client: TestClient, method: str, **params: Any) -> dict[str, Any]:
    answer: dict[str, Any] = client.post(
        RPC, json={"jsonrpc": "2.0", "method": method, "params": params, "id": 1}
    ).json()
    return answer


def in_process_error(name: str, arguments: dict[str, Any], *, reset: bool = True, end: bool = False) -> str:
    session = LocalSession(ToyDesk())
    if reset:
        session.reset()
    if end:
        session.call_tool("end_turn", {})
    with pytest.raises(Exception) as caught:
        session.call_tool(name, arguments)
    return str(caught.value)


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.02)


def test_list_tools_sends_each_published_schema_byte_for_byte(serve):
    with serve().websocket_connect(WS) as ws:
        ws.send_text(json.dumps({"type": "step", "data": {"type": "list_tools"}}))
        frame = ws.receive_text()
    for tool in ToyDesk.tools.published:
        assert f'"input_schema":{wire.dumps(tool["inputSchema"])}' in frame
    listed = json.loads(frame)["data"]
    assert listed["observation"]["tools"] == [
        {"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}
        for t in ToyDesk.tools.published
    ]
    assert (listed["reward"], listed["done"]) == (None, False)


def test_an_episode_runs_from_a_dataset_row_to_end_turn_with_its_reward(serve):
    client = serve()
    with client.websocket_connect(WS) as ws:
        assert ask(ws, {"type": "reset", "data": {"seed": 5}}) == {
            "type": "observation",
            "data": {
                "observation": {"metadata": {}, "text": "counter starts at 5"},
                "reward": None,
                "done": False,
            },
        }
        assert ask(ws, call("add", amount=2)) == {
            "type": "observation",
            "data": {"observation": wire.call_result("add", "total 7"), "reward": None, "done": False},
        }
        assert ask(ws, call("submit", offers=[{"hour": 7, "mw": 5}]))["data"]["observation"]["result"][
            "data"
        ] == ('{"accepted":1,"mw":5.0}')
        state = ask(ws, {"type": "state"})
        assert state["type"] == "state" and state["data"]["step_count"] == 2
        assert client.app.state.episodes.is_live(state["data"]["episode_id"])
        ended = ask(ws, call("end_turn"))["data"]
        assert (ended["reward"], ended["done"]) == (7.0, True)
        assert ended["observation"]["result"]["data"] == "Turn ended."
        after = ask(ws, call("add", amount=1))[
            "data"
        ]  # a call after the end: its error, and the reward again
        assert (after["reward"], after["done"]) == (7.0, True)
        assert after["observation"]["error"]["message"].startswith(
            "tool 'add' was not run: the episode has ended"
        )
        assert (
            ask(ws, {"type": "reset", "data": {"seed": 1}})["data"]["observation"]["text"]
            == "counter starts at 1"
        )
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 0


def test_tool_errors_come_back_in_the_observation_with_the_in_process_message(serve):
    with serve().websocket_connect(WS) as ws:
        before = ask(ws, call("add", amount=1))["data"]["observation"]["error"]
        assert before == {
            "error_type": "execution_error",
            "message": in_process_error("add", {"amount": 1}, reset=False),
        }
        ask(ws, {"type": "reset", "data": {}})
        refused = ask(ws, call("add", amount="two"))["data"]
        assert refused["observation"] == wire.call_error(
            "add", "invalid_args", in_process_error("add", {"amount": "two"})
        )
        assert (refused["reward"], refused["done"]) == (None, False)
        unknown = ask(ws, call("nope"))["data"]["observation"]["error"]
        assert unknown == {"error_type": "tool_not_found", "message": in_process_error("nope", {})}
        ask(ws, call("end_turn"))
        after = ask(ws, call("add", amount=1))["data"]["observation"]["error"]
        assert after == {
            "error_type": "execution_error",
            "message": in_process_error("add", {"amount": 1}, end=True),
        }


def test_a_crashing_tool_is_an_execution_error_in_its_observation_and_the_session_goes_on(serve):
    with serve().websocket_connect(WS) as ws:
        ask(ws, {"type": "reset", "data": {}})
        crashed = ask(ws, call("crash"))["data"]["observation"]
        assert crashed == wire.call_error("crash", "execution_error", in_process_error("crash", {}))
        assert crashed["error"]["message"] == "tool 'crash' failed: KeyError: 'boom'"
        assert ask(ws, call("add", amount=1))["data"]["observation"]["result"]["data"] == "total 1"


@pytest.mark.parametrize(
    ("frame", "code", "message"),
    [
        (
            '{"type": "reset", "data": {}, "data": {}}',
            "INVALID_JSON",
            'Invalid JSON: key "data" appears twice',
        ),
        (
            '{"type": "reset", "data": {"seed": NaN}}',
            "INVALID_JSON",
            "Invalid JSON: NaN is not a JSON number",
        ),
        ("not json", "INVALID_JSON", "Invalid JSON: it is not JSON"),
        ("[1]", "VALIDATION_ERROR", 'Invalid message: send a JSON object with a "type"'),
        ('{"type": "bogus"}', "UNKNOWN_TYPE", "Unknown message type: bogus"),
        ('{"data": {}}', "UNKNOWN_TYPE", "Unknown message type: "),
        ('{"type": "step"}', "VALIDATION_ERROR", "Invalid message: a step's data must be an action"),
        (
            '{"type": "step", "data": {"message": "hi"}}',
            "VALIDATION_ERROR",
            "Invalid message: ToyDesk takes MCP actions",
        ),
        (
            '{"type": "step", "data": {"type": "call_tool"}}',
            "VALIDATION_ERROR",
            'Invalid message: a call_tool action needs "tool_name"',
        ),
        (
            '{"type": "step", "data": {"type": "list_tools", "x": 1}}',
            "VALIDATION_ERROR",
            'Invalid message: a list_tools action has no keys "x"',
        ),
        (
            '{"type": "reset", "data": [1]}',
            "VALIDATION_ERROR",
            "Invalid message: a reset's data must be a JSON object",
        ),
        (
            '{"type": "state", "extra": 1}',
            "VALIDATION_ERROR",
            'Invalid message: a state message has no keys "extra"',
        ),
    ],
)
def test_a_message_the_server_cannot_act_on_gets_openenv_error_code_and_the_session_goes_on(
    serve, frame, code, message
):
    with serve().websocket_connect(WS) as ws:
        error = ask(ws, frame)
        assert error["type"] == "error" and error["data"]["code"] == code
        assert error["data"]["message"].startswith(message)
        assert ask(ws, {"type": "state"})["type"] == "state"


def test_a_message_over_the_body_limit_closes_the_socket_with_1009_and_frees_the_episode(serve):
    client = serve(max_body_bytes=1000)
    with client.websocket_connect(WS) as ws:
        assert client.app.state.episodes.count() == 1
        ws.send_text(json.dumps(call("echo", text="x" * 2000)))
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_text()
    assert closed.value.code == 1009 and "larger than 1000 bytes" in closed.value.reason
    wait_for(lambda: client.app.state.episodes.count() == 0)


def test_a_message_of_more_values_than_the_limit_is_refused_unparsed_and_the_session_goes_on(serve):
    client = serve(max_body_values=100)
    with client.websocket_connect(WS) as ws:
        ask(ws, {"type": "reset", "data": {}})
        refused = ask(ws, call("submit", offers=[{"hour": 1, "mw": 1}] * 60))
        assert refused["data"]["code"] == "VALIDATION_ERROR"
        assert refused["data"]["message"].startswith("Invalid message: it holds about 187 JSON values")
        assert refused["data"]["message"].endswith("more than the server's limit of 100; send fewer")
        assert ask(ws, call("add", amount=1))["data"]["observation"]["result"]["data"] == "total 1"


def test_an_idle_socket_is_closed_and_its_episode_freed(serve):
    client = serve(idle_timeout=0.3)
    with client.websocket_connect(WS) as ws:
        ask(ws, {"type": "reset", "data": {}})
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_text()
    assert closed.value.code == 1000 and "idle for more than 0.3 s" in closed.value.reason
    wait_for(lambda: client.app.state.episodes.count() == 0)


def test_closing_or_dropping_the_socket_closes_its_episode(serve):
    client = serve()
    episodes = client.app.state.episodes
    with client.websocket_connect(WS) as ws:
        ask(ws, {"type": "reset", "data": {}})
        ws.send_text(json.dumps({"type": "close"}))
        with pytest.raises(WebSocketDisconnect):
            ws.receive_text()
    wait_for(lambda: episodes.count() == 0)
    with client.websocket_connect(WS) as ws:
        ask(ws, {"type": "reset", "data": {}})
        assert episodes.count() == 1
    wait_for(lambda: episodes.count() == 0)


def test_past_max_episodes_a_socket_gets_capacity_reached_in_answer_to_its_first_message(serve):
    client = serve(max_episodes=1)
    with client.websocket_connect(WS) as first:
        ask(first, {"type": "reset", "data": {}})
        with client.websocket_connect(WS) as second:
            refusal = ask(second, {"type": "reset", "data": {}})
            with pytest.raises(WebSocketDisconnect):
                second.receive_text()
    assert refusal["type"] == "error"
    assert refusal["data"]["code"] == "CAPACITY_REACHED"
    assert (refusal["data"]["active_sessions"], refusal["data"]["max_sessions"]) == (1, 1)
    assert refusal["data"]["message"].startswith(
        "the server already holds 1 live episodes, its limit: close sessions you no longer use (a close message, "
        "or openenv/session/close)"
    )  # OpenEnv's own ways, never the control API's DELETE /episodes


def test_a_refused_socket_that_sends_nothing_still_gets_the_refusal(serve, monkeypatch):
    monkeypatch.setattr(openenv_socket, "REFUSAL_WAIT", 0.2)
    client = serve(max_episodes=1)
    with client.websocket_connect(WS), client.websocket_connect(WS) as second:
        assert json.loads(second.receive_text())["data"]["code"] == "CAPACITY_REACHED"


def test_a_call_past_the_call_timeout_reports_timeout_and_the_next_reset_starts_afresh(serve):
    client = serve(call_timeout=0.5)
    with client.websocket_connect(WS) as ws:
        ask(ws, {"type": "reset", "data": {"seed": 2}})
        late = ask(ws, call("hang", seconds=10))["data"]
        assert (late["done"], late["reward"]) == (True, None)  # the episode is over, unscored: a client stops
        error = late["observation"]["error"]
        assert (
            error["error_type"] == "timeout"
            and "did not finish within the server's call timeout" in error["message"]
        )
        gone = ask(ws, call("add", amount=1))["data"]["observation"]["error"]
        assert gone["error_type"] == "execution_error" and "expired or unknown" in gone["message"]
        assert error["message"].endswith(START_AGAIN) and gone["message"].endswith(START_AGAIN)
        assert (
            ask(ws, {"type": "reset", "data": {"seed": 4}})["data"]["observation"]["text"]
            == "counter starts at 4"
        )
        assert ask(ws, call("add", amount=1))["data"]["observation"]["result"]["data"] == "total 5"
    wait_for(lambda: client.app.state.episodes.count() == 0)


def test_the_dialect_opens_a_session_that_a_socket_attaches_to(serve):
    client = serve()
    session_id = rpc(client, "openenv/session/create")["result"]["session_id"]
    with client.websocket_connect(f"{WS}?session_id={session_id}") as ws:
        ask(ws, {"type": "reset", "data": {"seed": 3}})
        answer = rpc(client, "tools/call", name="add", arguments={"amount": 4}, session_id=session_id)
        assert answer == {"jsonrpc": "2.0", "id": 1, "result": wire.mcp_result("total 7")}
        assert ask(ws, {"type": "state"})["data"] == {"episode_id": session_id, "step_count": 1}
        refused = rpc(client, "tools/call", name="add", arguments={"amount": "x"}, session_id=session_id)
        assert refused["error"] == {
            "code": -32603,
            "message": in_process_error("add", {"amount": "x"}),
            "data": None,
        }
    assert client.app.state.episodes.is_live(session_id)  # the dialect's session outlives the socket
    assert rpc(client, "openenv/session/close", session_id=session_id)["result"] == {
        "session_id": session_id,
        "closed": True,
    }
    assert not client.app.state.episodes.is_live(session_id)


def test_tools_list_over_the_dialect_names_the_schema_inputschema_as_openenv_does(serve):
    tools = rpc(serve(), "tools/list")["result"]["tools"]
    assert tools == [
        {"name": t["name"], "description": t["description"], "inputSchema": t["inputSchema"]}
        for t in ToyDesk.tools.published
    ]


def test_closing_an_attached_session_waits_for_its_socket(serve):
    client = serve()
    session_id = rpc(client, "openenv/session/create")["result"]["session_id"]
    with client.websocket_connect(f"{WS}?session_id={session_id}") as ws:
        assert rpc(client, "openenv/session/close", session_id=session_id)["result"] == {
            "session_id": session_id,
            "closed": False,
            "closing": True,
        }
        assert ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
    wait_for(lambda: not client.app.state.episodes.is_live(session_id))


def test_a_session_takes_one_socket_and_an_unknown_one_none(serve):
    client = serve()
    session_id = rpc(client, "openenv/session/create")["result"]["session_id"]
    with client.websocket_connect(f"{WS}?session_id={session_id}"):
        with client.websocket_connect(f"{WS}?session_id={session_id}") as second:
            refusal = ask(second, {"type": "state"})["data"]
        assert refusal["code"] == "SESSION_ERROR" and "already has a WebSocket attached" in refusal["message"]
    with client.websocket_connect(f"{WS}?session_id=nope") as unknown:
        refusal = ask(unknown, {"type": "state"})["data"]
    assert refusal["code"] == "SESSION_ERROR" and refusal["message"].startswith(
        "episode 'nope' expired or unknown"
    )
    assert refusal["message"].endswith(START_AGAIN)


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        (b"nope", -32700, "Parse error: the body is not standard JSON"),
        (b'{"jsonrpc": "2.0", "method": "tools/list", "id": 1, "id": 2}', -32700, "Parse error"),
        (b"[]", -32600, "Invalid request: send one JSON-RPC 2.0 request object"),
        (b'{"method": "tools/list", "id": 1}', -32600, 'Invalid request: "jsonrpc" must be "2.0"'),
        (b'{"jsonrpc": "2.0", "method": "tools/list", "x": 1}', -32600, 'Invalid request: unknown keys "x"'),
        (b'{"jsonrpc": "2.0", "method": "initialize", "id": 1}', -32601, "Method not found: initialize"),
        (b'{"jsonrpc": "2.0", "method": "tools/list", "params": [1]}', -32602, "Params must be an object"),
        (
            b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "add"}}',
            -32602,
            "tools/call needs a session",
        ),
        (b'{"jsonrpc": "2.0", "method": "tools/call", "params": {}}', -32602, "Missing 'name' in params"),
        (
            b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "add", "session_id": "gone"}}',
            -32602,
            "episode 'gone' expired or unknown",
        ),
        (
            b'{"jsonrpc": "2.0", "method": "openenv/session/close", "params": {}}',
            -32602,
            "Invalid params - 'session_id' is required",
        ),
    ],
)
def test_the_dialect_answers_what_it_cannot_act_on_with_json_rpc_errors_and_http_200(
    serve, body, code, message
):
    response = serve().post(RPC, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["code"] == code and error["message"].startswith(message)


def test_past_max_episodes_the_dialect_answers_a_server_error_with_the_counts(serve):
    client = serve(max_episodes=1)
    assert "result" in rpc(client, "openenv/session/create")
    error = rpc(client, "openenv/session/create")["error"]
    assert error["code"] == -32000 and error["data"] == {"active_sessions": 1, "max_sessions": 1}
    assert error["message"].startswith("the server already holds 1 live episodes")


def test_the_dialect_also_runs_inside_a_socket_on_its_own_session(serve):
    with serve().websocket_connect(WS) as ws:
        ask(ws, {"type": "reset", "data": {"seed": 1}})
        created = ask(
            ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "openenv/session/create", "id": 7}}
        )
        session_id = created["data"]["result"]["session_id"]
        assert ask(ws, {"type": "state"})["data"]["episode_id"] == session_id
        answer = ask(
            ws,
            {
                "type": "mcp",
                "data": {
                    "jsonrpc": "2.0",
                    "method": "tools/call",
                    "params": {"name": "add", "arguments": {"amount": 1}},
                    "id": 8,
                },
            },
        )
        assert answer == {
            "type": "mcp",
            "data": {"jsonrpc": "2.0", "id": 8, "result": wire.mcp_result("total 2")},
        }
        close = {
            "jsonrpc": "2.0",
            "method": "openenv/session/close",
            "params": {"session_id": session_id},
            "id": 9,
        }
        assert ask(ws, {"type": "mcp", "data": close})["data"]["error"]["code"] == -32600


def test_health_schema_and_metadata_answer_as_openenv_does(serve):
    client = serve(token="s3cret")
    assert client.get("/openenv/health").json() == {
        "status": "healthy"
    }  # no token needed, as launchers poll it
    assert client.get("/openenv/schema").status_code == 401
    headers = {"Authorization": "Bearer s3cret"}
    schema = client.get("/openenv/schema", headers=headers).json()
    assert list(schema) == ["action", "observation", "state", "reset_observation"]
    assert (
        schema["action"]["title"] == "CallToolAction"
        and schema["observation"]["title"] == "CallToolObservation"
    )
    assert schema["state"]["properties"]["step_count"]["minimum"] == 0
    assert schema["reset_observation"]["properties"]["text"]["anyOf"] == [
        {"type": "string"},
        {"type": "null"},
    ]
    assert client.get("/openenv/metadata", headers=headers).json()["name"] == "ToyDesk"


def test_the_metadata_reports_the_live_sessions_and_the_most_the_server_holds(serve):
    client = serve(max_episodes=3)
    with client.websocket_connect(WS) as ws:
        ask(ws, {"type": "reset", "data": {}})
        metadata = client.get("/openenv/metadata").json()
    assert (metadata["active_sessions"], metadata["max_sessions"]) == (1, 3)  # as CAPACITY_REACHED names them
    assert serve(max_episodes=None).get("/openenv/metadata").json()["max_sessions"] is None


def test_a_socket_without_the_token_is_refused_with_401_before_any_episode_opens(serve):
    client = serve(token="s3cret")
    with pytest.raises(WebSocketDenialResponse) as refused, client.websocket_connect(WS):
        pass
    assert refused.value.status_code == 401
    assert refused.value.json()["error"]["code"] == "unauthorized"
    assert client.app.state.episodes.count() == 0
    with client.websocket_connect(WS, headers={"Authorization": "Bearer s3cret"}) as ws:
        assert ask(ws, {"type": "reset", "data": {}})["type"] == "observation"


def test_a_socket_to_a_host_the_server_does_not_answer_to_is_refused_with_421(serve):
    client = serve(allowed_hosts=["127.0.0.1:*"])
    with pytest.raises(WebSocketDenialResponse) as refused, client.websocket_connect(WS):
        pass
    assert refused.value.status_code == 421


def test_a_socket_from_a_web_page_of_another_site_is_refused_with_403_before_any_episode_opens(serve):
    client = serve()
    with (
        pytest.raises(WebSocketDenialResponse) as refused,
        client.websocket_connect(WS, headers={"Origin": "https://evil.example"}),
    ):
        pass
    assert refused.value.status_code == 403
    assert refused.value.json()["error"]["message"].startswith(
        "requests from the web page at 'https://evil.example' are not allowed"
    )
    assert client.app.state.episodes.count() == 0
    with client.websocket_connect(
        WS, headers={"Origin": "http://localhost:3000"}
    ) as ws:  # a page on this machine
        assert ask(ws, {"type": "reset", "data": {}})["type"] == "observation"


@pytest.mark.parametrize("prefix", ["", "/", "openenv", "/openenv/", "/mcp", "/episodes/x", "/open env"])
def test_the_surface_refuses_a_prefix_that_is_not_a_path_of_its_own(prefix):
    with pytest.raises(ValueError, match="OpenEnv's prefix must be a path like '/openenv'"):
        build_app(ToyDesk, surfaces=[OpenEnvSurface(prefix)])


def test_build_app_names_the_surface_to_pass_for_the_prefix_it_took_before():
    with pytest.raises(TypeError) as raised:
        build_app(ToyDesk, openenv_prefix="/elsewhere")
    assert str(raised.value) == (
        "build_app no longer takes openenv_prefix=: serve OpenEnv's surface with "
        "surfaces=[OpenEnvSurface('/elsewhere')] (from agent_env.openenv import OpenEnvSurface)"
    )
    with pytest.raises(
        TypeError,
        match=r"openenv_prefix=: drop it \(None served no OpenEnv surface, and without surfaces= none is served\)$",
    ):
        build_app(ToyDesk, openenv_prefix=None)


def test_without_a_prefix_no_openenv_route_is_served(serve):
    client = TestClient(build_app(ToyDesk))
    with client:
        assert client.get("/openenv/health").status_code == 404


def test_a_refused_call_changes_nothing_in_the_episode(serve):
    with serve().websocket_connect(WS) as ws:
        ask(ws, {"type": "reset", "data": {"seed": 1}})
        refused = ask(ws, call("submit", offers=[{"hour": 30, "mw": 1}]))["data"]["observation"]["error"]
        assert refused["error_type"] == "invalid_args"
        assert ask(ws, call("add", amount=0))["data"]["observation"]["result"]["data"] == "total 1"


@pytest.mark.anyio
async def test_where_the_asgi_server_cannot_deny_a_handshake_the_guard_closes_it_with_1008():
    app = build_app(ToyDesk, token="s3cret", surfaces=[OpenEnvSurface()])
    scope = {"type": "websocket", "path": "/openenv/ws", "headers": [], "query_string": b"", "extensions": {}}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    assert sent == [{"type": "websocket.close", "code": 1008, "reason": ""}]


def test_a_json_rpc_request_past_the_body_limit_is_a_json_rpc_error_with_its_id_and_http_200(serve):
    client = serve(max_body_bytes=1_000)
    session_id = rpc(client, "openenv/session/create")["result"]["session_id"]
    for size in (5_000, 3_000_000):  # read to its end, only its ends kept, to find the id
        params = {"name": "echo", "arguments": {"text": "x" * size}, "session_id": session_id}
        answer = client.post(RPC, json={"jsonrpc": "2.0", "method": "tools/call", "params": params, "id": 9})
        assert answer.status_code == 200
        assert answer.json() == {
            "jsonrpc": "2.0",
            "id": 9,
            "error": {
                "code": -32600,
                "message": "the request body is larger than the server's limit of 1000 bytes; send a smaller request",
            },
        }
    anonymous = client.post(
        RPC, json={"jsonrpc": "2.0", "method": "tools/call", "params": {"x": "y" * 5_000}}
    )
    assert anonymous.status_code == 200 and anonymous.json()["id"] is None
