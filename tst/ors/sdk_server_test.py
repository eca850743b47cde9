"""`AgentEnv.ors` against the openreward SDK's own server, on loopback: an environment written with the SDK's tools
and pydantic inputs (testbed/ors_orders.py: a nested array of objects, an enum, bounds, an optional list of objects,
a tool without arguments, a reward on a call that does not finish, a tool that raises)."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from agent_env import (
    AgentEnv,
    EpisodeEndedError,
    InfrastructureFailedError,
    ToolArgumentError,
    UnscoredEpisodeError,
)
from agent_env.errors import SplitNotFoundError
from agent_env.ors import ORSEnvironment, ORSToolFailedError, ORSUnavailableError
from agent_env.ors._wire import SESSION_HEADER
from testbed import ors_venv

BUY_3 = {
    "orders": [
        {"side": "buy", "qty": 3, "fills": [{"venue": "lit", "share": 0.4}, {"venue": "dark", "share": 0.6}]}
    ]
}


@pytest.fixture(scope="module")
def url(ors_tier):
    return ors_tier.sdk.url()


@pytest.fixture(scope="module")
def env(url):
    environment = AgentEnv.ors(url, "orders", chat_template="qwen3")
    yield environment
    environment.close()


def listed(url: str) -> dict:
    """What the SDK server lists, raw."""
    return httpx.get(f"{url}/orders/tools", timeout=10).json()


def test_each_tool_reaches_the_model_with_its_full_schema_refs_inlined_and_titles_pruned(env, url):
    tools = {tool["name"]: tool for tool in env.tools()}
    assert list(tools) == ["explode", "peek", "place_orders", "submit", "end_turn"]
    orders = tools["place_orders"]["inputSchema"]["properties"]["orders"]
    text = json.dumps(tools["place_orders"])
    assert "$ref" not in text and "$defs" not in text and '"title"' not in text
    order = orders["items"]
    assert orders["minItems"] == 1 and orders["maxItems"] == 5 and order["required"] == ["side", "qty"]
    assert order["properties"]["side"] == {"type": "string", "enum": ["buy", "sell"]}
    assert order["properties"]["qty"]["minimum"] == 1 and order["properties"]["qty"]["maximum"] == 100
    fill = order["properties"]["fills"]["anyOf"][0][
        "items"
    ]  # an optional list of objects, nested in the array
    assert fill["properties"]["venue"] == {"type": "string", "enum": ["lit", "dark"]}
    assert fill["properties"]["share"]["maximum"] == 1
    assert tools["peek"]["inputSchema"] == {"type": "object", "properties": {}}  # listed as null
    assert listed(url)["tools"][1]["input_schema"] is None
    assert tools["submit"]["description"] == "Submit the book's net quantity; this ends the episode."


def test_the_render_check_passes_and_the_factory_shows_the_published_schemas(env):
    instance = env.factory()  # the render check, under Qwen3's template
    for published in env.tools():
        assert getattr(instance, published["name"])["function"]["parameters"] == published["inputSchema"]


def test_the_splits_tasks_become_rows_that_name_their_task(env):
    rows = env.provider.dataset_rows("train")
    assert [row["task_spec"] for row in rows] == [
        {"id": f"train-{i}", "target": t} for i, t in enumerate([3, 5, 2, 4])
    ]
    assert rows[0]["prompt"] == [{"role": "user", "content": ""}] and rows[2]["split"] == "train"
    assert len(env.dataset("test")) == 2
    with pytest.raises(SplitNotFoundError) as missing:
        env.provider.dataset_rows("validation")
    assert missing.value.splits == ("train", "test") and "Invalid split" in str(missing.value)


def test_an_episode_reads_its_prompt_from_its_session_and_scores_what_its_results_carried(env):
    with env.open() as session:
        observation = session.reset(**env.provider.dataset_rows("train")[0])
        assert observation == "Place orders whose net quantity is 3, then submit it."
        penalised = {"orders": [{"side": "buy", "qty": 3, "fills": [{"venue": "lit", "share": 0.5}]}]}
        assert session.call_tool("place_orders", penalised) == "fills must share the whole order"
        assert session.call_tool("place_orders", BUY_3) == "1 orders in the book"
        assert session.call_tool("peek", {}) == "buy 3"
        assert session.ended() is None
        assert session.call_tool("submit", {"total": 3}) == "right"
        assert session.ended() == "a tool's result said finished: true"
        with pytest.raises(EpisodeEndedError):
            session.call_tool("peek", {})
        score = session.score()
    # ORS's rewards are accumulated over an episode: the finishing 1.0 and the -0.25 on the way
    assert score.reward == 0.75
    assert score.breakdown == {"finished": True, "rewards": [-0.25, None, None, 1.0]}


def test_a_call_that_breaks_the_schema_is_refused_here_and_never_sent(env):
    with env.open() as session:
        session.reset(split="train", index=1)
        with pytest.raises(ToolArgumentError) as refused:
            session.call_tool(
                "place_orders", {"orders": [{"side": "hold", "qty": 0, "fills": [{"venue": "x"}]}]}
            )
        assert session.call_tool("peek", {}) == "empty"  # nothing reached the server's book
    said = str(refused.value)
    assert said.startswith("Invalid arguments for tool 'place_orders'; fix these and call it again:")
    assert '- orders[0].side: expected one of "buy", "sell"; got "hold"' in said
    assert "- orders[0].qty: 0 is less than the minimum of 1" in said
    assert "Tool input validation error" not in said  # the SDK server's pydantic words: it never saw the call


def test_an_episode_the_model_never_finished_scores_what_was_carried_and_zero_without_any(env):
    with env.open() as session:
        session.reset(split="train", index=0)
        session.call_tool("place_orders", BUY_3)
        assert session.reward() == 0.0  # agent_env's own end_turn ended it: no result carried a reward
        assert session.ended() is not None


def test_a_tool_that_raises_on_the_server_is_a_named_fault_and_the_episode_goes_unscored(env):
    with env.open() as session:
        session.reset(split="test", index=0)
        with pytest.raises(ORSToolFailedError, match="exploded: on purpose"):
            session.call_tool("explode", {"why": "on purpose"})
        assert session.ended() == "its ORS session failed (tool_failed)"
        with pytest.raises(UnscoredEpisodeError) as unscored:
            session.reward()
    assert not isinstance(
        unscored.value, InfrastructureFailedError
    )  # the environment's own code: scored 0 by TRL
    assert env.provider.environment.faults()["tool_failed"] >= 1


def test_each_episode_is_a_session_of_its_own_deleted_on_close(env, url):
    sids = []
    for index in range(2):
        with env.open() as session:
            session.reset(split="train", index=index)
            sids.append(session.environment._record.sid)
            assert ping(url, sids[-1]) == 200  # alive while in use
    assert sids[0] != sids[1]
    deadline = time.monotonic() + 10
    while any(ping(url, sid) != 404 for sid in sids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [ping(url, sid) for sid in sids] == [404, 404]


def test_a_session_is_kept_alive_by_pings_while_in_use(url):
    env = AgentEnv.ors(url, "orders", ping_interval=0.2, name="pinged")
    with env.open() as session:
        session.reset(split="train", index=0)
        time.sleep(1.0)
        assert session.environment.runtime.client.faults == {}
        assert session.call_tool("peek", {}) == "empty"


def test_a_server_that_goes_down_mid_episode_is_a_named_fault_never_a_reward(ors_tier, tmp_path):
    server = ors_venv.orders(ors_tier.python, tmp_path / "sdk.log")
    try:
        env = AgentEnv.ors(server.url(), retries=1, name="doomed")
        with env.open() as session:
            session.reset(split="train", index=0)
            session.call_tool("place_orders", BUY_3)
            server.stop()
            with pytest.raises(ORSUnavailableError, match="cannot be reached"):
                session.call_tool("submit", {"total": 3})
            assert session.ended() == "its ORS session failed (unavailable)"
            with pytest.raises(InfrastructureFailedError, match=r"its ORS session failed \(unavailable\)"):
                session.reward()
        assert env.provider.environment.faults()["unavailable"] >= 2  # the retry was counted too
    finally:
        server.stop()


def test_the_description_travels_and_every_process_asks_the_server_again(url):
    import pickle

    source = ORSEnvironment(url, "orders")
    source.environment_class()
    travelled = pickle.loads(pickle.dumps(source))
    assert (
        travelled._built == {}
        and travelled.environment_class().tools.fingerprint == source.environment_class().tools.fingerprint
    )


def ping(url: str, sid: str) -> int:
    return httpx.post(f"{url}/ping", headers={SESSION_HEADER: sid}, timeout=10).status_code
