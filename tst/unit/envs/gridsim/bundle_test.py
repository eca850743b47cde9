"""The desk-v4 bundle: checksummed package data, its splits and task ids, and regeneration from its seeds."""

import hashlib
import json

import pytest

from agent_env.envs.gridsim import bundle as bundle_module
from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.bound import upper_bound
from agent_env.envs.gridsim.bundle import (
    MANIFEST,
    SPECS,
    BundleChecksumError,
    BundleError,
    BundleSpec,
    build_entry,
    build_text,
    bundle_path,
    load_bundle,
)
from agent_env.envs.gridsim.day import Day
from agent_env.envs.gridsim.scenario import generate_day


def test_the_shipped_file_matches_its_recorded_checksum():
    recorded = json.loads(MANIFEST.read_text())["desk-v4"]
    assert hashlib.sha256(bundle_path("desk-v4").read_bytes()).hexdigest() == recorded


def test_the_shipped_file_stays_small():
    assert bundle_path("desk-v4").stat().st_size < 3_000_000


def test_desk_v4_has_256_train_and_64_test_tasks_with_padded_ids():
    bundle = load_bundle("desk-v4")
    assert len(bundle.task_ids("train")) == 256 and len(bundle.task_ids("test")) == 64
    assert bundle.task_ids("train")[7] == "desk-v4/train/0007"
    assert bundle.task_ids("test")[-1] == "desk-v4/test/0063"
    assert not set(bundle.task_ids("train")) & set(bundle.task_ids("test"))


def test_loading_is_cached():
    assert load_bundle("desk-v4") is load_bundle("desk-v4")


def test_a_task_gives_its_day_and_precomputed_bound():
    bundle = load_bundle("desk-v4")
    day = bundle.day("desk-v4/test/0003")
    assert isinstance(day, Day) and day.seed == SPECS["desk-v4"].splits["test"][1] + 3
    assert bundle.bound("desk-v4/test/0003") == bundle.entry("desk-v4/test/0003").bound > 0
    assert bundle.battery == Battery()


@pytest.mark.parametrize(
    "task_id",
    [
        "desk-v4/train/0256",
        "desk-v4/valid/0000",
        "desk-v4/train/7",
        "desk-v4/../../etc/passwd",
        "../desk-v4/train/0000",
        "desk-v3/train/0000",
        "",
        None,
    ],
)
def test_unknown_or_malformed_task_ids_raise_showing_the_valid_form(task_id):
    with pytest.raises(BundleError) as caught:
        load_bundle("desk-v4").day(task_id)
    message = str(caught.value)
    assert (
        "task ids look like 'desk-v4/train/0007'" in message
        and "train 0000..0255, test 0000..0063" in message
    )


def test_unknown_splits_and_bundles_raise_listing_what_exists():
    with pytest.raises(BundleError, match="has no split 'valid'; use one of train, test"):
        load_bundle("desk-v4").task_ids("valid")
    for name in ("desk-v9", "../desk-v4", "data/desk-v4"):
        with pytest.raises(BundleError, match="shipped bundles: desk-v4"):
            load_bundle(name)


def test_a_changed_file_is_refused_with_how_to_rebuild(tmp_path, monkeypatch):
    tampered = bundle_path("desk-v4").read_bytes().replace(b'"bound":', b'"bound":1', 1)
    (tmp_path / "desk-v4.json").write_bytes(tampered)
    (tmp_path / "manifest.json").write_text(MANIFEST.read_text())
    monkeypatch.setattr(bundle_module, "DATA_DIR", tmp_path)
    monkeypatch.setattr(bundle_module, "MANIFEST", tmp_path / "manifest.json")
    load_bundle.cache_clear()
    try:
        with pytest.raises(
            BundleChecksumError, match=r"python -m agent_env\.envs\.gridsim\.bundle build desk-v4"
        ):
            load_bundle("desk-v4")
    finally:
        load_bundle.cache_clear()


def test_every_stored_day_regenerates_exactly_from_its_seed():
    bundle = load_bundle("desk-v4")
    for split, (size, first_seed) in SPECS["desk-v4"].splits.items():
        for index, task_id in enumerate(bundle.task_ids(split)):
            assert bundle.day(task_id) == generate_day(first_seed + index), task_id
        assert index == size - 1


def test_stored_bounds_match_a_fresh_solve():
    bundle = load_bundle("desk-v4")
    for task_id in bundle.task_ids("test")[::4] + bundle.task_ids("train")[::32]:
        fresh = upper_bound(bundle.day(task_id).outcome.prices(), bundle.battery).value
        assert bundle.bound(task_id) == pytest.approx(fresh, abs=0.01), task_id


def test_stored_entries_are_byte_for_byte_what_a_build_writes():
    text = bundle_path("desk-v4").read_text()
    spec = SPECS["desk-v4"]
    for split, task in (("train", 0), ("train", 255), ("test", 17)):
        entry = build_entry(f"desk-v4/{split}/{task:04d}", spec.splits[split][1] + task, spec.battery)
        assert json.dumps(entry, separators=(",", ":"), sort_keys=True) in text


def test_a_build_is_deterministic_and_loads_back():
    spec = BundleSpec("tiny-v1", {"train": (2, 10), "test": (1, 20)})
    first, second = build_text(spec), build_text(spec)
    assert first == second
    data = json.loads(first)
    assert [task["task_id"] for task in data["splits"]["train"]] == [
        "tiny-v1/train/0000",
        "tiny-v1/train/0001",
    ]
    assert data["splits"]["test"][0]["day"] == generate_day(20).to_dict()


def test_a_full_rebuild_reproduces_the_recorded_checksum():
    rebuilt = build_text(SPECS["desk-v4"])  # ~10 s: 320 days generated and 320 bounds solved
    assert hashlib.sha256(rebuilt).hexdigest() == json.loads(MANIFEST.read_text())["desk-v4"]
