"""Dataset rows held to what `reset` can take (`agent_env/_rows.py`): refused where the rows are first given, and at
the first reset from a row that does not fit, naming the keys and the fix, in process and served alike."""

from __future__ import annotations

import pytest

from agent_env import AgentEnv, LocalProvider, LocalSession
from agent_env.errors import DatasetRowsError
from tst.data.rows import Demanding, Strict

CANNOT_TAKE_PROMPT = (
    "Strict.reset cannot take the key 'prompt' of row 0 of its 'train' dataset (it takes only task_id), and TRL "
    "passes every column of a row to reset: take the rest with **row, def reset(self, task_id: str, **row)"
)


def test_a_reset_without_row_is_refused_when_its_dataset_is_first_given_naming_the_key():
    with pytest.raises(DatasetRowsError) as raised:
        AgentEnv.local(Strict).dataset("train")
    assert str(raised.value) == CANNOT_TAKE_PROMPT


def test_a_row_that_lacks_a_key_reset_requires_is_named_with_its_index():
    with pytest.raises(DatasetRowsError) as raised:
        LocalProvider(Demanding).dataset_rows("test")
    assert str(raised.value) == (
        "Demanding.reset requires 'level', which row 2 of its 'test' dataset lacks (its keys: prompt, task_id): add "
        "the key to every row, or give the parameter a default"
    )


def test_a_row_from_elsewhere_is_refused_at_reset_before_the_environment_runs():
    session = LocalSession(Strict())
    with pytest.raises(DatasetRowsError) as raised:
        session.reset(task_id="a", prompt=[], level=3)
    assert str(raised.value) == (
        "Strict.reset cannot take the keys 'prompt', 'level' of the row (it takes only task_id), and TRL passes every "
        "column of a row to reset: take the rest with **row, def reset(self, task_id: str, **row)"
    )
    assert session.reset(task_id="a") == "Task a."  # a row it can take still starts an episode


def test_a_served_dataset_is_refused_the_same_way_when_first_served():
    pytest.importorskip("uvicorn", reason="the server extra is not installed")
    from agent_env.server.app import build_app
    from tst.unit.server.running import running

    with running(build_app(Strict)) as url, pytest.raises(DatasetRowsError) as raised:
        AgentEnv.connect(url).dataset("train")
    assert str(raised.value) == CANNOT_TAKE_PROMPT
