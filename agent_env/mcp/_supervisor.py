"""Server processes that never outlive their owner: each carries its owner's mark, and a reaper kills what is left.

Every stdio server this process starts gets two environment variables, which its own children inherit: this
process's owner mark and a mark of its own. A small reaper process, started with the first server, waits on a pipe
from this process; when the pipe closes (this process exited, crashed, or was killed with SIGKILL), it kills every
process that carries the owner mark, with its process group, and removes the scratch folders named after the mark.
The reaper is no child of this process, so that whatever kills this process with its children (Ray, ending an actor)
spares it. A single server (one that hangs, or outlived a clean shutdown) is killed by its own mark. Processes are
found through `/proc`, so on systems without it (macOS) only the MCP SDK's own shutdown (stdin closed, then the
process group terminated) applies.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

logger = logging.getLogger("agent_env.mcp")

OWNER_MARK = "AGENT_ENV_MCP_OWNER"
"""Carries the mark of the process that started a server (and so of the reaper watching it)."""
SERVER_MARK = "AGENT_ENV_MCP_SERVER"
"""Carries a server process's own mark."""

_PROC = Path("/proc")

_REAPER = r"""
import os, signal, sys
if os.fork():
    os._exit(0)  # the reaper goes on as a grandchild, no child of its owner (see _start_reaper)
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdin.buffer.read()
mark = ("AGENT_ENV_MCP_OWNER=" + sys.argv[1]).encode()
own = os.getpgid(0)
for _ in range(3):
    found = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/" + entry + "/environ", "rb") as file:
                marked = mark in file.read().split(b"\0")
        except OSError:
            continue
        if marked:
            found += 1
            pid = int(entry)
            try:
                group = os.getpgid(pid)
                if group not in (own, 0, 1):
                    os.killpg(group, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    if not found:
        break
import glob, shutil
for folder in glob.glob(os.path.join(sys.argv[2], sys.argv[3] + "*")):
    shutil.rmtree(folder, ignore_errors=True)
"""


class _Owner:
    """This process's mark and its reaper, made again in a forked child (which is another owner)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = -1
        self.mark = ""
        self._reaper: subprocess.Popen[bytes] | None = None

    def current(self) -> str:
        """This process's mark, its reaper started if it is not yet."""
        with self._lock:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self.mark = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
                self._reaper = None
            if self._reaper is None and _PROC.is_dir():
                self._reaper = _start_reaper(self.mark)
                _remove_orphaned_folders()
            return self.mark


_owner = _Owner()


def _start_reaper(mark: str) -> subprocess.Popen[bytes] | None:
    """Start the reaper, holding the write end of its pipe. The process started forks the reaper and exits, so the
    reaper is no child of this process: a supervisor that kills a process with its children (Ray, when it ends an
    actor) leaves it to do its work."""
    try:
        launcher = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _REAPER, mark, tempfile.gettempdir(), _scratch_prefix(mark)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # neither Ctrl-C nor a signal to this process's group reaches it
            close_fds=True,
        )
        launcher.wait()
    except OSError as error:
        logger.warning(
            "agent_env: no reaper for MCP server processes (%s); a crash may leave them running", error
        )
        return None
    return launcher


def _scratch_prefix(mark: str) -> str:
    return f"agent-env-mcp-{mark}-"


def _remove_orphaned_folders() -> None:
    """Remove the scratch folders of owners that are gone and whose reaper could not remove them (killed with them:
    a container stopped, a kill of every process), so that a host's temporary folder does not fill run after run.
    A folder whose owner's pid is alive (its owner, or another process since) is left alone."""
    for folder in Path(tempfile.gettempdir()).glob(_scratch_prefix("*") + "*"):
        pid = folder.name.removeprefix("agent-env-mcp-").split("-", 1)[0]
        if pid.isdigit() and not (_PROC / pid).exists():
            shutil.rmtree(folder, ignore_errors=True)


def scratch_folder() -> str:
    """A new scratch folder for a server's episode, named after this process's mark, so the reaper removes it
    too if this process dies without removing it itself."""
    return tempfile.mkdtemp(prefix=_scratch_prefix(_owner.current()))


def server_marks(server_id: str) -> dict[str, str]:
    """The variables a new server process carries: this process's mark and `server_id`."""
    return {OWNER_MARK: _owner.current(), SERVER_MARK: server_id}


def owner_mark() -> str:
    """This process's mark, as its servers carry it."""
    return _owner.current()


def marked_processes(variable: str, value: str) -> list[int]:
    """The ids of the live processes whose environment sets `variable` to `value` (none without `/proc`)."""
    wanted = f"{variable}={value}".encode()
    found = []
    with contextlib.suppress(OSError):
        for entry in os.listdir(_PROC):
            if not entry.isdigit():
                continue
            try:
                environ = (_PROC / entry / "environ").read_bytes()
            except OSError:
                continue
            if wanted in environ.split(b"\0") and not _is_zombie(entry):
                found.append(int(entry))
    return found


def kill_marked(variable: str, value: str) -> int:
    """Kill (SIGKILL) every process whose environment sets `variable` to `value`, with its process group; return
    how many were found. Never this process's own group."""
    own_group = os.getpgid(0)
    pids = marked_processes(variable, value)
    for pid in pids:
        with contextlib.suppress(OSError):
            group = os.getpgid(pid)
            if group not in (own_group, 0, 1):
                os.killpg(group, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
    return len(pids)


def _is_zombie(pid: str) -> bool:
    try:
        status = (_PROC / pid / "stat").read_text()
    except OSError:
        return True
    return status.rpartition(")")[2].split()[:1] == ["Z"]


__all__ = [
    "OWNER_MARK",
    "SERVER_MARK",
    "kill_marked",
    "marked_processes",
    "owner_mark",
    "scratch_folder",
    "server_marks",
]
