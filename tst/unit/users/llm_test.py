"""`agent_env/users/_llm.py`: a user played by a model behind an OpenAI-compatible endpoint (the scripted server of
testbed/scripted.py, on a real socket): what it is told, how its endpoint's faults are counted, and that a
fault it cannot get past ends the episode unscored."""

from __future__ import annotations

import json
import logging
import pickle
import socket
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.errors import InfrastructureFailedError, UserEndpointError
from agent_env.llm import Endpoint, Sampling
from agent_env.training.trl import environment_class
from agent_env.users import GREETING, USER_CHANNEL, Chat, ChatMessage, LLMUser, Scenario
from testbed.scripted import Answer, call, completion, scripted
from tst.unit.users.channel_test import Helpdesk

SCENARIO = Scenario("You want to cancel reservation EHGLP3.", persona="Terse and polite.")
FAST = {"backoff": 0.001, "max_backoff": 0.01, "timeout": 5.0}


def user_at(url: str, **settings: Any) -> LLMUser:
    return LLMUser(Endpoint(url, **{**FAST, **settings}))


def test_the_opening_answers_the_greeting_told_the_scenario_at_temperature_zero():
    with scripted(lambda body, headers: Answer(completion("Hi, I need to cancel a booking."))) as server:
        assert user_at(server.url).opening(SCENARIO) == "Hi, I need to cancel a booking."
    body = server.requests[0][0]
    system, *rest = body["messages"]
    assert system["role"] == "system"
    assert "<scenario>\nYou want to cancel reservation EHGLP3.\n</scenario>" in system["content"]
    assert "<persona>\nTerse and polite.\n</persona>" in system["content"]
    assert "###STOP###" in system["content"] and "###TRANSFER###" in system["content"]
    assert rest == [{"role": "user", "content": GREETING}]
    assert body["model"] == "scripted" and body["temperature"] == 0.0
    assert "tools" not in body  # a user without tools sends none: vLLM refuses `"tools": []` (HTTP 400)


def test_the_user_reads_the_agent_as_its_interlocutor_and_its_own_words_as_its_own():
    chat = Chat(
        SCENARIO,
        [
            ChatMessage("agent", GREETING),
            ChatMessage("user", "Cancel EHGLP3."),
            ChatMessage("agent", "Your user id?"),
        ],
    )
    with scripted(lambda body, headers: Answer(completion("emma_kim_9957"))) as server:
        answer = user_at(server.url, model="gpt-user").reply(chat)
    assert answer == ChatMessage("user", "emma_kim_9957")
    body = server.requests[0][0]
    assert body["model"] == "gpt-user"
    assert [(m["role"], m["content"]) for m in body["messages"][1:]] == [
        ("user", GREETING),
        ("assistant", "Cancel EHGLP3."),
        ("user", "Your user id?"),
    ]


def test_a_rate_limit_is_retried_and_counted_in_the_chat():
    answers = iter([Answer({"error": {"message": "slow down"}}, status=429), Answer(completion("ok"))])
    with scripted(lambda body, headers: next(answers)) as server:
        chat = Chat(SCENARIO, [ChatMessage("agent", "hello")])
        assert user_at(server.url).reply(chat).text == "ok"
    assert chat.faults == {"rate_limited": 1} and chat.failure is None


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("fault", "answer", "counted", "said"),
    [
        ("down", None, {"connection": 4, "retries_exhausted": 1}, "gave up after 4 attempts"),
        ("empty", Answer(completion("   ")), {"empty_answer": 1}, "it answered with no text"),
        (
            "refused",
            Answer({"error": {"message": "no such model"}}, status=404),
            {"request_refused": 1},
            "refused",
        ),
        (
            "timeout",
            Answer(completion("late"), delay=2.0),
            {"timeout": 2, "retries_exhausted": 1},
            "no answer",
        ),
    ],
)
def test_a_fault_past_the_retries_is_a_user_endpoint_error_counted_and_kept(fault, answer, counted, said):
    chat = Chat(SCENARIO, [ChatMessage("agent", "hello")])
    if answer is None:
        user = user_at(f"http://127.0.0.1:{unused_port()}/v1", model="m")
        with pytest.raises(UserEndpointError, match=said):
            user.reply(chat)
    else:
        with scripted(lambda body, headers: answer) as server:
            user = user_at(server.url, timeout=0.5, max_retries=1 if fault == "timeout" else 3)
            with pytest.raises(UserEndpointError, match=said):
                user.reply(chat)
    assert chat.faults == counted
    assert chat.failure is not None and chat.failure.startswith("the simulated user's endpoint")


