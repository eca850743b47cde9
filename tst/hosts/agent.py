"""Run functions in a process on another host: the trainer on host A, driven by the tests in the root namespace.

The test process listens on a Unix socket (a file: it reaches across network namespaces), starts
`python -m tst.hosts.agent SOCKET` on a host, and sends it jobs: a function of `tst.hosts.trainer` by name, with
keyword arguments. Each job runs on its own thread in the agent, so a test can start calls, cause a fault while they
are in flight, and then collect what each saw. Results come back pickled; a job that raises comes back as its
traceback, raised in the test as `AgentError`.
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
import sys
import threading
import traceback
from concurrent.futures import Future
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

AUTHKEY_ENVIRONMENT = "AENV_AGENT_KEY"


class AgentError(RuntimeError):
    """A job failed in the agent; the message is its traceback there."""


class Agent:
    """The test side: a listener, and the connection of the one agent process that joins it.

    Args:
        path: Where the Unix socket goes.
    """

    def __init__(self, path: Path) -> None:
        self.key = secrets.token_hex(16)
        self._listener = Listener(str(path), family="AF_UNIX", authkey=self.key.encode())
        self._connection: Connection | None = None
        self._jobs: dict[int, Future[Any]] = {}
        self._ids = itertools.count()
        self._send_lock = threading.Lock()
        self._receiver = threading.Thread(target=self._receive, name="agent-replies", daemon=True)

    @property
    def address(self) -> str:
        return str(self._listener.address)

    def accept(self, timeout: float) -> None:
        """Wait for the agent process to connect (it must, within `timeout` seconds, or this raises)."""
        accepted: list[Connection] = []
        thread = threading.Thread(target=lambda: accepted.append(self._listener.accept()), daemon=True)
        thread.start()
        thread.join(timeout)
        if not accepted:
            self._listener.close()
            raise TimeoutError(f"the agent did not connect within {timeout:g} s")
        self._connection = accepted[0]
        self._receiver.start()

    def start(self, function: str, **kwargs: Any) -> Future[Any]:
        """Start `tst.hosts.trainer.<function>(**kwargs)` in the agent; its future holds the result."""
        assert self._connection is not None, "accept() first"
        job = next(self._ids)
        future: Future[Any] = Future()
        self._jobs[job] = future
        with self._send_lock:
            self._connection.send((job, function, kwargs))
        return future

    def call(self, function: str, *, within: float = 120.0, **kwargs: Any) -> Any:
        """Run `tst.hosts.trainer.<function>(**kwargs)` in the agent and return its result, which must come
        `within` seconds."""
        return self.start(function, **kwargs).result(timeout=within)

    def close(self) -> None:
        """Tell the agent to exit (jobs still running there end with it), and close the listener."""
        if self._connection is not None:
            with contextlib.suppress(OSError), self._send_lock:
                self._connection.send(None)
            self._receiver.join(
                timeout=10
            )  # the agent's exit ends the connection, and so the receiving thread
            self._connection.close()
        self._listener.close()
        for future in self._jobs.values():
            if not future.done():
                future.set_exception(AgentError("the agent went away before the job finished"))

    def _receive(self) -> None:
        assert self._connection is not None
        while True:
            try:
                job, ok, value = self._connection.recv()
            except (EOFError, OSError):
                break
            future = self._jobs.pop(job)
            if ok:
                future.set_result(value)
            else:
                future.set_exception(AgentError(value))
        for future in list(self._jobs.values()):
            if not future.done():
                future.set_exception(AgentError("the agent process ended before the job finished"))


def serve(address: str, key: str) -> None:
    """The agent side: connect, then run every job on its own thread until the test closes the connection."""
    from tst.hosts import trainer

    connection = Client(address, family="AF_UNIX", authkey=key.encode())
    lock = threading.Lock()

    def work(job: int, function: str, kwargs: dict[str, Any]) -> None:
        try:
            reply: tuple[int, bool, Any] = (job, True, getattr(trainer, function)(**kwargs))
        except BaseException:
            reply = (job, False, traceback.format_exc())
        with lock:
            connection.send(reply)

    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        if request is None:  # the test is done with this agent
            return
        job, function, kwargs = request
        threading.Thread(target=work, args=(job, function, kwargs), name=f"job-{job}", daemon=True).start()


if __name__ == "__main__":
    import os

    serve(sys.argv[1], os.environ[AUTHKEY_ENVIRONMENT])
    os._exit(0)  # do not wait for jobs still stuck in a fault: the test is done with them
