"""`ORSEnvironment` against a scripted ORS server in memory (tst/unit/ors/fake.py): what it publishes, how an episode
goes, and every fault, each a named error, counted, and never a reward."""

from __future__ import annotations

import json
import logging
import pickle
from typing import Any

import httpx
import pytest

from agent_env import (
    AgentEnv,
    EpisodeEndedError,
    InfrastructureFailedError,
    ToolArgumentError,
    ToolDefinitionError,
    ToolError,
    UnknownToolError,
    UnscoredEpisodeError,
)
from agent_env.errors import DatasetRowsError, SplitNotFoundError
from agent_env.ors import (
    ORSEnvironment,
    ORSMalformedError,
    ORSRefusedError,
    ORSServerError,
    ORSSessionExpiredError,
    ORSStreamError,
    ORSTimeoutError,
    ORSToolFailedError,
    ORSUnauthorizedError,
    ORSUnavailableError,
)
from agent_env.ors import _wire as wire
from agent_env.session import LocalSession
from agent_env.training.trl import environment_class
from tst.unit.ors.fake import PLACE_SCHEMA, FakeORS, cut, sse, stream

URL = "http://ors.test"
KEY = "sk-ors-0123456789-secret"
BUY = {"orders": [{"side": "buy", "qty": 3}]}
NOW = {"Retry-After": "0"}


def environment(fake: FakeORS, **options: Any) -> ORSEnvironment:
    return ORSEnvironment(URL, options.pop("env_name", "orders"), transport=fake.transport(), **options)


def opened(fake: FakeORS, **options: Any) -> LocalSession:
    session = LocalSession(environment(fake, **options).environment_class()())
    session.reset(split="train", index=0)
    return session


# What it publishes.


def test_each_listed_tool_is_published_with_refs_inlined_titles_pruned_and_a_null_schema_empty():
    tools = {
        tool["name"]: tool for tool in AgentEnv.ors(URL, "orders", transport=FakeORS().transport()).tools()
    }
    assert list(tools) == ["place_orders", "peek", "submit", "end_turn"]
    assert tools["place_orders"]["inputSchema"] == {
        "type": "object",
        "properties": {
            "orders": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "side": {"type": "string", "enum": ["buy", "sell"]},
                        "qty": {"type": "integer", "minimum": 1, "maximum": 100},
                    },
                    "required": ["side", "qty"],
                },
            }
        },
        "required": ["orders"],
    }
    assert tools["peek"]["inputSchema"] == {"type": "object", "properties": {}}


def test_the_listing_is_kept_as_the_server_sent_it_for_what_trl_alone_would_show():
    published = environment(FakeORS()).environment_class().tools["place_orders"]
    assert published.published_elsewhere and published.listed_schema == PLACE_SCHEMA
    from agent_env.training.plain import plain_view

    lossy = {
        tool.name: tool
        for tool in plain_view(AgentEnv.ors(URL, "orders", transport=FakeORS().transport()).provider).tools
    }
    # TRL's own port of the listing (trl.experimental.openreward): the orders are a bare array, described by the
    # title the port reads for want of a description
    assert lossy["place_orders"].schema["function"]["parameters"]["properties"]["orders"] == {
        "type": "array",
        "description": "Orders",
    }


def test_a_terminal_tool_is_published_as_a_tool_that_takes_the_final_answer():
    listing = {"tools": [], "terminal_tool": {"name": "answer", "arg": "text", "description": "Answer."}}
    tools = {
        tool["name"]: tool
        for tool in environment(FakeORS(listing=listing)).environment_class().tools.published
    }
    assert tools["answer"]["inputSchema"]["required"] == ["text"]
    assert tools["answer"]["inputSchema"]["properties"]["text"]["type"] == "string"


def test_names_are_made_identifiers_and_what_cannot_be_published_is_refused_or_skipped(caplog):
    odd = [
        {"name": "get-sum", "description": "", "input_schema": None},
        {"name": "reset", "description": "", "input_schema": None},
    ]
    with pytest.raises(ToolDefinitionError, match="lists tool 'reset', which agent_env cannot publish"):
        environment(FakeORS(tools=odd)).environment_class()
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        built = environment(FakeORS(tools=odd), skip_unpublishable=True).environment_class()
    assert list(built.tools) == ["get_sum", "end_turn"]
    assert "published 'get-sum' as 'get_sum'" in caplog.text