def test_a_user_with_tools_calls_them_and_keeps_the_calls_with_its_message():
    def script(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if body["messages"][-1]["role"] == "tool":
            return Answer(completion("I see one notification about task_1."))
        return Answer(completion(tool_calls=[call("check_notifications", {}, "u1")]))

    ran: list[tuple[str, Any]] = []

    def run_tool(name: str, arguments: Any) -> str:
        ran.append((name, arguments))
        return '[{"notification_id": "notif_1"}]'

    tools = [
        {
            "name": "check_notifications",
            "description": "Inbox.",
            "inputSchema": {"type": "object", "properties": {}},
        }
    ]
    chat = Chat(SCENARIO, [ChatMessage("agent", "Check your inbox?")])
    with scripted(script) as server:
        answer = user_at(server.url).reply(chat, tools, run_tool)
    assert ran == [("check_notifications", {})]
    assert answer.text == "I see one notification about task_1."
    assert [message["role"] for message in answer.tool_messages] == ["assistant", "tool"]
    first = server.requests[0][0]
    assert first["tools"][0]["function"]["name"] == "check_notifications"
    assert "You have tools of your own" in first["messages"][0]["content"]


def test_it_travels_as_its_settings_and_never_shows_a_key(monkeypatch):
    monkeypatch.setenv("USER_KEY", "sk-secret")
    user = LLMUser(Endpoint("http://127.0.0.1:9/v1", "m", "USER_KEY"), Sampling(temperature=0.3))
    copy = pickle.loads(pickle.dumps(user))
    assert copy == user and copy.sampling.temperature == 0.3
    assert "sk-secret" not in repr(user) + json.dumps(user.describe())
    assert "$USER_KEY" in repr(user)


def test_settings_make_a_user_and_an_unknown_one_is_named():
    user = LLMUser.from_settings(
        {"base_url": "http://h/v1", "model": "m", "api_key_env": "K", "temperature": 0.5}
    )
    assert (user.endpoint.base_url, user.endpoint.model, user.endpoint.api_key_env) == (
        "http://h/v1",
        "m",
        "K",
    )
    assert user.sampling.temperature == 0.5
    with pytest.raises(ValueError, match=r"unknown user setting 'url'; a user takes .*base_url"):
        LLMUser.from_settings({"url": "http://h/v1"})


def test_settings_without_a_base_url_are_refused_rather_than_asking_the_agents_default_url():
    with pytest.raises(ValueError) as refused:
        LLMUser.from_settings({"model": "gpt-4.1"})
    assert str(refused.value).startswith(
        "the user's settings name no base_url (given: model): say where its model"
    )
    assert "--user-base-url, or base_url in -c user='{...}'" in str(refused.value)


def test_the_openings_faults_are_the_episodes_counted_in_its_chat():
    answers = iter([Answer({"error": {"message": "slow down"}}, status=429), Answer(completion("Hi, help."))])
    with scripted(lambda body, headers: next(answers, Answer(completion("ok")))) as server:
        env = AgentEnv.local(Helpdesk, user={"base_url": server.url, "model": "m", **FAST})
        with env.open() as session:
            assert session.reset() == "Hi, help."
            session.call_tool(USER_CHANNEL, {"message": "Restart it?"})
            chat = session.environment.chat
    assert chat.faults == {"rate_limited": 1}
    assert chat.reported_faults() == {"user_rate_limited": 1}


def test_a_user_whose_model_cannot_be_named_ends_the_episode_unscored_not_scored_zero():
    # No model named and its server down: the user cannot be asked, which is the user's failure, not the agent's.
    env = AgentEnv.local("tau2-mock", user={"base_url": f"http://127.0.0.1:{unused_port()}/v1", **FAST})
    with env.open() as session:
        session.reset(task_id="create_task_1", prompt=[{"role": "user", "content": "Create a task for me."}])
        with pytest.raises(UserEndpointError) as failed:
            session.call_tool(USER_CHANNEL, {"message": "Which title?"})
        assert "cannot reach" in str(failed.value) and "--user-base-url" in str(failed.value)
        assert failed.value.faults == {"user_model_list": 1}
        assert session.ended() is not None and "the simulated user's endpoint" in session.ended()
        assert session.environment.termination == "user_error"
        with pytest.raises(InfrastructureFailedError, match="the simulated user's endpoint") as refused:
            session.score()
    assert isinstance(refused.value.cause, UserEndpointError)


def test_an_endpoint_that_fails_ends_the_episode_which_trl_then_leaves_unscored(caplog):
    with scripted(lambda body, headers: Answer({"error": {"message": "boom"}}, status=400)) as server:
        env = AgentEnv.local(Helpdesk, user={"base_url": server.url, "model": "m", **FAST})
        session = env.open()
        session.reset(opening="My printer is broken.")
        with pytest.raises(UserEndpointError, match="refused the request"):
            session.call_tool(USER_CHANNEL, {"message": "Restart it?"})
        assert session.ended() is not None and "endpoint" in session.ended()
        with pytest.raises(InfrastructureFailedError, match="the simulated user's endpoint") as refused:
            session.reward()
        assert isinstance(refused.value.cause, UserEndpointError)
        trl_class = environment_class("Helpdesk", Helpdesk.tools.published, "t")
        trl_env = trl_class(env.open())
        trl_env.reset(opening="My printer is broken.")
        with pytest.raises(Exception):  # noqa: B017  TRL catches what a tool raises and tells the model
            getattr(trl_env, USER_CHANNEL)(message="Restart it?")
        with caplog.at_level(logging.WARNING, logger="agent_env"):
            assert trl_env.get_reward() is None
    assert "TRL gets None (unscorable" in caplog.text and "simulated user" in caplog.text


def test_every_episodes_user_shares_one_client_per_endpoint_and_key(monkeypatch):
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m", "SHARED_USER_KEY")
    monkeypatch.setenv("SHARED_USER_KEY", "sk-one")
    first, second = LLMUser(endpoint), pickle.loads(pickle.dumps(LLMUser(endpoint)))
    assert first._ensure_client() is second._ensure_client()  # no TLS context and connection per episode
    assert LLMUser(Endpoint("http://127.0.0.1:9/v1", "other"))._ensure_client() is not first._ensure_client()
    monkeypatch.setenv("SHARED_USER_KEY", "sk-two")  # a new key is a new client, never the old key's
    assert LLMUser(endpoint)._ensure_client() is not first._ensure_client()


def test_a_prompt_the_environment_gives_is_told_whole_instead_of_this_rooms_guidelines():
    told = Scenario(
        "You want a refund.", persona="Brisk.", prompt="The benchmark's own guidelines.\n\n<scenario>x"
    )
    with scripted(lambda body, headers: Answer(completion("Hello."))) as server:
        user_at(server.url).opening(told)
    assert server.requests[0][0]["messages"][0] == {
        "role": "system",
        "content": "The benchmark's own guidelines.\n\n<scenario>x",
    }


def test_the_users_key_is_cut_from_what_its_model_writes_before_anyone_reads_it(monkeypatch):
    monkeypatch.setenv("USER_KEY", "sk-user-0123456789")
    echo = "My key is sk-user-0123456789, and I want a refund."
    with scripted(lambda body, headers: Answer(completion(echo))) as server:
        opening = LLMUser(Endpoint(server.url, api_key_env="USER_KEY", **FAST)).opening(SCENARIO)
    assert "sk-user-0123456789" not in opening and opening.endswith(", and I want a refund.")
    assert server.requests[0][1]["authorization"] == "Bearer sk-user-0123456789"  # sent, never shown
