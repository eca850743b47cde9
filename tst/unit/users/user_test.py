"""`agent_env/users/_user.py` and `_chat.py`: a scripted user says its script whatever the agent says, then ends the
conversation; an ending marker ends it."""

from __future__ import annotations

import pickle

import pytest

from agent_env.users import (
    GREETING,
    HOLD,
    STOP,
    TRANSFER,
    Chat,
    ChatMessage,
    Scenario,
    ScriptedUser,
    User,
    UserAction,
    ending_of,
)
from agent_env.users._user import DONE

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


# A scripted user with actions of its own (a scenario's calls of the user's tools, made when asked).

AIRPLANE = UserAction("toggle_airplane_mode", {}, (("airplane", "flight mode"),))
SIM = UserAction("reseat_sim_card", {}, (("sim",), ("reseat", "remove", "reinsert")))
GRANT = UserAction(
    "grant_app_permission", {"app_name": "messaging", "permission": "sms"}, (("permission",), ("sms",))
)
ACTING = Scenario("Your phone has no service.", script=("My phone has no service.", "Yes.", "Thanks."),
                  actions=(AIRPLANE, SIM, GRANT))  # fmt: skip


class Phone:
    """The user's tools as an environment runs them: records each call, answers with a result (or raises)."""

    def __init__(self, failing: str | None = None) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.failing = failing

    def __call__(self, name: str, arguments: dict) -> str:
        self.calls.append((name, arguments))
        if name == self.failing:
            raise RuntimeError("the phone froze")
        return f"{name} done"


def acting_chat() -> Chat:
    return Chat(ACTING, [ChatMessage("agent", GREETING), ChatMessage("user", "My phone has no service.")])


def say(user: ScriptedUser, chat: Chat, text: str, phone: Phone) -> ChatMessage:
    chat.messages.append(ChatMessage("agent", text))
    answer = user.reply(chat, [{"name": "any"}], phone)
    chat.messages.append(answer)
    return answer


def test_an_action_is_asked_for_by_its_cue_words_as_whole_words_in_any_case():
    assert AIRPLANE.asked_in("Please switch off AIRPLANE mode.") and AIRPLANE.asked_in("Turn off flight-mode")
    assert SIM.asked_in("Could you re-insert... no: REMOVE the SIM card?") and not SIM.asked_in(
        "Remove the case."
    )
    assert not SIM.asked_in("It simply needs a reset") and not AIRPLANE.asked_in("airplanes fly")
    assert GRANT.asked_in("Give it the SMS permission") and not GRANT.asked_in(
        "Give it the storage permission"
    )
    assert not UserAction("toggle_data", {}).asked_in("anything")  # no cues, never asked for


def test_a_scripted_user_makes_what_it_is_asked_for_in_order_and_reports_each_result():
    user, phone, chat = ScriptedUser(), Phone(), acting_chat()
    answer = say(
        user, chat, "Please give the messaging app the SMS permission and turn off airplane mode.", phone
    )
    assert phone.calls == [("toggle_airplane_mode", {}), ("grant_app_permission", GRANT.arguments)]
    assert answer.text == f"{DONE}\n\ntoggle_airplane_mode done\n\ngrant_app_permission done"
    calls, *results = answer.tool_messages
    assert [call["function"]["name"] for call in calls["tool_calls"]] == [
        "toggle_airplane_mode",
        "grant_app_permission",
    ]
    assert [result["content"] for result in results] == [
        "toggle_airplane_mode done",
        "grant_app_permission done",
    ]
    say(user, chat, "Now turn airplane mode back on, please.", phone)  # made once only: nothing happens
    assert len(phone.calls) == 2


def test_while_actions_remain_it_holds_on_and_says_its_closing_lines_only_once_all_are_made():
    user, phone, chat = ScriptedUser(), Phone(), acting_chat()
    assert say(user, chat, "Let me look at your account.", phone).text == HOLD
    assert say(user, chat, "Is your phone on?", phone).text == HOLD
    say(user, chat, "Please take out the SIM card, reinsert it, and switch off airplane mode.", phone)
    say(user, chat, "And the SMS permission for messaging.", phone)
    assert [say(user, chat, "Anything else?", phone).text for _ in range(3)] == ["Yes.", "Thanks.", STOP]


def test_a_call_that_fails_is_reported_as_its_error_and_counts_as_made():
    user, phone, chat = ScriptedUser(), Phone(failing="reseat_sim_card"), acting_chat()
    answer = say(user, chat, "Please remove your SIM card.", phone)
    assert answer.text == f"{DONE}\n\nError: the phone froze"
    say(user, chat, "Please remove your SIM card again.", phone)
    assert phone.calls == [("reseat_sim_card", {})]


def test_without_tools_of_its_own_a_scripted_user_only_says_its_script():
    user, chat = ScriptedUser(), acting_chat()
    chat.messages.append(ChatMessage("agent", "Please switch off airplane mode."))
    assert user.reply(chat) == ChatMessage("user", "Yes.")


def test_a_call_the_scenario_lists_twice_takes_two_messages():
    reboot = UserAction("reboot_device", {}, (("restart",),))
    scenario = Scenario("No service.", script=("No service.", "Yes."), actions=(reboot, AIRPLANE, reboot))
    user, phone = ScriptedUser(), Phone()
    chat = Chat(scenario, [ChatMessage("agent", GREETING), ChatMessage("user", "No service.")])
    say(user, chat, "Restart your phone and turn off airplane mode.", phone)
    assert phone.calls == [("reboot_device", {}), ("toggle_airplane_mode", {})]
    say(user, chat, "Restart it again, please.", phone)
    assert phone.calls[-1] == ("reboot_device", {}) and len(phone.calls) == 3


def test_once_the_agent_has_handed_it_over_a_scripted_user_answers_with_the_transfer_marker():
    chat = Chat(SCENARIO, [ChatMessage("agent", GREETING), ChatMessage("user", "I want to cancel EHGLP3.")])
    chat.messages.append(ChatMessage("agent", "One moment."))
    assert ScriptedUser().reply(chat).text == "Yes."  # its script, while it has not been handed over
    chat.transferred = True
    assert ScriptedUser().reply(chat).text == TRANSFER
    assert ScriptedUser(["hi"], then="ok").reply(chat).text == TRANSFER  # whatever its own script says


def test_handed_over_with_calls_still_to_make_it_makes_none_and_answers_with_the_transfer_marker():
    # The agent asked for a fix in the message after its transfer: upstream's user, once transferred, only writes
    # its marker; so the scripted user acts only while it has not been handed over.
    user, phone, chat = ScriptedUser(), Phone(), acting_chat()
    chat.transferred = True
    assert say(user, chat, "Please switch off airplane mode.", phone).text == TRANSFER
    assert phone.calls == []
