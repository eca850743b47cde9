"""`agent_env/_dataset.py`: `env.dataset(split)` gives every value back as the rows gave it, and refuses, naming the
row and the key, a value no `datasets.Dataset` can carry."""

from __future__ import annotations

from typing import Any

import pytest

from agent_env import AgentEnv, Environment
from agent_env._dataset import same_json
from agent_env.errors import DatasetRowsError

PROMPT = [{"role": "user", "content": "Go."}]


def environment_of(rows: list[dict[str, Any]]) -> AgentEnv:
    class Rows(Environment):
        def reset(self, **row: Any) -> str:
            return "ok"

        def reward(self) -> float:
            return 0.0

        def dataset_rows(self, split: str) -> list[dict[str, Any]]:
            return [dict(row) for row in rows]

    return AgentEnv.local(Rows)


@pytest.mark.parametrize(
    "rows",
    [
        [{"prompt": PROMPT, "people": [["ada", 36]]}, {"prompt": PROMPT, "people": [["bob", 41], ["cy", 7]]}],
        [{"prompt": PROMPT, "x": 1}, {"prompt": PROMPT, "x": "one"}],
        [{"prompt": PROMPT, "meta": {"a": 1}}, {"prompt": PROMPT, "meta": {"b": "x"}}],
        [{"prompt": PROMPT, "sizes": [1, 2.5]}],
        [{"prompt": PROMPT, "n": True}, {"prompt": PROMPT, "n": 1}],
        [{"prompt": PROMPT, "n": 1}, {"prompt": PROMPT, "n": 2.5}],
        [{"prompt": PROMPT, "calls": [{"name": "f", "arguments": {"x": 1}}, {"name": "g", "arguments": {"y": [1]}}]}],
    ],
    ids=["mixed list", "mixed column", "dicts with other keys", "ints and floats", "bool and int", "int and float",
         "tool-call records"],
)  # fmt: skip
def test_every_value_comes_back_as_it_was_given(rows):
    dataset = environment_of(rows).dataset("train")
    held = dataset.to_list()
    assert len(held) == len(rows)
    for given, back in zip(rows, held, strict=True):
        assert all(same_json(value, back[key]) for key, value in given.items()), (given, back)


def test_the_issues_row_reaches_reset_as_given():
    env = environment_of([{"prompt": PROMPT, "people": [["ada", 36]]}])
    row = env.dataset("train")[0]
    assert row["people"] == [["ada", 36]] and type(row["people"][0][1]) is int
    with env.open() as session:
        assert session.reset(**row) == "ok"


def test_columns_arrow_holds_as_they_are_are_left_as_they_are():
    features = AgentEnv.local("gridsim-desk").dataset("test").features
    assert {name: type(kind).__name__ for name, kind in features.items()} == {
        "prompt": "List",
        "task_id": "Value",
    }


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (2**70, "its 'big' is 1180591620717411303424, an integer past 64 bits (give it as a string)"),
        ({1, 2}, "its 'big' is {1, 2}, a set, which is no JSON value"),
        ([{"at": object}], "its 'big' is <class 'object'>, a type, which is no JSON value"),
        ({1: "a"}, 'its \'big\' is {"1": "a"}, a dict with keys that are not strings'),
    ],
    ids=["past 64 bits", "a set", "no JSON value", "keys not strings"],
)
def test_a_value_no_dataset_can_carry_is_refused_naming_the_row_and_the_key(value, said):
    env = environment_of([{"prompt": PROMPT, "big": 1}, {"prompt": PROMPT, "big": value}])
    with pytest.raises(DatasetRowsError) as refused:
        env.dataset("train")
    message = str(refused.value)
    assert message.startswith(f"row 1 of Rows's 'train' dataset: {said}")
    assert message.endswith(
        "give JSON values (strings, numbers up to 64-bit integers, booleans, null, lists and dicts of them)"
    )


@pytest.mark.parametrize(
    ("given", "held", "same"),
    [
        (1, 1.0, False),
        (True, 1, False),
        ((1, 2), [1, 2], True),
        ({"a": 1}, {"a": 1, "b": None}, False),
        (float("nan"), float("nan"), True),
        ([["ada", 36]], [["ada", 36]], True),
        ("1", 1, False),
    ],
)
def test_same_json_is_jsons_sameness(given, held, same):
    assert same_json(given, held) is same
