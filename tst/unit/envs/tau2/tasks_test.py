"""`agent_env/envs/tau2/tasks.py`: a domain's files read into its tasks, splits, policy and base; a file that cannot
be parsed is the loader's error, naming the file, what is wrong with it in one line, and the ways out."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent_env.envs.tau2.data import Tau2DataError
from agent_env.envs.tau2.mock import MockDB
from agent_env.envs.tau2.tasks import load_domain
from tst.support import local_tau2_data

LOCAL = local_tau2_data(Path(__file__).resolve().parents[4])
needs_data = pytest.mark.skipif(LOCAL is None, reason="no copy of τ²-bench's data beside the project")


@pytest.fixture
def own(tmp_path: Path) -> Path:
    """A folder of the user's own holding a copy of the mock domain's files."""
    assert LOCAL is not None
    shutil.copytree(LOCAL / "mock", tmp_path / "mine" / "mock")
    return tmp_path / "mine"


def refusal(folder: Path) -> str:
    with pytest.raises(Tau2DataError) as raised:
        load_domain("mock", MockDB, data_dir=folder)
    message = str(raised.value)
    assert "\n" not in message and len(message) < 900, message  # one line, not pydantic's dump
    assert "errors.pydantic.dev" not in message and "validation error" not in message
    assert "Fix or replace the file (tau2-bench's own: download it again from" in message
    assert (
        "name no folder (neither data_dir= nor $AGENT_ENV_TAU2_DATA) and agent_env downloads the data"
        in message
    )
    return message


def truncate(path: Path, keep: int) -> None:
    path.write_bytes(path.read_bytes()[:keep])


@needs_data
def test_a_truncated_database_names_the_file_and_where_its_json_ends(own):
    truncate(own / "mock" / "db.json", 200)
    message = refusal(own)
    assert message.startswith(
        f"τ²-bench's mock/db.json at {own / 'mock' / 'db.json'} (in the folder named by "
    )
    assert "cannot be used: it is not valid JSON (EOF while parsing" in message


@needs_data
def test_a_truncated_split_file_names_it(own):
    truncate(own / "mock" / "split_tasks.json", 12)
    message = refusal(own)
    assert f"mock/split_tasks.json at {own / 'mock' / 'split_tasks.json'}" in message
    assert "it is not valid JSON (EOF while parsing" in message


@needs_data
def test_a_truncated_task_file_names_it(own):
    (own / "mock" / "tasks.json").write_text('[\n  {"id": ')
    message = refusal(own)
    assert (
        "mock/tasks.json" in message and "it is not valid JSON (Expecting value: line 2 column 10" in message
    )


@needs_data
def test_a_file_of_the_wrong_shape_says_where_in_one_line(own):
    (own / "mock" / "tasks.json").write_text('[{"id": "a", "user_scenario": {}}, {"id": 2}]')
    message = refusal(own)
    assert (
        "mock/tasks.json" in message
        and "it is not in tau2-bench's form (at [0].user_scenario.instructions: Field required) (and 2 more problems)"
        in message
    )
    (own / "mock" / "tasks.json").write_bytes((LOCAL / "mock" / "tasks.json").read_bytes())  # type: ignore[operator]
    (own / "mock" / "split_tasks.json").write_text('{"base": "create_task_1"}')
    assert "mock/split_tasks.json" in (message := refusal(own))
    assert "(at base: Input should be a valid array)" in message


@needs_data
def test_a_policy_that_is_not_utf8_names_it(own):
    (own / "mock" / "policy.md").write_bytes(b"\xff\xfe policy")
    assert "mock/policy.md" in (message := refusal(own)) and "it is not UTF-8 text" in message


@needs_data
def test_a_whole_named_folder_loads(own):
    domain = load_domain("mock", MockDB, data_dir=own)
    assert (
        domain.folder == own / "mock" and list(domain.splits) == ["base"] and "create_task_1" in domain.tasks
    )