def test_tools_selects_the_ones_shown_and_names_what_it_does_not_find():
    assert list(environment(FakeORS(), tools=["submit"]).environment_class().tools) == ["submit", "end_turn"]
    with pytest.raises(ToolDefinitionError, match="tools= names 'nope', which it does not list"):
        environment(FakeORS(), tools=["nope"]).environment_class()


def test_the_environment_is_found_by_name_or_as_the_servers_only_one():
    fake = FakeORS()
    assert environment(fake, env_name=None).environment_class().__name__ == "orders"
    fake.environments = ["orders", "other"]
    with pytest.raises(
        ToolDefinitionError, match="serves 2 environments \\('orders', 'other'\\): name the one"
    ):
        environment(fake, env_name=None).environment_class()


def test_an_environment_the_server_does_not_have_is_refused_naming_the_ones_it_serves():
    fake = FakeORS()
    fake.environments = ["orders", "other"]
    with pytest.raises(
        ToolDefinitionError,
        match=r"'Orders' at .* is not one the server serves: it serves 'orders', 'other'; env_name='orders' "
        r"\(.*answered 404: Not Found\)",
    ):
        environment(fake, env_name="Orders").environment_class()
    fake.fail("/list_environments", httpx.Response(404, json={"detail": "Not Found"}))
    with pytest.raises(ORSRefusedError, match=r"\(/nope/tools\) answered 404: Not Found"):
        environment(fake, env_name="nope").environment_class()  # no list to name: the server's words


@pytest.mark.parametrize(
    "listing",
    [
        {"tools": "x"},
        {"tools": [{"name": "a", "description": "", "input_schema": "x"}]},
        {"tools": [{"description": ""}]},
    ],
)
def test_a_listing_of_the_wrong_shape_is_a_named_fault(listing):
    with pytest.raises(ORSMalformedError, match="listed"):
        environment(FakeORS(listing=listing)).environment_class()


# Rows and episodes.


def test_a_splits_tasks_become_rows_naming_their_task_and_a_missing_split_names_the_splits():
    rows = AgentEnv.ors(URL, "orders", transport=FakeORS().transport()).provider.dataset_rows("train")
    assert rows == [
        {
            "prompt": [{"role": "user", "content": ""}],
            "task_spec": {"id": "train-0", "target": 3},
            "split": "train",
            "index": 0,
        },
        {
            "prompt": [{"role": "user", "content": ""}],
            "task_spec": {"id": "train-1", "target": 5},
            "split": "train",
            "index": 1,
        },
    ]
    with pytest.raises(SplitNotFoundError) as missing:
        environment(FakeORS()).environment_class()().dataset_rows("nope")
    assert missing.value.splits == ("train", "test")


def test_a_split_the_server_has_but_could_not_list_is_its_refusal_not_a_missing_split():
    # `train` is one of its splits; its tasks cannot be read (say, its data failed to download)
    fake = FakeORS()
    fake.fail("/orders/tasks", httpx.Response(400, json={"detail": "downloading the data failed"}))
    with pytest.raises(ORSRefusedError, match="answered 400: downloading the data failed") as refused:
        environment(fake).environment_class()().dataset_rows("train")
    assert not isinstance(refused.value, SplitNotFoundError)


def test_a_server_that_lists_no_tasks_but_counts_them_gives_rows_by_split_and_index():
    fake = FakeORS()
    fake.tasks_supported = False
    rows = environment(fake).environment_class()().dataset_rows("test")
    assert rows == [{"prompt": [{"role": "user", "content": ""}], "split": "test", "index": 0}]


