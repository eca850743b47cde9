"""`agent_env/evaluation/_given_rows.py`: rows given for a run, read from a file and checked as reset rows."""

from __future__ import annotations

from typing import Any

import pytest

from agent_env import AgentEnv, Environment
from agent_env.errors import DatasetRowsError
from agent_env.evaluation._given_rows import given_rows, read_rows


class ByTask(Environment):
    def reset(self, task_id: str) -> str:  # takes no other key: a row with one is refused before any episode
        return task_id

    def reward(self) -> float:
        return 0.0


def test_a_json_array_of_rows_is_read_as_well_as_json_lines(tmp_path):
    lines, array = tmp_path / "rows.jsonl", tmp_path / "rows.json"
    lines.write_text('{"task_id": "a"}\n{"task_id": "b"}\n')
    array.write_text('[{"task_id": "a"}, {"task_id": "b"}]')
    assert read_rows(lines) == read_rows(array) == [{"task_id": "a"}, {"task_id": "b"}]


def test_a_row_reset_cannot_take_is_refused_naming_its_place_and_the_fix():
    provider = AgentEnv.local(ByTask).provider
    assert given_rows(provider, [{"task_id": "a"}]) == [{"task_id": "a"}]
    with pytest.raises(DatasetRowsError) as refused:
        given_rows(provider, [{"task_id": "a"}, {"task_id": "b", "prompt": "Go."}])
    said = str(refused.value)
    assert said.startswith("row 2 of the given rows: ByTask.reset cannot take the key 'prompt' of the row")
    assert said.endswith("take the rest with **row, def reset(self, task_id: str, **row)")


@pytest.mark.parametrize("rows", [[], ["not a row"]], ids=["none", "not an object"])
def test_no_rows_or_a_row_that_is_no_object_is_refused(rows: list[Any]):
    with pytest.raises(DatasetRowsError, match="the given rows"):
        given_rows(AgentEnv.local(ByTask).provider, rows)
