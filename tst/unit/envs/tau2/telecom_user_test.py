"""τ²-bench's telecom domain with a user who acts: the scripted user makes the task's user-side reference calls when
the agent asks for them, a model plays the user through tool calls on its own endpoint (validated against the
published schemas), the agent reads only the user's words, and solo mode gives the agent both tool sets instead."""

from __future__ import annotations

from typing import Any

import pytest

from agent_env import ToolError
from agent_env.envs import load_environment
from agent_env.envs.tau2.telecom import Tau2Telecom
from agent_env.envs.tau2.telecom_device import UserPhone
from agent_env.errors import UserEndpointError
from agent_env.llm import Endpoint
from agent_env.session import LocalSession
from agent_env.users import HOLD, USER_CHANNEL, LLMUser
from testbed.scripted import Answer, call, completion, scripted

ABROAD = "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]"

ASKS = {
    "toggle_airplane_mode": "Please switch airplane mode off on your phone.",
    "toggle_data": "Could you turn your mobile data back on?",
    "toggle_roaming": "Please turn on data roaming in your phone's settings.",
    "toggle_data_saver_mode": "Please turn off Data Saver.",
    "toggle_wifi_calling": "Could you turn off Wi-Fi Calling?",
    "set_network_mode_preference": "Please set your preferred network mode to 4G/5G.",
    "reseat_sim_card": "Please take out your SIM card and put it back in.",
    "reset_apn_settings": "Please reset your APN settings to their defaults.",
    "reboot_device": "Now please restart your phone.",
    "disconnect_vpn": "Please disconnect your VPN.",
    "make_payment": "I sent you a payment request; please pay it.",
    "grant_app_permission": "Please allow the {app_name} app the {permission} permission.",
}
"""How an agent might ask for each of the user's reference calls, in its own words."""


@pytest.fixture(scope="module")
def env() -> Tau2Telecom:
    return Tau2Telecom()


def play_by_asking(env: Tau2Telecom, task_id: str) -> LocalSession:
    """The reference played as an agent would: its own calls made, the user's asked for one message each; then it
    talks until the user ends the conversation."""
    session = LocalSession(env)
    session.reset(task_id=task_id)
    for action in env.data.task(task_id).evaluation_criteria.actions or []:
        if action.requestor == "user":
            session.call_tool(USER_CHANNEL, {"message": ASKS[action.name].format(**action.arguments)})
        elif session.ended() is None:
            session.call_tool(action.name, action.arguments)
    for _ in range(5):
        if session.ended() is not None:
            break
        session.call_tool(USER_CHANNEL, {"message": "Is everything working now?"})
    return session


def test_the_scripted_user_makes_its_calls_when_asked_and_the_base_split_scores_1(env):
    for task in env.data.split("base"):
        session = play_by_asking(env, task.id)
        score = session.score()
        assert score.reward == 1.0, (task.id, score.breakdown)
        assert session.ended() is not None


def test_the_agent_reads_the_users_words_and_the_episode_keeps_the_users_calls(env):
    session = LocalSession(env)
    assert session.reset(task_id=ABROAD).startswith(
        "My mobile data is not working properly."
    )  # no row: said now
    assert session.call_tool(USER_CHANNEL, {"message": "Let me check your line."}) == HOLD
    reply = session.call_tool(USER_CHANNEL, {"message": ASKS["toggle_roaming"]})
    assert reply == (
        "Done. This is what it shows now:\n\nData Roaming is now ON.\n"
        "Status Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"
    )
    assert "tool_calls" not in reply and env.user_db.device["user"].roaming_enabled
    # Steps as upstream's orchestrator counts them: the opening 1; each agent message 1; the user's message of
    # calls 1 and the environment's answer 1; its words 1.
    assert env.steps == 1 + 2 + (1 + 2 + 1)
    [made] = [call for call in env.calls if call.requestor == "user"]
    assert (made.name, made.error) == ("toggle_roaming", False)
    assert env.chat.messages[-1].tool_messages[0]["tool_calls"][0]["function"]["name"] == "toggle_roaming"


def test_rows_open_with_the_customers_words(env):
    [row] = [r for r in env.dataset_rows("small") if r["task_id"] == ABROAD]
    opening = row["prompt"][-1]["content"]
    assert opening.startswith("My mobile data is not working properly.") and "555-123-2002" in opening