def test_an_episode_is_a_session_created_on_its_task_and_deleted_when_scored():
    fake = FakeORS()
    session = LocalSession(environment(fake).environment_class()())
    assert session.reset(task_spec={"target": 7}) == "Reach 7."
    (sid,) = fake.sessions
    create = next(request for request in fake.requests if request.url.path == "/create")
    assert create.headers[wire.SESSION_HEADER] == sid
    # as JSON: httpx writes it compact from 0.28 on, with spaces at the floor (0.27)
    assert json.loads(create.content) == {"env_name": "orders", "task_spec": {"target": 7}}
    assert session.call_tool("place_orders", BUY) == "place_orders ran"
    assert session.call_tool("submit", {"total": 3}) == "submit ran"
    assert session.ended() == "a tool's result said finished: true"
    with pytest.raises(EpisodeEndedError):
        session.call_tool("peek", {})
    assert session.score().reward == 1.0
    wait_for(lambda: fake.deleted == [sid])
    assert fake.paths()[-2:] == ["/delete", "/delete_session"]


def test_the_reward_is_the_sum_of_what_the_results_carried():
    fake = FakeORS()
    fake.results = [
        wire.output_result("careful", reward=-0.25),
        wire.output_result("fine"),
        wire.output_result("done", reward=1.0, finished=True),
    ]
    session = opened(fake)
    for _ in range(2):
        session.call_tool("peek", {})
    session.call_tool("submit", {"total": 3})
    assert session.score().reward == 0.75
    assert session.score().breakdown == {"finished": True, "rewards": [-0.25, None, 1.0]}


def test_an_episode_never_finished_scores_what_was_carried_else_zero():
    fake = FakeORS()
    fake.results = [wire.output_result("half", reward=0.5)]
    session = opened(fake)
    session.call_tool("peek", {})
    assert session.reward() == 0.5  # agent_env's own end_turn ended it
    other = opened(FakeORS())
    assert other.reward() == 0.0


@pytest.mark.parametrize(
    ("reason", "error", "said"),
    [
        (
            "input_validation",
            ToolArgumentError,
            "Invalid arguments for tool 'peek' (the ORS server refused them): no",
        ),
        ("bad_input_shape", ToolArgumentError, "refused them"),
        ("not_found", UnknownToolError, "the ORS server has no tool 'peek': no"),
        ("name_collision", ToolError, "tool 'peek' was not run by the ORS server: no"),
        (None, ToolError, "was not run by the ORS server"),
    ],
)
def test_a_call_the_server_did_not_run_is_the_models_error_and_the_episode_goes_on(reason, error, said):
    fake = FakeORS()
    fake.results = (
        [wire.refusal_result("no", reason)] if reason else [{"ok": False, "error": "no", "reason": None}]
    )
    session = opened(fake)
    with pytest.raises(error, match=said.replace("(", "\\(").replace(")", "\\)")):
        session.call_tool("peek", {})
    assert session.ended() is None and session.call_tool("peek", {}) == "peek ran"


def test_a_row_that_names_no_task_is_refused_saying_what_a_row_needs():
    session = LocalSession(environment(FakeORS()).environment_class()())
    with pytest.raises(DatasetRowsError, match="names its task by task_spec"):
        session.reset(prompt=[{"role": "user", "content": "hi"}], seed=3)


def test_reset_lets_go_of_the_last_session_and_close_deletes_the_current_one():
    fake = FakeORS()
    session = opened(fake)
    first = next(iter(fake.sessions))
    session.reset(split="train", index=1)
    wait_for(lambda: fake.deleted == [first])
    second = next(iter(fake.sessions))
    session.close()
    wait_for(lambda: fake.deleted == [first, second])


# Faults: named, counted, never a reward.


def test_a_server_that_cannot_be_reached_fails_at_registration_naming_it():
    fake = FakeORS()
    fake.fail("/create_session", *[httpx.ConnectError("refused")] * 4)
    with pytest.raises(
        ORSUnavailableError, match=r"the ORS server at http://ors.test \(/create_session\) cannot be reached"
    ):
        environment(fake, retries=3).environment_class()
    assert fake.paths().count("/create_session") == 4  # sent again: a refused connection ran nothing


