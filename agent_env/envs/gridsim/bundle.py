"""Bench bundles: frozen, checksummed sets of days with train/test splits and each day's precomputed bound.

Regenerate one with `python -m agent_env.envs.gridsim.bundle build [name]`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import reprlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from agent_env.envs.gridsim.battery import Battery
from agent_env.envs.gridsim.bound import upper_bound
from agent_env.envs.gridsim.day import Day
from agent_env.envs.gridsim.scenario import generate_day
from agent_env.errors import AgentEnvError

DATA_DIR = Path(__file__).parent / "data"
MANIFEST = DATA_DIR / "manifest.json"
"""Bundle name -> SHA-256 of its JSON file; `build` rewrites it, `load_bundle` checks it."""


class BundleError(AgentEnvError, LookupError):
    """A bundle, split or task id that does not exist; the message lists what does."""

    code = "unknown_bundle_item"


class BundleChecksumError(AgentEnvError, RuntimeError):
    """A bundle file whose content no longer matches its recorded checksum."""

    code = "bundle_checksum"


@dataclass(frozen=True)
class BundleSpec:
    """How a bundle is made: its splits' sizes and first seeds, and the battery its bounds assume."""

    name: str
    splits: Mapping[str, tuple[int, int]]
    """Split name -> (number of days, seed of the first day); day i uses seed first + i."""
    battery: Battery = field(default_factory=Battery)


# Decision: desk-v4 is stored as plain compact JSON (about 2.2 MB, one task per line so diffs stay
# readable) rather than gzip, so its SHA-256 is of the file itself and does not depend on a zlib version.
# Seeds: train day i is 4_000_000 + i, test day i is 4_100_000 + i; bounds are stored rounded to the cent.
SPECS: dict[str, BundleSpec] = {
    "desk-v4": BundleSpec("desk-v4", {"train": (256, 4_000_000), "test": (64, 4_100_000)}),
}


@dataclass(frozen=True, eq=False)
class BundleEntry:
    """One task of a bundle: its id, its day, and the day's upper bound UB in $."""

    task_id: str
    day: Day
    bound: float


@dataclass(frozen=True, eq=False)
class Bundle:
    """A loaded bundle; read-only."""

    name: str
    battery: Battery
    splits: Mapping[str, tuple[str, ...]]
    entries: Mapping[str, BundleEntry]

    def task_ids(self, split: str) -> tuple[str, ...]:
        """The task ids of a split in order, e.g. ("desk-v4/train/0000", ...)."""
        if split not in self.splits:
            raise BundleError(
                f"bundle {self.name!r} has no split {split!r}; use one of {', '.join(self.splits)}"
            )
        return self.splits[split]

    def entry(self, task_id: str) -> BundleEntry:
        """The task with this id.

        Raises:
            BundleError: the id is malformed or names no task of this bundle.
        """
        found = self.entries.get(task_id) if isinstance(task_id, str) else None
        if found is None:
            sizes = ", ".join(f"{split} 0000..{len(ids) - 1:04d}" for split, ids in self.splits.items())
            raise BundleError(
                f"unknown task id {reprlib.repr(task_id)}; task ids look like '{self.name}/train/0007' ({sizes})"
            )
        return found

    def day(self, task_id: str) -> Day:
        """The day of a task."""
        return self.entry(task_id).day

    def bound(self, task_id: str) -> float:
        """The precomputed upper bound UB of a task, $."""
        return self.entry(task_id).bound


@cache
def load_bundle(name: str) -> Bundle:
    """Load a shipped bundle by name (cached), after checking its file against the manifest checksum.

    Raises:
        BundleError: no bundle has this name.
        BundleChecksumError: the file changed since it was built; rebuild it or restore it.
    """
    if not isinstance(name, str) or name not in SPECS:
        raise BundleError(f"unknown bundle {reprlib.repr(name)}; shipped bundles: {', '.join(sorted(SPECS))}")
    text = bundle_path(name).read_bytes()
    expected = json.loads(MANIFEST.read_text())[name]
    actual = hashlib.sha256(text).hexdigest()
    if actual != expected:
        raise BundleChecksumError(
            f"bundle {name!r} has SHA-256 {actual}, the manifest records {expected}; "
            f"restore the file or rebuild it with `python -m agent_env.envs.gridsim.bundle build {name}`"
        )
    return _from_json(json.loads(text))


def bundle_path(name: str) -> Path:
    """The package-data file of a bundle."""
    return DATA_DIR / f"{name}.json"


def build_entry(task_id: str, seed: int, battery: Battery) -> dict[str, Any]:
    """One task as stored: its day and bound (rounded to the cent)."""
    day = generate_day(seed)
    bound = round(upper_bound(day.outcome.prices(), battery).value, 2)
    return {"task_id": task_id, "bound": bound, "day": day.to_dict()}


def build_text(spec: BundleSpec) -> bytes:
    """The bundle's file content: compact JSON, one task per line, the same bytes on every build."""
    head = json.dumps({"name": spec.name, "battery": spec.battery.to_dict()}, separators=(",", ":"))
    splits = []
    for split, (size, first_seed) in spec.splits.items():
        lines = [
            _dumps(build_entry(f"{spec.name}/{split}/{i:04d}", first_seed + i, spec.battery))
            for i in range(size)
        ]
        splits.append(f'"{split}":[\n' + ",\n".join(lines) + "\n]")
    return (head[:-1] + ',"splits":{' + ",".join(splits) + "}}\n").encode()


def build(name: str) -> str:
    """Regenerate a bundle's file and its manifest checksum; returns the checksum."""
    text = build_text(SPECS[name])
    bundle_path(name).write_bytes(text)
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    manifest[name] = hashlib.sha256(text).hexdigest()
    MANIFEST.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    load_bundle.cache_clear()
    return str(manifest[name])


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


def _from_json(data: Mapping[str, Any]) -> Bundle:
    entries: dict[str, BundleEntry] = {}
    splits: dict[str, tuple[str, ...]] = {}
    for split, tasks in data["splits"].items():
        for task in tasks:
            entries[task["task_id"]] = BundleEntry(
                task["task_id"], Day.from_dict(task["day"]), float(task["bound"])
            )
        splits[split] = tuple(task["task_id"] for task in tasks)
    return Bundle(data["name"], Battery.from_dict(data["battery"]), splits, entries)


def main(argv: list[str] | None = None) -> None:
    """`build [name]`: regenerate a bundle file and its checksum."""
    parser = argparse.ArgumentParser(prog="python -m agent_env.envs.gridsim.bundle")
    parser.add_argument("command", choices=["build"])
    parser.add_argument("name", nargs="?", default="desk-v4", choices=sorted(SPECS))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    checksum = build(args.name)
    print(f"built {bundle_path(args.name)} in {time.perf_counter() - start:.1f} s, sha256 {checksum}")


if __name__ == "__main__":
    main()
