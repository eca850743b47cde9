"""The ORS surface of an agent_env server (`ors/server/`): requests and their answers, in process.

Every answer is one the openreward SDK's server gives (shapes read from its `environments/server.py` and checked
against it running); the tier under tst/ors drives the same surface with the SDK's own client and TRL's adapter.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from agent_env import Environment, tool
from agent_env.ors import ORSSurface
from agent_env.ors import _wire as wire
from agent_env.server.app import build_app
from agent_env.session import LocalSession
from testbed.toy import MALFORMED, VALID, ToyDesk

TOKEN = "s3cret-token"
CURVE = {"hours": "HE07-HE10", "points": [[-50, 20], [50, 40]]}


class Chatty(Environment):
    """A conversation-shaped prompt (a system message), a long result, and a tool that sleeps."""

    def reset(self, **row: Any) -> str:
        return "Go."

    def reward(self) -> float:
        return 0.5

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        if split != "base":
            from agent_env.errors import SplitNotFoundError

            raise SplitNotFoundError(f"no split {split!r}", splits=["base"])
        prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello."}]
        return [{"prompt": prompt, "task_id": "base/0"}]

    @tool
    def long(self, size: int) -> str:
        """A long answer.

        Args:
            size: How long.
        """
        return "x" * size

    @tool
    def nap(self, seconds: float) -> str:
        """Sleep a while.

        Args:
            seconds: How long.
        """
        time.sleep(seconds)
        return "rested"


@pytest.fixture
def serve() -> Iterator[Callable[..., TestClient]]:
    """`serve(environment=ToyDesk, **build_app_options)`: a started app with the ORS surface, in process."""
    clients: list[TestClient] = []

    def start(environment: Any = ToyDesk, surface: ORSSurface | None = None, **options: Any) -> TestClient:
        client = TestClient(build_app(environment, surfaces=[surface or ORSSurface()], **options))
        client.__enter__()
        clients.append(client)
        return client

    yield start
    for client in reversed(clients):
        client.__exit__(None, None, None)


def events(text: str) -> list[tuple[str, str]]:
    reader, found = wire.EventReader(), []
    for line in text.splitlines():
        event = reader.line(line)
        if event is not None:
            found.append(event)
    return found


def session(client: TestClient, **task: Any) -> str:
    created = events(client.post("/create_session", json={}).text)
    sid = created[0][1]
    answer = client.post("/create", json=task or {"task_spec": {"task": "t1"}}, headers={"X-Session-ID": sid})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"sid": sid}
    return sid


def call(client: TestClient, sid: str, name: str, arguments: Any, **extra: Any) -> tuple[str, Any]:
    """The kind of a call's last event and its data (the result parsed, for `end`), after its `task_id`."""
    answer = client.post(
        "/toydesk/call", json={"name": name, "input": arguments, **extra}, headers={"X-Session-ID": sid}
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    found = events(answer.text)
    assert found[0][0] == wire.TASK_ID
    kind = found[-1][0]
    data = "".join(data for event, data in found[1:] if event in (wire.CHUNK, wire.END))
    return kind, json.loads(data) if kind == wire.END else found[-1][1]


def in_process(*calls: tuple[str, Any], row: dict | None = None) -> LocalSession:
    local = LocalSession(ToyDesk())
    local.reset(**(row or {"task": "t1"}))
    for name, arguments in calls:
        local.call_tool(name, arguments)
    return local


# Listing.


def test_get_tools_with_a_session_id_is_ors_and_without_one_the_control_apis(serve):
    client = serve()
    control = client.get("/tools").json()
    assert set(control) == {"environment", "class", "tools"} and "inputSchema" in control["tools"][0]
    listed = client.get("/tools", headers={"X-Session-ID": "any"})
    assert listed.content == client.get("/toydesk/tools").content == client.get("/ToyDesk/tools").content
    expected = {
        "tools": [
            {"name": tool["name"], "description": tool["description"], "input_schema": tool["inputSchema"]}
            for tool in ToyDesk.tools.published
        ],
        "terminal_tool": None,
        "supports_score_group": False,
        "message_block_types": ["text"],
    }
    assert listed.json() == expected
    # each schema byte for byte as published (compact JSON, its keys in their order)
    for published in ToyDesk.tools.published:
        assert (
            json.dumps(published["inputSchema"], separators=(",", ":"), ensure_ascii=False).encode()
            in listed.content
        )
    assert set(listed.json()["tools"][0]) == {
        "name",
        "description",
        "input_schema",
    }  # no key the SDK would refuse


def test_the_environment_its_version_and_its_splits_are_listed(serve):
    client = serve()
    assert client.get("/list_environments").json() == ["toydesk"]
    assert client.get("/version").json()["version"].startswith("agent_env ")
    assert client.get("/toydesk/splits").json() == [
        {"name": "train", "type": "train"},
        {"name": "validation", "type": "validation"},
        {"name": "test", "type": "test"},
    ]
    assert client.get("/splits").json() == client.get("/toydesk/splits").json()  # the bare form
    chatty = serve(Chatty)  # a split the environment names itself, typed as the SDK types it
    assert chatty.get("/chatty/splits").json() == [{"name": "base", "type": "validation"}]


def test_a_splits_rows_are_its_tasks(serve):
    client = serve()
    rows = ToyDesk().dataset_rows("test")
    assert client.post("/toydesk/tasks", json={"split": "test"}).json() == {
        "tasks": rows,
        "env_name": "toydesk",
    }
    assert client.post("/toydesk/num_tasks", json={"split": "test"}).json() == {"num_tasks": 4}
    assert client.post("/toydesk/task", json={"split": "test", "index": 2}).json()["task"] == rows[2]
    assert (
        client.post("/toydesk/task_range", json={"split": "test", "start": -2}).json()["tasks"] == rows[-2:]
    )
    invalid = client.post("/toydesk/tasks", json={"split": "nope"})
    assert invalid.status_code == 400 and invalid.json()["detail"].startswith("Invalid split")
    assert client.post("/toydesk/task", json={"split": "test", "index": 4}).json() == {
        "detail": "Invalid index: split 'test' has 4 tasks"
    }


# Sessions and episodes.


def test_create_session_answers_as_the_sdk_server_does(serve):
    answer = serve().post("/create_session", json={})
    assert answer.headers["content-type"].startswith("text/event-stream")
    ((first, sid), (second, empty)) = events(answer.text)
    assert (first, second, empty) == ("task_id", "end", "") and len(sid) == 36


def test_an_episode_from_a_task_spec_or_by_split_and_index_starts_from_that_row(serve):
    client = serve()
    by_spec = session(client, task_spec={"task": "t7"})
    prompt = client.get("/toydesk/prompt", headers={"X-Session-ID": by_spec}).json()
    assert prompt == [wire.text_block("Task t7: submit offers, then end your turn.")]
    by_index = session(client, split="train", index=1)
    row = ToyDesk().dataset_rows("train")[1]
    prompt = client.get("/prompt", headers={"X-Session-ID": by_index}).json()
    assert prompt == [
        wire.text_block("Trade.\n\nTask train-1: submit offers, then end your turn.")
    ]  # TRL's way
    assert client.get("/toydesk/messages", headers={"X-Session-ID": by_index}).json() == [
        {"role": "user", "blocks": prompt, "detail": None}
    ]
    assert row["task"] == "train-1"


def test_a_conversation_is_its_messages_and_a_flattened_prompt(serve):
    client = serve(Chatty)
    sid = session(client, split="base", index=0)
    messages = client.get("/chatty/messages", headers={"X-Session-ID": sid}).json()
    assert [(message["role"], [block["text"] for block in message["blocks"]]) for message in messages] == [
        ("system", ["Be brief."]),
        ("user", ["Hello.\n\nGo."]),
    ]
    flat = client.get("/chatty/prompt", headers={"X-Session-ID": sid}).json()
    assert [block["text"] for block in flat] == ["[system]", "Be brief.", "[user]", "Hello.\n\nGo."]


def test_a_whole_episode_calls_as_in_process_and_its_reward_comes_with_the_finishing_result(serve):
    client = serve()
    sid = session(client)
    kind, result = call(client, sid, "submit_offers", VALID)
    assert (kind, result) == ("end", wire.output_result("accepted 3 curves and 1 AS offers"))
    kind, result = call(client, sid, "end_turn", {})
    local = in_process(("submit_offers", VALID), ("end_turn", {}))
    assert result == wire.output_result("Turn ended.", reward=local.reward(), finished=True)
    assert result["output"]["reward"] == 0.3
    kind, result = call(client, sid, "battery_status", {})  # the finished latch
    assert result == {
        "ok": False,
        "error": "tool 'battery_status' was not run: the episode has ended (end_turn was called) and takes no more calls",
        "reason": "episode_finished",
    }


def test_refused_calls_are_not_run_and_read_as_in_process(serve):
    client = serve()
    sid = session(client)
    local = in_process()
    with pytest.raises(Exception) as malformed:
        local.call_tool("submit_offers", MALFORMED)
    with pytest.raises(Exception) as unknown:
        local.call_tool("nope", {})
    assert call(client, sid, "submit_offers", MALFORMED)[1] == wire.refusal_result(
        str(malformed.value), "input_validation"
    )
    assert call(client, sid, "nope", {})[1] == wire.refusal_result(str(unknown.value), "not_found")
    _, result = call(client, sid, "end_turn", {})
    assert result["output"]["reward"] == 0.0  # nothing of the refused calls was booked


def test_a_tool_that_refuses_or_raises_answers_its_error_as_its_output_and_the_episode_goes_on(serve):
    client = serve()
    sid = session(client, task_spec={"task": "t", "down": ["battery"]})
    refused = call(client, sid, "submit_offers", {"curves": [{"hours": "all", "points": [[0, 9], [1, 2]]}]})[
        1
    ]
    assert refused == wire.output_result(
        "curves[0].points: prices must be non-decreasing", metadata={"error": "tool_error"}
    )
    raised = call(client, sid, "battery_status", {})[1]
    assert (
        raised["output"]["blocks"][0]["text"]
        == "tool 'battery_status' failed: ConnectionError: the battery's telemetry is down"
    )
    assert raised["output"]["metadata"] == {"error": "tool_failed"} and raised["output"]["finished"] is False
    assert call(client, sid, "submit_offers", {"curves": [CURVE]})[1]["ok"] is True


def test_a_call_that_ends_the_episode_from_within_carries_the_reward_even_refused(serve):
    client = serve()
    sid = session(client, task_spec={"task": "t", "closes_after": 2})
    call(client, sid, "submit_offers", {"curves": [CURVE]})
    _, result = call(client, sid, "submit_offers", {"curves": [{"hours": "all", "points": [[0, 9], [1, 1]]}]})
    assert result == wire.output_result(
        "curves[0].points: prices must be non-decreasing",
        reward=0.1,
        finished=True,
        metadata={"error": "tool_error"},
    )


def test_an_episode_that_cannot_be_scored_ends_in_an_error_event_never_a_reward(serve):
    client = serve()
    sid = session(client, task_spec={"task": "t", "raise_in": "reward"})
    kind, said = call(client, sid, "end_turn", {})
    assert kind == "error" and "its reward() raised ZeroDivisionError: division by zero" in said


def test_a_long_result_comes_in_chunks_of_4096_characters(serve):
    client = serve(Chatty)
    sid = session(client, split="base", index=0)
    answer = client.post(
        "/chatty/call", json={"name": "long", "input": {"size": 10_000}}, headers={"X-Session-ID": sid}
    )
    found = events(answer.text)
    assert [kind for kind, _ in found] == ["task_id", "chunk", "chunk", "end"]  # 10,09x characters
    assert all(len(data) == 4096 for _, data in found[1:3])
    assert json.loads("".join(data for _, data in found[1:]))["output"]["blocks"][0]["text"] == "x" * 10_000


def test_a_call_is_answered_again_by_its_task_id_and_an_unknown_one_as_the_sdk_says(serve):
    client = serve()
    sid = session(client)
    answer = client.post(
        "/toydesk/call", json={"name": "battery_status", "input": {}}, headers={"X-Session-ID": sid}
    )
    task_id = events(answer.text)[0][1]
    again = client.post(
        "/toydesk/call",
        json={"name": "battery_status", "input": {}, "task_id": task_id},
        headers={"X-Session-ID": sid},
    )
    assert events(again.text) == events(answer.text)
    unknown = client.post(
        "/toydesk/call",
        json={"name": "battery_status", "input": {}, "task_id": "f" * 32},
        headers={"X-Session-ID": sid},
    )
    assert events(unknown.text) == [("error", "unknown task_id")]
    assert call(client, sid, "end_turn", {})[1]["output"]["reward"] == 0.0  # resuming ran nothing again


def test_ping_keeps_an_episode_from_idling_out_and_delete_closes_it(serve):
    client = serve(idle_timeout=0.6)
    kept, left = session(client), session(client)
    for _ in range(5):
        time.sleep(0.25)
        assert client.post("/ping", headers={"X-Session-ID": kept}).json() == {"status": "ok"}
    assert client.post("/ping", headers={"X-Session-ID": left}).status_code == 404
    assert client.app.state.episodes.count() == 1
    assert client.post("/delete", headers={"X-Session-ID": kept}).json() == {"sid": kept}
    assert client.post("/delete_session", headers={"X-Session-ID": kept}).json() == {
        "sid": kept
    }  # idempotent
    assert client.app.state.episodes.count() == 0
    gone = client.get("/toydesk/prompt", headers={"X-Session-ID": kept})
    assert gone.status_code == 404 and gone.json()["detail"].startswith("Active environment not found")


def test_a_session_plays_one_episode_and_the_server_holds_no_more_than_its_limit(serve):
    client = serve(max_episodes=1)
    sid = session(client)
    again = client.post("/create", json={"task_spec": {}}, headers={"X-Session-ID": sid})
    assert again.status_code == 400 and again.json() == {"detail": "Session already exists"}
    other = client.post("/create", json={"task_spec": {}}, headers={"X-Session-ID": "another"})
    assert other.status_code == 503 and other.headers["retry-after"] == "2"
    assert "delete sessions you no longer use (POST /delete)" in other.json()["detail"]
    client.post("/delete", headers={"X-Session-ID": sid})
    assert (
        client.post("/create", json={"task_spec": {}}, headers={"X-Session-ID": "another"}).status_code == 200
    )


def test_a_task_the_environment_refuses_is_a_clear_400_and_leaves_nothing_open(serve):
    client = serve()
    answer = client.post("/create", json={"task_spec": {"raise_in": "reset"}}, headers={"X-Session-ID": "s1"})
    assert answer.status_code == 400 and "the task store is down" in answer.json()["detail"]
    assert client.app.state.episodes.count() == 0
    retried = client.post("/create", json={"task_spec": {"task": "ok"}}, headers={"X-Session-ID": "s1"})
    assert retried.status_code == 200  # the failed create held nothing


# Hostile and malformed requests: a clear 4xx each, and the server goes on.

HOSTILE: list[tuple[str, str, dict[str, Any], Any, int, str]] = [
    ("POST", "/create", {}, {"task_spec": {}}, 400, "X-Session-ID header is required"),
    ("POST", "/create", {"X-Session-ID": "a b"}, {"task_spec": {}}, 400, "X-Session-ID must be"),
    ("POST", "/create", {"X-Session-ID": "x" * 200}, {"task_spec": {}}, 400, "X-Session-ID must be"),
    ("POST", "/create", {"X-Session-ID": "s"}, {}, 422, "Provide either task_spec or both split and index"),
    (
        "POST",
        "/create",
        {"X-Session-ID": "s"},
        {"task_spec": {}, "split": "train", "index": 0},
        422,
        "not both",
    ),
    ("POST", "/create", {"X-Session-ID": "s"}, {"task_spec": [1]}, 422, "task_spec must be a JSON object"),
    ("POST", "/create", {"X-Session-ID": "s"}, {"split": "train"}, 422, "both be provided together"),
    ("POST", "/create", {"X-Session-ID": "s"}, {"split": "train", "index": True}, 422, "both be provided"),
    ("POST", "/create", {"X-Session-ID": "s"}, {"task_spec": {}, "extra": 1}, 422, "unknown fields 'extra'"),
    ("POST", "/create", {"X-Session-ID": "s"}, [1, 2], 422, "the body must be a JSON object"),
    (
        "POST",
        "/create",
        {"X-Session-ID": "s"},
        {"task_spec": {}, "env_name": "other"},
        404,
        "unknown environment",
    ),
    (
        "POST",
        "/create",
        {"X-Session-ID": "s"},
        {"task_spec": {}, "toolset_name": "codex"},
        400,
        "no toolsets",
    ),
    ("POST", "/create", {"X-Session-ID": "s"}, {"split": "nope", "index": 0}, 400, "Invalid split"),
    (
        "POST",
        "/toydesk/call",
        {"X-Session-ID": "none"},
        {"name": "end_turn", "input": {}},
        404,
        "Active environment",
    ),
    ("POST", "/toydesk/call", {"X-Session-ID": "s"}, {"name": 3, "input": {}}, 422, 'needs "name"'),
    (
        "POST",
        "/toydesk/call",
        {"X-Session-ID": "s"},
        {"name": "end_turn", "input": []},
        422,
        '"input" (a JSON object',
    ),
    ("POST", "/toydesk/call", {"X-Session-ID": "s"}, {"name": "end_turn"}, 422, "missing fields 'input'"),
    (
        "POST",
        "/other/call",
        {"X-Session-ID": "s"},
        {"name": "end_turn", "input": {}},
        404,
        "unknown environment",
    ),
    ("POST", "/toydesk/tasks", {}, {"split": ["test"]}, 422, "split must be a split's name"),
    ("POST", "/toydesk/task_range", {}, {"split": "test", "start": "0"}, 422, "start must be a whole number"),
    ("GET", "/toydesk/prompt", {"X-Session-ID": "none"}, None, 404, "Active environment not found"),
    ("GET", "/toydesk/task_tools", {"X-Session-ID": "none"}, None, 404, "Active environment not found"),
    ("POST", "/ping", {}, None, 400, "X-Session-ID header is required"),
]


@pytest.mark.parametrize(("method", "path", "headers", "body", "status", "said"), HOSTILE)
def test_a_malformed_request_gets_a_clear_4xx_and_the_server_goes_on(
    serve, method, path, headers, body, status, said
):
    client = serve()
    answer = client.request(method, path, headers=headers, **({"json": body} if body is not None else {}))
    assert answer.status_code == status and said in answer.json()["detail"], answer.text
    sid = session(client)
    assert call(client, sid, "end_turn", {})[1]["output"]["finished"] is True


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        (b'{"task_spec": {}, "task_spec": {}}', 400, "not standard JSON"),
        (b'{"task_spec": {"x": NaN}}', 400, "not standard JSON"),
        (b"[" * 10_000 + b"]" * 10_000, 400, "deep"),
        (b'{"task_spec": {"x": [' + b"0," * 30_000 + b"0]}}", 413, "more than the server's limit"),
        (b'{"task_spec": {"x": "' + b"y" * 5_000_000 + b'"}}', 413, "larger than the server's limit"),
        (b"not json", 400, "not standard JSON"),
        (b"", 422, "the body must be a JSON object"),
    ],
)
def test_bodies_are_held_to_standard_json_within_the_limits(serve, body, status, said):
    client = serve()
    answer = client.post(
        "/create", content=body, headers={"X-Session-ID": "s", "Content-Type": "application/json"}
    )
    assert answer.status_code == status and said in answer.text


