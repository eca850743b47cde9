"""`agent_env/envs/tau2/first_person.py`: the scripted user's opening in the customer's voice. Over every task of the
three domains no second-person word is left outside quotes, the sentences telling the user how to act are left out,
the opening says what the scenario's reason and known info say, sentence for sentence, and a few openings read
exactly as a customer would write them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from agent_env.envs.tau2.first_person import (
    SECOND_PERSON,
    customer_opening,
    first_person,
    kept,
    sentences,
    unquoted,
)
from agent_env.envs.tau2.tasks import Task, scripted_turns
from tst.support import local_tau2_data

LOCAL = local_tau2_data(Path(__file__).resolve().parents[4])
needs_data = pytest.mark.skipif(LOCAL is None, reason="no copy of τ²-bench's data beside the project")


@cache
def tasks(domain: str) -> dict[str, Task]:
    assert LOCAL is not None
    found = [Task.model_validate(task) for task in json.loads((LOCAL / domain / "tasks.json").read_text())]
    return {task.id: task for task in found}


def scenario(task: Task) -> str:
    """What the opening is made from: the reason for the call and what the user knows, as written."""
    instructions = task.user_scenario.instructions
    if isinstance(instructions, str):
        return instructions.strip()
    return "\n\n".join(
        text.strip() for text in (instructions.reason_for_call, instructions.known_info) if text
    )


def opening(domain: str, task_id: str) -> str:
    return scripted_turns(tasks(domain)[task_id].user_scenario.instructions)[0]


@needs_data
@pytest.mark.parametrize(
    ("domain", "count", "left_out"),
    [("airline", 50, 4), ("retail", 114, 41), ("mock", 10, 2), ("telecom", 2285, 0)],
)
def test_no_second_person_is_left_outside_quotes_and_sentences_that_tell_the_user_how_to_act_are_left_out(
    domain, count, left_out
):
    found = tasks(domain)
    assert len(found) == count
    dropped = 0
    for task_id, task in found.items():
        said = opening(domain, task_id)
        assert said.strip(), f"{domain} {task_id}: an empty opening"
        for sentence in sentences(said):
            assert not SECOND_PERSON.search(unquoted(sentence)), f"{domain} {task_id}: {sentence!r}"
        dropped += sum(1 for sentence in sentences(scenario(task)) if kept(sentence))
    assert dropped == left_out  # a change of the rules that leaves out more (or fewer) sentences shows here


@needs_data
@pytest.mark.parametrize("domain", ["airline", "retail", "mock"])
def test_the_opening_says_the_reason_and_what_is_known_sentence_for_sentence_and_nothing_else(domain):
    for task in tasks(domain).values():
        written = [sentence for sentence in sentences(scenario(task)) if not kept(sentence)]
        said = sentences(opening(domain, task.id))
        assert said == [first_person(sentence) for sentence in written], task.id
        quotes = [part for sentence in written for part in sentence.split() if part.startswith("'")]
        assert all(quote in opening(domain, task.id) for quote in quotes), task.id  # quotes as written
        instructions = task.user_scenario.instructions
        behave = "" if isinstance(instructions, str) else instructions.task_instructions.strip()
        if any(character.isalpha() for character in behave):  # never how to behave: the simulated user's own
            assert behave not in opening(domain, task.id) and first_person(behave) not in opening(
                domain, task.id
            )


@needs_data
@pytest.mark.parametrize(
    ("domain", "task_id", "expected"),
    [
        (
            "airline",
            "0",
            "I want to cancel reservation EHGLP3. \n\nIt may be more than 24 hours after booking, but it is ok because"
            " I was out of town for that time.\n\nI am Emma Kim.\nMy user id is emma_kim_9957.",
        ),
        (
            "airline",
            "3",
            "I want to figure out the total number of suitcases the reservation allows me to take on my upcoming "
            "flight.\n\nI have a lot of things I need to bring with me on this trip. I am stressed and it is really "
            "important for me that the information be correct. \n\nI'm pretty sure that I'm a Gold member.\n\nI am "
            "Anya Garcia.\n\nMy user id is: anya_garcia_5901.\n\nMy confirmation number is JMO1MG.",
        ),
        (
            "telecom",
            "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]",
            "My mobile data is not working properly. It either stops working or is very slow. I want to fix it and "
            "absolutely want to get excellent internet speed on my phone. I am not willing to accept any other "
            "internet speed (poor, fair or good). I do not have access to wifi.\n\nI am John Smith with phone number "
            "555-123-2002. I am currently abroad in France.",
        ),
        (
            "retail",
            "32",
            "I just lost my tablet I just received and am in a bad mood. I want to know the tracking number of the "
            "order, and if the agent can help me refund or reorder the tablet. (I know it's a long shot, but I want to"
            " try). If not, cancel the charger I just bought, because it goes with the tablet... Also cancel the boot"
            " and kettle, and return the sneaker.\n\nI am Olivia Lopez, and I live in Texas in zipcode 76171.",
        ),
        (
            "retail",
            "51",
            "I want to return the digital camera that I received. I guess that the order number is #W8855135, but I'm"
            " not 100% sure.\n\nI am Sofia Li, residing in San Antonio, 78260.",
        ),
        (
            "retail",
            "113",
            "I want to cancel all pending orders.\n\nMy name is Yara Muller and my zip code is 85041.",
        ),
        (
            "mock",
            "create_task_1",
            "I am a team member who needs to create a task for an upcoming meeting. My goal is to create a task to "
            "track this important meeting. Create a new task called 'Important Meeting' for user_1.",
        ),
    ],
)
def test_openings_read_as_the_customer_speaking(domain, task_id, expected):
    assert opening(domain, task_id) == expected


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("You want to fly. You were sure you could.", "I want to fly. I was sure I could."),
        ("You're sure it's yours; do it yourself.", "I'm sure it's mine; do it myself."),
        ("The agent told you that the help is for you.", "The agent told me that the help is for me."),
        ("Ask for 'your order' as \"you wrote\".", "Ask for 'your order' as \"you wrote\"."),
        ("Your friend's name is Ivan, and you aren't.", "My friend's name is Ivan, and I am not."),
        ("You name is Sofia Li.", "My name is Sofia Li."),
        ("You lost it and are sad, but you'd like it.", "I lost it and am sad, but I'd like it."),
        ("Make sure you mention both. You are Mei.", "Make sure you mention both. I am Mei."),
        ("If the agent asks you, say that you forgot.", "If the agent asks you, say that you forgot."),
        ("You are busy, so insist on it.\nYou use PayPal.", "You are busy, so insist on it.\nI use PayPal."),
        ("You want X, and use your gift card.", "I want X, and use my gift card."),
        ("If not, cancel the charger you just bought.", "If not, cancel the charger I just bought."),
        ("Then suddenly change your mind.", "Then suddenly change your mind."),
        ("It is on your_user_id and you@example.com.", "It is on your_user_id and you@example.com."),
    ],
)
def test_the_rules(written, said):
    assert first_person(written) == said
    assert all(
        kept(sentence) == (sentence in said)
        for sentence in sentences(written)
        if SECOND_PERSON.search(unquoted(sentence))
    )


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("You want X. Make sure you mention Y.\n\nYou are Mei.", "I want X.\n\nI am Mei."),
        ("You want X.\n\nInsist that you want it.\nYou are Mei.", "I want X.\n\nI am Mei."),
        ("Make sure you mention Y.", "Make sure you mention Y."),  # nothing else to say: said as written
    ],
)
def test_the_customers_opening_leaves_out_what_tells_the_user_how_to_act(written, said):
    assert customer_opening(written) == said
