"""Rows given for a run instead of a split's (`agent-env eval --rows FILE`): read from a file, each checked as a
`reset` row before any episode starts. They are how an environment without a dataset, a bare MCP server, is
evaluated."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_env._rows import check_row
from agent_env.errors import DatasetRowsError
from agent_env.schema._describe import short
from agent_env.session import ClassProvider, Provider


def read_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows a file holds: JSON lines, one row (a JSON object) a line, blank lines skipped; or one JSON array of
    rows.

    Raises:
        DatasetRowsError: A line (or the array) is not JSON, or a row is not a JSON object; the message names it.
        OSError: The file cannot be read.
    """
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except ValueError as error:
            raise DatasetRowsError(f"{path} is not a JSON array of rows ({error})") from None
        return [_row(row, f"{path}, row {index + 1}") for index, row in enumerate(rows)]
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as error:
            raise DatasetRowsError(
                f"{path}, line {number}: not JSON ({error}); give one row a line, a JSON object such as "
                '{"prompt": "Record the team.", "task_id": "t1"}'
            ) from None
        found.append(_row(row, f"{path}, line {number}"))
    if not found:
        raise DatasetRowsError(f"{path} holds no rows: give one row a line, a JSON object with its prompt")
    return found


def _row(row: Any, where: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise DatasetRowsError(
            f'{where} is {short(row)}, not a JSON object (a row, such as {{"prompt": "..."}})'
        )
    return row


def given_rows(provider: Provider, rows: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Rows given for a run, each checked as one `reset` can take (for an environment whose class is here).

    Raises:
        DatasetRowsError: A row is no mapping, or one `reset` cannot take; the message names it by its place.
    """
    if rows is None:
        return None
    checked = []
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise DatasetRowsError(
                f"row {index + 1} of the given rows is {short(row)}, not a JSON object (a row)"
            )
        if isinstance(provider, ClassProvider):
            try:
                check_row(provider.environment, row)
            except DatasetRowsError as error:
                raise DatasetRowsError(f"row {index + 1} of the given rows: {error}") from None
        checked.append(dict(row))
    if not checked:
        raise DatasetRowsError("the given rows are none: give at least one row to start an episode from")
    return checked


__all__ = ["given_rows", "read_rows"]