def test_the_guard_holds_ors_routes_to_the_token_taken_as_bearer_or_as_x_api_key(serve):
    client = serve(token=TOKEN)
    assert client.get("/list_environments").status_code == 401
    refused = client.post("/create_session", json={}, headers={"X-API-Key": "wrong"})
    assert refused.status_code == 401 and "'x-api-key: <token>'" in refused.json()["error"]["message"]
    assert client.post("/create_session", json={}, headers={"X-API-Key": TOKEN}).status_code == 200
    assert client.get("/list_environments", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert (
        client.get("/tools", headers={"X-API-Key": TOKEN}).status_code == 200
    )  # the control API takes it too
    assert client.get("/health").status_code == 200


def test_the_guard_refuses_pages_of_other_sites_and_forms_but_lets_aiohttps_empty_posts_in(serve):
    client = serve()
    sid = session(client)
    assert (
        client.post("/ping", headers={"X-Session-ID": sid, "Origin": "http://evil.example"}).status_code
        == 403
    )
    assert (
        client.post(
            "/create",
            content=b"task_spec=1",
            headers={"X-Session-ID": "f", "Content-Type": "application/x-www-form-urlencoded"},
        ).status_code
        == 415
    )
    empty = {"X-Session-ID": sid, "Content-Type": "application/octet-stream", "Content-Length": "0"}
    assert client.post("/ping", headers=empty).status_code == 200  # what the SDK client sends
    assert client.post("/ping", content=b"x", headers={**empty, "Content-Length": "1"}).status_code == 415
    assert client.post("/ping", headers={**empty, "Content-Type": "text/plain"}).status_code == 415


def test_a_name_that_is_one_of_the_servers_routes_is_refused_at_build(serve):
    with pytest.raises(ValueError, match="cannot be named 'episodes'"):
        ORSSurface("episodes")
    with pytest.raises(ValueError, match="one path segment"):
        ORSSurface("a/b")

    class Create(ToyDesk):
        pass

    with pytest.raises(ValueError, match="cannot be named 'create'"):
        build_app(Create, surfaces=[ORSSurface()])
    renamed = serve(surface=ORSSurface("desk"))
    assert (
        renamed.get("/list_environments").json() == ["desk"] and renamed.get("/desk/tools").status_code == 200
    )
