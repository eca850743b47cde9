"""Dataset rows by reference: a row the server served (`GET /datasets/{split}`) is named by its digest, not sent back.

A row's digest is the SHA-256 of its canonical JSON (keys sorted, no spaces), which the server and the client compute
alike from the same JSON. A reset names a row with `?row=<digest>` (and `&split=<split>` when the client knows where
the row came from, so a restarted server can read that split again) instead of a body; a digest the server does not
know is answered `row_not_found`, and the client sends the row itself.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

ROW_PARAMETER = "row"
"""The query parameter that names a served row by its digest."""
SPLIT_PARAMETER = "split"
"""The query parameter that names the split a referenced row came from."""
INLINE_ROW_BYTES = 64 * 1024
"""A row the client did not read from the server goes in the body up to this size; past it, by reference first (a
pickled provider, in AsyncGRPO's rollout worker, has read no dataset), and whole only if the server does not know it."""


def canonical(row: Any) -> bytes | None:
    """A row's canonical JSON (sorted keys, no spaces, UTF-8), or None for a row JSON cannot write."""
    try:
        text = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return text.encode()


def digest(text: bytes) -> str:
    """The digest that names a row, from its canonical JSON."""
    return hashlib.sha256(text).hexdigest()


def row_digest(row: Any) -> str | None:
    """The digest of a row, or None for a row JSON cannot write."""
    text = canonical(row)
    return None if text is None else digest(text)


def described(row: dict[str, Any]) -> str:
    """A row as a message names it: its short scalar values (`task_id='desk-v4/train/0003'`), else its keys."""
    named = [
        f"{key}={value!r}"
        for key, value in row.items()
        if isinstance(value, str | int | float) and not isinstance(value, bool) and len(repr(value)) <= 60
    ]
    if named:
        return ", ".join(named[:3])
    return f"with keys {', '.join(list(map(str, row))[:8])}" if row else "{}"
