"""Which dataset split a command plays when it is named none: its usual one, else the environment's first.

One rule for every default split: `agent-env render`'s (train), `eval`'s (the environment's `evaluation_split`, then
test), and the row an MCP session starts from (test, else train). A split the caller names is played as named, and
refused by the environment if it has none of that name. A usual split the environment lacks gives way to the first
split the environment has, as its `SplitNotFoundError` names them (τ²-bench's mock domain has only `base`), and a
warning on the `agent_env` logger (stderr, under the command) says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger("agent_env")


def split_to_play(
    dataset_rows: Callable[[str], Any], split: str | None, usual: Sequence[str], environment: str
) -> str:
    """The split to play: `split` when it is named; else the first of `usual` the environment has, else its first.

    `dataset_rows` is asked for each usual split in turn until one exists. When the environment has none of them and
    does not name its own, or has no dataset at all, the first usual split is returned: reading it gives the
    environment's own error (a command without a dataset plays empty rows).

    Raises:
        Whatever `dataset_rows` raises but `LookupError` (a missing split) or `NotImplementedError` (no dataset).
    """
    if split is not None:
        return split
    missing: LookupError | None = None
    for candidate in usual:
        try:
            dataset_rows(candidate)
        except NotImplementedError:
            return usual[0]
        except LookupError as error:
            missing = error
            continue
        return candidate
    first = first_split(missing, usual) if missing is not None else None
    if first is None:
        return usual[0]
    note_first_split(environment, usual, first)
    return first


def first_split(error: BaseException, tried: Sequence[str] = ()) -> str | None:
    """The environment's first split not in `tried`, as its error for a missing split names them
    (`SplitNotFoundError.splits`; a served environment's `DatasetNotFoundError` carries them too); None when the
    error names none."""
    return next((split for split in getattr(error, "splits", ()) or () if split not in tried), None)


def note_first_split(environment: str, usual: Sequence[str], first: str) -> None:
    """Say that `environment`'s first split is played because it has none of the usual ones."""
    named = " or ".join(repr(split) for split in usual)
    logger.warning(
        "agent_env: no split was named and %s has no %s split: its first split, %r, is used instead",
        environment,
        named,
        first,
    )