def test_429_is_waited_out_as_the_server_asks_and_counted():
    fake = FakeORS()
    fake.fail("/orders/call", httpx.Response(429, headers=NOW, json={"detail": "slow down"}))
    session = opened(fake)
    assert session.call_tool("peek", {}) == "peek ran"
    assert type(session.environment).faults() == {"rate_limited": 1}


def test_a_backend_still_starting_is_ridden_out():
    fake = FakeORS()
    starting = httpx.Response(
        503,
        headers={"X-Backend-State": "starting", "Retry-After": "0"},
        json={"detail": "Environment still starting."},
    )
    fake.fail("/orders/prompt", *[starting] * 6)
    assert opened(fake, retries=1).environment._record is not None  # 6 > retries: starting is not a retry


def test_a_call_is_not_sent_again_once_the_server_may_have_run_it():
    fake = FakeORS()
    fake.fail("/orders/call", httpx.Response(502, headers=NOW, json={"detail": "bad gateway"}))
    session = opened(fake)
    with pytest.raises(ORSServerError, match="answered 502: bad gateway"):
        session.call_tool("submit", {"total": 3})
    assert len(fake.calls()) == 1
    assert session.ended() == "its ORS session failed (server_error)"
    with pytest.raises(InfrastructureFailedError, match=r"its ORS session failed \(server_error\)"):
        session.reward()


def test_a_stream_cut_after_its_task_id_is_resumed_by_it():
    fake = FakeORS()
    fake.results = [cut(wire.sse_event("task_id", "t" * 32) + b": ping\r\n\r\n")]
    session = opened(fake)
    assert session.call_tool("submit", {"total": 3}) == "submit ran"
    first, resumed = fake.calls()
    assert "task_id" not in first and resumed == {**first, "task_id": "t" * 32}
    assert session.reward() == 1.0
    assert type(session.environment).faults() == {"stream_cut": 1}  # what it was, though ridden out


def test_a_stream_that_cannot_be_resumed_is_a_cut_stream_never_a_reward():
    fake = FakeORS()
    fake.results = [
        cut(wire.sse_event("task_id", "t" * 32)),
        stream(wire.sse_event("error", "unknown task_id")),
    ]
    session = opened(fake)
    with pytest.raises(ORSStreamError, match="no longer holds its result"):
        session.call_tool("submit", {"total": 3})
    with pytest.raises(InfrastructureFailedError):
        session.reward()


def test_a_stream_that_ends_before_its_result_is_resumed_or_named():
    fake = FakeORS()
    fake.results = [stream(wire.sse_event("task_id", "t" * 32))] * 4
    session = opened(fake, retries=3)
    with pytest.raises(ORSStreamError, match="ended the call's stream before its result"):
        session.call_tool("peek", {})
    assert len(fake.calls()) == 4


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (wire.sse_event("task_id", "t") + b"garbage without a colon\r\n\r\n", "no SSE field"),
        (wire.sse_event("task_id", "t") + wire.sse_event("end", "{not json"), "the result is not JSON"),
        (wire.sse_event("task_id", "t") + wire.sse_event("end", '{"ok": true}'), 'no "output" object'),
        (
            wire.sse_event("task_id", "t")
            + wire.sse_event(
                "end", '{"ok": true, "output": {"blocks": [], "reward": "1", "finished": true}}'
            ),
            '"reward" must be a finite number',
        ),
        (wire.sse_event("task_id", "t") + wire.sse_event("surprise", "x"), "no kind this wire has"),
    ],
)
def test_a_malformed_event_or_result_is_a_named_fault_never_a_reward(body, said):
    fake = FakeORS()
    fake.results = [stream(body)]
    session = opened(fake)
    with pytest.raises(ORSMalformedError, match=said):
        session.call_tool("submit", {"total": 3})
    with pytest.raises(InfrastructureFailedError, match="malformed"):
        session.reward()


def test_an_error_event_is_the_tool_raising_on_the_server_and_the_episode_goes_unscored_charged():
    fake = FakeORS()
    fake.results = [stream(wire.sse_event("task_id", "t") + wire.sse_event("error", "KeyError: 'x'"))]
    session = opened(fake)
    with pytest.raises(ORSToolFailedError, match=r"the tool raised on the server .*: KeyError: 'x'"):
        session.call_tool("submit", {"total": 3})
    with pytest.raises(UnscoredEpisodeError) as unscored:
        session.reward()
    assert not unscored.value.infrastructure


