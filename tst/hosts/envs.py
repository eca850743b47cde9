"""The environment the hosts tier serves and runs on actors: `WhereDesk`, whose slow tool says when it has begun.

A fault is only a fault "in flight" if the calls have reached the environment before it: `hang` first leaves a
mark (an empty file in the directory `$AENV_MARKS` names), so a test waits for the marks, then cuts the link, kills
the node or kills the server. Every host shares this machine's file system, so the test sees marks from all of them.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from agent_env import tool
from tst.ray.envs import WhereDesk

MARKS_VARIABLE = "AENV_MARKS"


class MarkedDesk(WhereDesk):
    """`WhereDesk` whose `hang` leaves a mark when it begins."""

    @tool
    def hang(self, seconds: float) -> str:
        """Block for a while, then answer.

        Args:
            seconds: How long.
        """
        marks = os.environ.get(MARKS_VARIABLE)
        if marks:
            (Path(marks) / uuid.uuid4().hex).touch()
        time.sleep(seconds)
        return "done"


def wait_for_marks(directory: Path, count: int, timeout: float = 60.0) -> None:
    """Wait until `count` calls of `hang` have begun (and left their marks in `directory`), then clear the marks."""
    deadline = time.monotonic() + timeout
    while len(list(directory.iterdir())) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"only {len(list(directory.iterdir()))} of {count} calls began within {timeout:g} s"
            )
        time.sleep(0.02)
    for mark in directory.iterdir():
        mark.unlink()
