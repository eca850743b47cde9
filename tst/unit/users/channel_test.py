"""`agent_env/users/_channel.py`: any environment gets a simulated user by mixing in `UserChat`; the agent reaches
it through `message_user`, and the user's ending marker ends the episode wherever the session runs."""

from __future__ import annotations

from typing import Any

import pytest

from agent_env import AgentEnv, Environment, EpisodeEndedError, ToolArgumentError
from agent_env.users import ASIDE, USER_CHANNEL, Scenario, ScriptedUser, UserChat, user_from


class Helpdesk(UserChat, Environment):
    """The smallest environment with a user: it counts what it was told."""

    def __init__(self, user: Any = None) -> None:
        self.user = user_from(user, default=ScriptedUser(["My printer is broken.", "Yes, restart it."]))

    def reset(self, **row: Any) -> str | None:
        return self.start_chat(Scenario("Your printer is broken."), row.get("opening"))

    def reward(self) -> float:
        return float(len(self.chat.messages)) if self.chat else 0.0


def test_the_channel_is_a_published_tool_whose_schema_refuses_an_empty_message():
    tool = next(tool for tool in Helpdesk.tools.published if tool["name"] == USER_CHANNEL)
    assert tool["inputSchema"]["properties"]["message"] == {
        "type": "string",
        "description": "What you say to the user.",
        "minLength": 1,
    }
    with AgentEnv.local(Helpdesk).open() as session:
        session.reset()
        with pytest.raises(ToolArgumentError, match="message"):
            session.call_tool(USER_CHANNEL, {"message": ""})


def test_the_user_opens_answers_and_its_ending_ends_the_episode():
    with AgentEnv.local(Helpdesk).open() as session:
        assert session.reset() == "My printer is broken."
        assert session.call_tool(USER_CHANNEL, {"message": "Shall I restart it?"}) == "Yes, restart it."
        assert session.ended() is None
        assert session.call_tool(USER_CHANNEL, {"message": "Restarted."}) == "###STOP###"
        assert session.ended() == "the user ended the conversation"
        with pytest.raises(EpisodeEndedError, match="the user ended the conversation"):
            session.call_tool(USER_CHANNEL, {"message": "Anything else?"})
        environment = session.environment
        assert [message.role for message in environment.chat.messages] == ["agent", "user"] * 3
        assert session.reward() == 6.0


def test_an_opening_the_row_carries_is_the_users_and_nothing_is_returned_for_it():
    with AgentEnv.local(Helpdesk).open() as session:
        session.reset(opening="Hello, my printer jams.")
        assert session.environment.chat.messages[1].text == "Hello, my printer jams."


@pytest.mark.parametrize(
    ("setting", "kind"),
    [
        (None, "ScriptedUser"),
        ("scripted", "ScriptedUser"),
        ({"base_url": "http://127.0.0.1:9/v1"}, "LLMUser"),
    ],
)
def test_a_user_is_named_by_a_user_the_word_scripted_or_an_llm_users_settings(setting, kind):
    assert type(user_from(setting)).__name__ == kind


def test_a_setting_that_names_no_user_says_what_does():
    with pytest.raises(ValueError, match=r"pass a User .*'scripted', or an LLM user's settings"):
        user_from(42)


def test_an_aside_is_kept_as_the_agents_words_but_never_published_nor_read_by_the_user():
    assert ASIDE not in {tool["name"] for tool in Helpdesk.tools.published}
    with AgentEnv.local(Helpdesk).open() as session:
        session.reset()
        assert session.call_tool(ASIDE, {"text": "Restarting it now.", "calls": 1}) == ""
        assert session.call_tool(ASIDE, {"calls": 2}) == ""  # a reply of calls alone: announced, no words
        with pytest.raises(ToolArgumentError, match="calls"):
            session.call_tool(ASIDE, {"text": "", "calls": -1})
        session.call_tool(USER_CHANNEL, {"message": "Restarted."})
        chat = session.environment.chat
        assert chat.asides == ["Restarting it now."]
        assert "Restarting it now." not in [message.text for message in chat.messages]  # what the user reads
        assert chat.agent_words()[-1] == "Restarting it now." and "Restarted." in chat.agent_words()


def test_an_environment_may_end_the_episode_before_the_user_answers_the_agents_message():
    class Strict(Helpdesk):
        def before_user_reply(self) -> str | None:
            return "no more turns"

    with AgentEnv.local(Strict).open() as session:
        session.reset()
        assert session.call_tool(USER_CHANNEL, {"message": "Hello?"}) == ""
        assert [message.role for message in session.environment.chat.messages][-2:] == ["user", "agent"]