def test_a_session_the_server_forgot_is_a_named_fault():
    fake = FakeORS()
    session = opened(fake)
    fake.sessions.clear()
    with pytest.raises(ORSSessionExpiredError, match="the session is gone"):
        session.call_tool("peek", {})
    with pytest.raises(InfrastructureFailedError, match="session_expired"):
        session.reward()


def test_a_ping_that_finds_the_session_gone_fails_the_next_call_before_it_is_sent():
    fake = FakeORS()
    session = opened(fake, ping_interval=0.05)
    fake.sessions.clear()
    wait_for(lambda: "/ping" in fake.paths() and session.environment._record.lost is not None)
    with pytest.raises(ORSSessionExpiredError):
        session.call_tool("peek", {})
    assert fake.calls() == []


def test_pings_keep_a_session_alive_while_in_use():
    fake = FakeORS()
    session = opened(fake, ping_interval=0.05)
    wait_for(lambda: fake.paths().count("/ping") >= 3)
    assert session.call_tool("peek", {}) == "peek ran"
    session.close()


def test_a_call_past_call_timeout_gives_the_session_up():
    fake = FakeORS()

    async def slow(request: httpx.Request) -> httpx.Response:
        import asyncio

        await asyncio.sleep(5)
        return sse(wire.dumps(wire.output_result("late")))

    transport = httpx.MockTransport(
        lambda request: slow(request) if request.url.path == "/orders/call" else fake.handle(request)
    )
    session = LocalSession(
        ORSEnvironment(URL, "orders", transport=transport, call_timeout=0.2).environment_class()()
    )
    session.reset(split="train", index=0)
    with pytest.raises(ORSTimeoutError, match=r"did not finish within call_timeout=0\.2 s"):
        session.call_tool("peek", {})
    assert session.ended() == "its ORS session failed (timeout)"


def test_the_server_saying_the_episode_finished_unseen_is_a_fault_the_reward_is_not_trusted_after():
    fake = FakeORS()
    fake.results = [wire.refusal_result("already finished", "episode_finished")]
    session = opened(fake)
    with pytest.raises(ORSMalformedError, match="no result this session read said so"):
        session.call_tool("peek", {})
    with pytest.raises(InfrastructureFailedError):
        session.reward()


@pytest.mark.parametrize(
    ("fault", "raised"),
    [
        (httpx.Response(400, json={"detail": "Invalid index"}), UnscoredEpisodeError),
        (httpx.Response(500, json={"detail": "ValueError: bad task"}), UnscoredEpisodeError),
        (httpx.ConnectError("refused"), InfrastructureFailedError),
    ],
)
def test_a_reset_the_server_could_not_start_is_an_unscored_episode(fault, raised):
    fake = FakeORS()
    fake.fail("/create", fault)
    session = LocalSession(environment(fake, retries=0).environment_class()())
    with pytest.raises(raised) as failed:
        session.reset(split="train", index=0)
    assert failed.value.infrastructure is (raised is InfrastructureFailedError)


def test_the_trl_adapter_leaves_a_faulted_episode_unscored_with_one_warning(caplog):
    fake = FakeORS()
    env = environment(fake)
    published = env.environment_class().tools.published
    instance = environment_class("orders", published, "x")(LocalSession(env.environment_class()()))
    instance.reset(split="train", index=0)
    fake.sessions.clear()
    with pytest.raises(ORSSessionExpiredError):
        instance.peek()
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        assert instance.get_reward() is None


# The key: sent, never shown.


