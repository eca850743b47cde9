"""`agent_env/users/_user.py` and `_chat.py`: a scripted user says its script whatever the agent says, then ends the
conversation; an ending marker ends it."""

from __future__ import annotations

import pickle

import pytest

from agent_env.users import (
    GREETING,
    STOP,
    TRANSFER,
    Chat,
    ChatMessage,
    Scenario,
    ScriptedUser,
    User,
    ending_of,
)

SCENARIO = Scenario("You want to cancel reservation EHGLP3.", script=("I want to cancel EHGLP3.", "Yes."))


def test_a_scripted_user_opens_with_its_first_line_and_answers_in_order_then_stops():
    user = ScriptedUser()
    assert isinstance(user, User)
    opening = user.opening(SCENARIO)
    assert opening == "I want to cancel EHGLP3."
    chat = Chat(SCENARIO, [ChatMessage("agent", GREETING), ChatMessage("user", opening)])
    chat.messages.append(ChatMessage("agent", "Can I have your user id?"))
    assert user.reply(chat) == ChatMessage("user", "Yes.")
    chat.messages += [ChatMessage("user", "Yes."), ChatMessage("agent", "Done.")]
    answer = user.reply(chat)
    assert answer.text == STOP and ending_of(answer.text) == "the user ended the conversation"


def test_its_own_turns_win_over_the_scenarios_and_then_says_what_it_was_told():
    user = ScriptedUser(["hello", "thanks"], then="bye " + TRANSFER)
    chat = Chat(SCENARIO, [ChatMessage("agent", GREETING), ChatMessage("user", user.opening(SCENARIO))])
    assert chat.messages[-1].text == "hello"
    chat.messages.append(ChatMessage("agent", "hi"))
    assert user.reply(chat).text == "thanks"
    chat.messages += [ChatMessage("user", "thanks"), ChatMessage("agent", "ok")]
    assert ending_of(user.reply(chat).text) == "the user was transferred to another agent"


def test_a_scripted_user_with_no_script_says_how_to_give_one():
    with pytest.raises(ValueError, match=r"ScriptedUser\(turns=\[...\]\) or a Scenario with a script"):
        ScriptedUser().opening(Scenario("anything"))


def test_a_scripted_user_travels_and_compares_by_its_script():
    user = ScriptedUser(["a"], then="b")
    assert pickle.loads(pickle.dumps(user)) == user
    assert user != ScriptedUser(["a"]) and hash(user) == hash(ScriptedUser(["a"], then="b"))
    assert user.describe() == {"kind": "scripted", "script": "own"}


@pytest.mark.parametrize(
    ("text", "ending"),
    [
        ("Thanks! ###STOP###", "the user ended the conversation"),
        ("###TRANSFER###", "the user was transferred to another agent"),
        ("I cannot say. ###OUT-OF-SCOPE###", "the user's scenario did not cover what came up"),
        ("Sure, go ahead.", None),
        ("STOP", None),
    ],
)
def test_an_ending_marker_anywhere_in_a_message_ends_the_conversation(text, ending):
    assert ending_of(text) == ending


def test_a_chat_lists_what_the_agent_said():
    chat = Chat(
        SCENARIO, [ChatMessage("agent", GREETING), ChatMessage("user", "hi"), ChatMessage("agent", "ok")]
    )
    assert chat.agent_texts() == [GREETING, "ok"]


def test_once_the_agent_has_handed_it_over_a_scripted_user_answers_with_the_transfer_marker():
    chat = Chat(SCENARIO, [ChatMessage("agent", GREETING), ChatMessage("user", "I want to cancel EHGLP3.")])
    chat.messages.append(ChatMessage("agent", "One moment."))
    assert ScriptedUser().reply(chat).text == "Yes."  # its script, while it has not been handed over
    chat.transferred = True
    assert ScriptedUser().reply(chat).text == TRANSFER
    assert ScriptedUser(["hi"], then="ok").reply(chat).text == TRANSFER  # whatever its own script says
