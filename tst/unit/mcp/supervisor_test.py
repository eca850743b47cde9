"""`agent_env/mcp/_supervisor.py`: the scratch folders of owners that are gone are removed by the next owner."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from agent_env.mcp._supervisor import _remove_orphaned_folders


def folder_of(pid: int) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"agent-env-mcp-{pid}-0123456789ab-"))


def test_the_folders_of_an_owner_that_is_gone_are_removed_and_a_live_owners_are_kept() -> None:
    ended = subprocess.Popen(["true"])
    ended.wait()  # a pid that was an owner's, now gone (with its reaper: a container stopped)
    orphaned, live = folder_of(ended.pid), folder_of(os.getpid())
    (orphaned / "memory.jsonl").write_text("{}")
    try:
        _remove_orphaned_folders()
        assert not orphaned.exists()
        assert live.exists()
    finally:
        live.rmdir()