def test_a_model_plays_the_user_with_its_own_tools_each_call_validated_as_the_agents(env):
    def user_model(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        messages = body["messages"]
        if messages[-1]["role"] == "user" and len(messages) <= 3:  # its opening
            return Answer(completion("My mobile data does not work abroad."))
        tool_results = [m for m in messages if m["role"] == "tool"]
        if not tool_results:  # a mode its schema does not have, and a real call
            bad = call("set_network_mode_preference", {"mode": "6g"}, "u1")
            return Answer(completion(tool_calls=[bad, call("toggle_roaming", {}, "u2")]))
        return Answer(completion("I turned data roaming on; the bar shows 5G."))

    with scripted(user_model) as server:
        user = LLMUser(Endpoint(server.url, backoff=0.001, timeout=5.0))
        model_env = Tau2Telecom(user=user)
        session = LocalSession(model_env)
        assert session.reset(task_id=ABROAD) == "My mobile data does not work abroad."
        reply = session.call_tool(USER_CHANNEL, {"message": "Please turn on data roaming."})
        strict = LocalSession(Tau2Telecom(user=user, max_errors=1))  # the user's failed call is an error too
        strict.reset(task_id=ABROAD)
        strict.call_tool(USER_CHANNEL, {"message": "Please turn on data roaming."})
        assert strict.ended() is not None and strict.environment.termination == "too_many_errors"
    assert reply == "I turned data roaming on; the bar shows 5G."  # only its words reach the agent
    offered = {tool["function"]["name"] for tool in server.requests[1][0]["tools"]}
    assert offered == set(UserPhone.tools) and len(offered) == 30
    results = [m for m in server.requests[2][0]["messages"] if m["role"] == "tool"]
    assert results[0]["content"].startswith("Error: Invalid arguments for tool 'set_network_mode_preference'")
    assert (
        '- mode: expected one of "4g_5g_preferred", "4g_only", "3g_only", "2g_only"; got "6g"'
        in results[0]["content"]
    )
    assert results[1]["content"].startswith("Data Roaming is now ON.")
    assert model_env.user_db.device["user"].roaming_enabled and model_env.errors == 1
    assert model_env.steps == 1 + 1 + 2 + 1  # its two calls one message (1) and one answer (1)
    assert model_env.user_db.device["user"].network_mode_preference == "4g_5g_preferred"
    assert session.score().reward == 1.0


# Solo mode.


@pytest.fixture(scope="module")
def solo() -> Any:
    return load_environment("tau2-telecom-solo")()


def test_solo_mode_gives_the_agent_both_tool_sets_and_writing_to_a_user_ends_it_as_upstreams_agent_error(
    solo,
):
    names = [tool["name"] for tool in type(solo).tools.published]
    assert USER_CHANNEL not in names and len(names) == 13 + 30 + 1  # the carrier's, the phone's, end_turn
    assert type(solo).tools["toggle_roaming"].input_schema == UserPhone.tools["toggle_roaming"].input_schema
    session = LocalSession(solo)
    assert session.reset(task_id=ABROAD) is None  # the ticket is in the row's system prompt; no user speaks
    with pytest.raises(ToolError, match="there is no user in solo mode"):
        session.call_tool(USER_CHANNEL, {"message": "hello?"})  # as eval sends a reply of text alone
    assert session.ended() is not None and solo.termination == "agent_error"
    assert session.score().reward == 0.0


def test_a_solo_episode_is_the_agents_calls_on_both_sides_counted_as_upstreams_solo_orchestrator_counts(solo):
    session = LocalSession(solo)
    session.reset(task_id=ABROAD)
    assert solo.chat is None
    said = session.call_tool("toggle_roaming", {})
    assert said.startswith("Data Roaming is now ON.") and solo.calls[-1].requestor == "assistant"
    assert solo.user_db.device["user"].roaming_enabled  # the phone's, run on the user's side
    assert solo.steps == 1  # the first message is made at the start, uncounted; its calls' answer is step 1
    session.call_tool("end_turn", {})
    score = session.score()
    assert score.reward == 1.0 and score.breakdown["ended"] == "the agent ended the episode"
    assert score.breakdown["user"]["kind"] == "none" and "user_note" not in score.breakdown
    session.reset(task_id=ABROAD)
    session.call_tool("end_turn", {})
    assert session.score().reward == 0.0


def test_a_user_that_checks_its_phone_many_times_in_one_turn_is_bounded_by_the_episodes_steps_as_upstreams():
    """tau2-bench's user makes as many calls as it likes before it writes (one action a turn, as its guidelines
    say), bounded only by the episode's max_steps; six checks in a row are an ordinary turn, not a failed user."""

    def user_model(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        messages = body["messages"]
        if messages[-1]["role"] == "user" and len(messages) <= 3:  # its opening
            return Answer(completion("My mobile data does not work abroad."))
        checks = sum(1 for m in messages if m["role"] == "tool")
        if checks < 6:
            return Answer(completion(tool_calls=[call("check_status_bar", {}, f"u{checks}")]))
        return Answer(completion("I checked six times; it still shows no data."))

    with scripted(user_model) as server:
        user = LLMUser(Endpoint(server.url, backoff=0.001, timeout=5.0))
        session = LocalSession(Tau2Telecom(user=user))
        session.reset(task_id=ABROAD)
        reply = session.call_tool(USER_CHANNEL, {"message": "Please check your status bar."})
        short = LocalSession(Tau2Telecom(user=user, max_steps=10))  # past its steps: upstream's max_steps, 0
        short.reset(task_id=ABROAD)
        short.call_tool(USER_CHANNEL, {"message": "Please check your status bar."})
        guarded = LocalSession(Tau2Telecom(user=LLMUser(user.endpoint, max_tool_rounds=3)))
        guarded.reset(task_id=ABROAD)
        with pytest.raises(
            UserEndpointError, match="kept calling its own tools"
        ):  # a guard set below its steps
            guarded.call_tool(USER_CHANNEL, {"message": "Please check your status bar."})
    assert reply == "I checked six times; it still shows no data."
    assert session.ended() is None and session.environment.steps == 1 + 1 + 2 * 6 + 1
    assert short.environment.termination == "max_steps" and short.score().reward == 0.0


def test_a_model_playing_the_user_may_check_its_phone_before_its_opening_as_upstreams_user_may():
    """tau2-bench's user answers the agent's greeting as any message, offered its tools (orchestrator.py, lines
    626-636, then `step`): it may look at its phone before it says what is wrong, and those calls are the episode's."""

    def user_model(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        messages = body["messages"]
        if not any(m["role"] == "tool" for m in messages):
            return Answer(completion(tool_calls=[call("check_status_bar", {}, "u0")]))
        if messages[-1]["role"] == "tool":  # its opening, grounded in what it saw
            return Answer(completion("My phone shows no signal at all."))
        return Answer(completion("Okay."))

    with scripted(user_model) as server:
        env = Tau2Telecom(user=LLMUser(Endpoint(server.url, backoff=0.001, timeout=5.0)))
        session = LocalSession(env)
        opening = session.reset(task_id=ABROAD)
        session.call_tool(USER_CHANNEL, {"message": "Let me look into it."})
    assert opening == "My phone shows no signal at all."
    assert len(server.requests[0][0]["tools"]) == 30  # offered its tools at the greeting, as upstream's is
    assert [(c.name, c.requestor) for c in env.calls if c.requestor == "user"][:1] == [
        ("check_status_bar", "user")
    ]
    later = server.requests[2][0][
        "messages"
    ]  # its next turn still holds the calls it made before its opening
    assert any(m.get("tool_calls") for m in later) and any(m["role"] == "tool" for m in later)
    assert (
        env.steps == 1 + 2 + 1 + 1
    )  # the greeting's answer: its calls (a message and the answer) and its words


def test_a_user_call_whose_arguments_are_no_json_object_runs_nothing_and_fails_as_any_bad_call():
    """Arguments that are not JSON, or JSON but no object, are the user model's mistake: the tool does not run (no
    toggle made with no arguments), and the call is a failed one, recorded and counted toward max_errors."""

    def user_model(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        messages = body["messages"]
        if messages[-1]["role"] == "user" and len(messages) <= 3:  # its opening
            return Answer(completion("My mobile data does not work abroad."))
        if messages[-1]["role"] == "user":
            calls = [call("toggle_roaming", "[]", "u1"), call("toggle_roaming", '{"on": tru', "u2")]
            return Answer(completion(tool_calls=calls))
        return Answer(completion("Something went wrong on my phone."))

    with scripted(user_model) as server:
        env = Tau2Telecom(user=LLMUser(Endpoint(server.url, backoff=0.001, timeout=5.0)))
        session = LocalSession(env)
        session.reset(task_id=ABROAD)
        roaming = env.user_db.device["user"].roaming_enabled
        session.call_tool(USER_CHANNEL, {"message": "Please turn on data roaming."})
    results = [m["content"] for m in server.requests[2][0]["messages"] if m["role"] == "tool"]
    assert all(result.startswith("Error: ") for result in results) and len(results) == 2
    assert env.user_db.device["user"].roaming_enabled == roaming  # neither call ran the tool
    assert env.errors == 2 and [c.error for c in env.calls if c.requestor == "user"] == [True, True]
