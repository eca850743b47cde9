"""`agent_env/_splits.py`: the one rule of every default split. A split named is played as named; a usual split the
environment lacks gives way to the first split it names, said on stderr; without a dataset, or without splits it
names, the usual split stays (reading it then says why)."""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from agent_env._splits import first_split, split_to_play
from agent_env.errors import SplitNotFoundError


def rows_of(splits: dict[str, list[dict[str, Any]]], *, named: bool = True) -> Callable[[str], Any]:
    def dataset_rows(split: str) -> list[dict[str, Any]]:
        if split not in splits:
            if named:
                raise SplitNotFoundError(f"no split {split!r}", splits=list(splits))
            raise LookupError(f"no split {split!r}")
        return splits[split]

    return dataset_rows


def test_a_named_split_is_played_as_named_even_one_the_environment_lacks():
    asked: list[str] = []
    assert split_to_play(asked.append, "dev", ("train",), "Env") == "dev" and asked == []


def test_the_first_usual_split_the_environment_has_is_played(caplog):
    both = rows_of({"train": [{}], "test": [{}]})
    assert split_to_play(both, None, ("train",), "Env") == "train"
    assert split_to_play(rows_of({"train": [{}]}), None, ("test", "train"), "Env") == "train"
    assert caplog.text == ""


def test_without_a_usual_split_the_environments_first_is_played_and_said(caplog):
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        assert split_to_play(rows_of({"base": [{}], "extra": []}), None, ("test", "train"), "Mock") == "base"
    assert caplog.messages == [
        "agent_env: no split was named and Mock has no 'test' or 'train' split: its first split, 'base', is used "
        "instead"
    ]


def test_an_environment_that_names_no_splits_or_has_no_dataset_keeps_the_usual_one(caplog):
    assert split_to_play(rows_of({"base": []}, named=False), None, ("train",), "Env") == "train"

    def no_dataset(split: str) -> Any:
        raise NotImplementedError("no dataset")

    assert split_to_play(no_dataset, None, ("test",), "Env") == "test"
    assert caplog.text == ""


def test_any_other_failure_is_the_environments_own():
    def broken(split: str) -> Any:
        raise TypeError("a row reset cannot take")

    with pytest.raises(TypeError, match="a row reset cannot take"):
        split_to_play(broken, None, ("train",), "Env")


def test_the_error_names_its_splits_across_a_pickle_and_the_first_split_skips_the_ones_tried():
    error = pickle.loads(pickle.dumps(SplitNotFoundError("no split 'train'", splits=["train", "base"])))
    assert isinstance(error, LookupError) and str(error) == "no split 'train'"
    assert error.splits == ("train", "base")
    assert first_split(error, ("train",)) == "base" and first_split(LookupError("x")) is None