def test_the_key_is_read_from_its_variable_sent_as_x_api_key_and_shown_nowhere(monkeypatch, caplog):
    monkeypatch.setenv("ORS_TEST_KEY", KEY)
    fake = FakeORS()
    fake.fail("/orders/call", httpx.Response(400, json={"detail": f"key {KEY} may not do that"}))
    fake.results = [
        wire.refusal_result(f"bad input for {KEY}", "input_validation"),
        stream(wire.sse_event("task_id", "t") + wire.sse_event("error", f"leaked {KEY}")),
    ]
    source = environment(fake, api_key_env="ORS_TEST_KEY")
    seen: list[str] = [repr(source), repr(source.environment_class().runtime.key)]
    with caplog.at_level(logging.DEBUG):
        session = LocalSession(source.environment_class()())
        for episode in range(
            2
        ):  # a refused request ends the first; the second meets a refusal, then an error
            session.reset(split="train", index=episode)
            for _ in range(1 + episode):
                with pytest.raises(Exception) as raised:
                    session.call_tool("peek", {})
                seen.append(f"{type(raised.value).__name__}: {raised.value}")
            with pytest.raises(UnscoredEpisodeError) as unscored:
                session.reward()
            seen.append(str(unscored.value))
    assert all(request.headers["x-api-key"] == KEY for request in fake.requests)
    assert [said.split(" ")[0] for said in seen[2:]] == [
        "ORSRefusedError:",
        "orders",  # could not score the episode: its ORS session failed (refused)
        "ToolArgumentError:",
        "ORSToolFailedError:",
        "orders",
    ]
    assert all("[key]" in said for said in seen[2:]), seen
    fake.requests.clear()  # the fake's own record of what it was sent (the key in its headers) goes
    everything = "\n".join(seen) + caplog.text + repr(pickle.dumps(source))  # the description never holds it
    assert KEY not in everything
    assert "ORS_TEST_KEY" in repr(source.environment_class().runtime.key)


def test_a_key_the_server_echoes_in_a_prompt_or_a_result_never_reaches_the_model(monkeypatch):
    monkeypatch.setenv("ORS_TEST_KEY", KEY)
    fake = FakeORS()
    fake.fail("/orders/prompt", httpx.Response(200, json=[wire.text_block(f"Your key is {KEY}.")]))
    fake.results = [wire.output_result(f"signed with {KEY}; twice: {KEY}")]
    session = LocalSession(environment(fake, api_key_env="ORS_TEST_KEY").environment_class()())
    opening = session.reset(split="train", index=0)
    said = session.call_tool("peek", {})
    assert KEY not in f"{opening} {said}"
    assert "Your key is [key]." in str(opening) and said == "signed with [key]; twice: [key]"


def test_a_key_variable_that_is_not_set_is_named_and_a_key_given_as_the_variable_refused(monkeypatch):
    monkeypatch.delenv("ORS_UNSET", raising=False)
    with pytest.raises(ValueError, match="names the variable 'ORS_UNSET', which is not set"):
        environment(FakeORS(), api_key_env="ORS_UNSET").environment_class()
    with pytest.raises(ValueError, match="the NAME of an environment variable"):
        ORSEnvironment(URL, api_key_env="sk-ors-1234")


def test_a_refused_key_says_how_to_give_one():
    fake = FakeORS()
    fake.fail("/create_session", httpx.Response(401, json={"detail": "missing key"}))
    with pytest.raises(
        ORSUnauthorizedError, match="it wants a key: name the variable that holds it with api_key_env="
    ):
        environment(fake).environment_class()


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"base_url": "ftp://x"}, "http:// or https:// URL"),
        ({"base_url": "http://user:pw@x"}, "no query, fragment or credentials"),
        ({"env_name": "a/b"}, "one path segment"),
        ({"timeout": 0}, "timeout must be a positive number"),
        ({"retries": -1}, "retries must be a whole number"),
        ({"tools": "submit"}, "not one string"),
    ],
)
def test_a_malformed_setting_is_refused_saying_how_to_fix_it(setting, said):
    with pytest.raises(ValueError, match=said):
        ORSEnvironment(**{"base_url": URL, **setting})


def test_the_description_pickles_without_its_class_or_client():
    source = environment(FakeORS())
    source.environment_class()
    travelled = pickle.loads(pickle.dumps(source))
    assert travelled._built == {} and travelled.env_name == "orders"


def wait_for(condition: Any, seconds: float = 5.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.01)
