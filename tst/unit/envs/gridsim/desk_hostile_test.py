"""Task ids and bundle names that try to reach outside the desk's package data are names of nothing: they are
looked up among the shipped ones, never joined into a path, and refused with a short message listing what exists."""

from __future__ import annotations

import pytest

from agent_env.envs.gridsim import bundle as bundle_module
from agent_env.envs.gridsim.bundle import BundleError, load_bundle
from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.errors import EpisodeNotStartedError, UnscoredEpisodeError
from agent_env.session import EpisodeState, LocalSession

TRAVERSALS = [
    "../../etc/passwd",
    "desk-v4/../../manifest",
    "desk-v4/train/../../data/manifest.json",
    "/etc/passwd",
    "desk-v4/train/0000/../../../etc/passwd",
    "desk-v4\\..\\..\\etc\\passwd",
    "desk-v4/train/0000\x00.json",
    "file:///etc/passwd",
    "x" * 1_000_000,
]


@pytest.fixture
def no_file_is_read(monkeypatch):
    """Fail the test if anything reads a bundle file (the shipped one is already loaded and cached)."""
    load_bundle("desk-v4")

    def refuse(name: str):
        raise AssertionError(f"bundle_path({name!r}) was asked for")

    monkeypatch.setattr(bundle_module, "bundle_path", refuse)


@pytest.mark.parametrize("task_id", TRAVERSALS)
def test_a_task_id_that_tries_to_leave_the_bundle_is_an_unknown_task(no_file_is_read, task_id):
    session = LocalSession(GridSimDesk())
    with pytest.raises(UnscoredEpisodeError) as failed:
        session.reset(task_id=task_id)
    assert str(failed.value).startswith("GridSimDesk could not start the episode of task_id=")
    assert isinstance(failed.value.cause, BundleError) and str(failed.value).endswith(str(failed.value.cause))
    message = str(failed.value.cause)
    assert message.startswith("unknown task id ")
    assert message.endswith("task ids look like 'desk-v4/train/0007' (train 0000..0255, test 0000..0063)")
    assert len(message) < 200
    assert session.state is EpisodeState.NEW
    with pytest.raises(EpisodeNotStartedError):
        session.call_tool("list_offers", {})
    assert session.reset(task_id="desk-v4/test/0003").startswith("You are the day-ahead trader")


@pytest.mark.parametrize("task_id", [["desk-v4/train/0000"], {"$ref": "x"}, 7, b"desk-v4/train/0000"])
def test_a_task_id_that_is_not_a_string_is_an_unknown_task(no_file_is_read, task_id):
    with pytest.raises(BundleError, match=r"^unknown task id "):
        GridSimDesk().reset(task_id=task_id)


@pytest.mark.parametrize(
    "name", ["../../etc/passwd", "desk-v4/../desk-v4", "manifest", "desk-v4.json", "", "x" * 10_000]
)
def test_a_bundle_name_that_is_not_a_shipped_bundle_is_refused_before_any_file_is_read(no_file_is_read, name):
    with pytest.raises(BundleError) as refused:
        GridSimDesk(bundle=name)
    assert str(refused.value).endswith("shipped bundles: desk-v4")
    assert len(str(refused.value)) < 200
