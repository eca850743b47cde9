"""Connections to one server, started before they are needed: a fresh one per episode, or one shared by all.

A pool keeps spare connections ready (each started, initialized and its tools checked) so that an episode's reset
takes one without waiting on a spawn. The connection that listed the tools is the first spare; from the first
episode on, it keeps at least `warm` spares, and as many as the episodes that ran at once
before minus the ones running now, so a trainer that resets its N environments together finds N ready. A connection
leaves the pool for one episode and is closed when the episode lets go of it (its process stopped, its scratch folder
removed); a new spare starts in its place. A shared server (`StdioServer(shared=True)`) has one connection that every
episode uses, started again if it dies.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from agent_env._loop import spawn
from agent_env.mcp._connection import Connection, Verify
from agent_env.mcp._servers import Server
from agent_env.mcp.errors import MCPStartError

logger = logging.getLogger("agent_env.mcp")


class ServerPool:
    """The connections to one server for one environment class in this process.

    Args:
        server: The server.
        warm: The fewest spare connections kept ready.
        start_timeout: Seconds a connection may take to start.
        verify: Checks each new connection's tools against the published ones.
    """

    def __init__(
        self, server: Server, *, warm: int, start_timeout: float, verify: Verify | None = None
    ) -> None:
        self.server = server
        self.warm = warm
        self.start_timeout = start_timeout
        self.verify = verify
        self.in_use = 0
        self.peak = 0
        self._spares: deque[Connection] = deque()
        self._starting: set[asyncio.Task[Connection]] = set()
        self._shared: Connection | None = None
        self._shared_lock = asyncio.Lock()
        self._refill_failed = False
        self._closed = False
        self.handshake = "auto"
        """The handshake new connections make: "auto" until the server shows it speaks only `initialize`."""

    async def start(self) -> tuple[Connection, list[Any]]:
        """Start the first connection and list its tools (when the environment is built); it becomes a spare."""
        connection = await self._open(verify=False)
        try:
            tools = await connection.list_tools()
        except BaseException:
            await connection.close()
            raise
        if self.server.shared:
            self._shared = connection
        else:
            # More spares start with the first episode: a process that only lists tools keeps just this one.
            self._spares.append(connection)
        return connection, tools

    async def acquire(self, episode: str) -> Connection:
        """A connection for `episode`: a spare (checked alive), else a new one; then start spares to replace it.

        Raises:
            The errors of `Connection.open` when no spare is ready and a new connection fails to start, or
            `ToolsChangedError` when its server lists other tools.
        """
        self._closed = False  # a pool closed between runs keeps spares again once it is used
        if self.server.shared:
            return await self._acquire_shared(episode)
        self.in_use += 1
        self.peak = max(self.peak, self.in_use)
        try:
            connection = await self._take()
        except BaseException:
            self.in_use -= 1
            raise
        connection.episode = episode
        self._refill()
        return connection

    def release(self, connection: Connection) -> None:
        """Let go of an episode's connection: close it (its process stops) and start a spare in its place. A shared
        server's connection stays (or, replaced when it died, was closed then)."""
        if self.server.shared:
            return
        self.in_use -= 1
        spawn(connection.close())
        self._refill()

    async def close(self) -> None:
        """Close every spare (and the shared connection); connections out with episodes close when released. The
        pool stays usable: the next `acquire` starts connections again."""
        self._closed = True
        for task in list(self._starting):
            task.cancel()
        spares = [*self._spares, *([self._shared] if self._shared is not None else [])]
        self._spares.clear()
        self._shared = None
        await asyncio.gather(*(connection.close() for connection in spares), return_exceptions=True)

    def spares(self) -> int:
        """How many connections are ready and waiting."""
        return len(self._spares)

    async def _take(self) -> Connection:
        while self._spares:
            connection = self._spares.popleft()
            if await connection.ping():
                return connection
            spawn(connection.close())
        starting = [task for task in self._starting if not task.done()]
        if starting:  # one is on its way: wait for it rather than start another
            task = starting[0]
            try:
                connection = await asyncio.shield(task)
            except asyncio.CancelledError:
                if not task.cancelled():  # this acquire was cancelled, not the spare
                    raise
            except Exception:
                pass  # the spare failed to start: start one here, and raise its error if it fails too
            else:
                if connection in self._spares:
                    self._spares.remove(connection)
                    return connection
        connection = await self._open(verify=True)
        self._refill_failed = False
        return connection

    async def _acquire_shared(self, episode: str) -> Connection:
        async with self._shared_lock:
            if self._shared is None or await self._shared.gone():  # it may have died between episodes
                if self._shared is not None:
                    spawn(self._shared.close())
                self._shared = await self._open(verify=True)
            self._shared.episode = f"{episode} (shared)"
            return self._shared

    async def _open(self, *, verify: bool) -> Connection:
        connection = await self._connect()
        if verify and self.verify is not None:
            try:
                self.verify(connection, await connection.list_tools())
            except BaseException:
                await connection.close()
                raise
        return connection

    async def _connect(self) -> Connection:
        """A new, initialized connection, in the handshake the server speaks. The first probes `server/discover`;
        once the server has answered only `initialize` (an mcp 1.x server, most of those in use), every later
        connection sends `initialize` alone, sparing the probe (up to the SDK's 10 s for a server that leaves it
        unanswered). A server that dies on the probe (older 1.x releases) is started once more, without it."""
        connection = Connection(
            self.server, start_timeout=self.start_timeout, verify=self.verify, handshake=self.handshake
        )
        try:
            await connection.open()
        except MCPStartError as error:
            if self.handshake == "legacy" or not connection.closed_while_starting:
                raise
            connection = Connection(
                self.server, start_timeout=self.start_timeout, verify=self.verify, handshake="legacy"
            )
            try:
                await connection.open()
            except MCPStartError:
                raise error from None
            logger.info(
                "agent_env: %s died on the 2026 handshake's probe; it is started without it", connection.label
            )
        if connection.legacy:
            self.handshake = "legacy"
        return connection

    def _refill(self) -> None:
        """Start spares up to the target: at least `warm`, and as many as ran at once before minus those running."""
        if self._closed or self._refill_failed:
            return
        wanted = max(self.warm, self.peak - self.in_use) - len(self._spares) - len(self._starting)
        for _ in range(max(wanted, 0)):
            task = asyncio.get_running_loop().create_task(self._start_spare())
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)
            task.add_done_callback(_retrieved)

    async def _start_spare(self) -> Connection:
        try:
            connection = await self._open(verify=True)
        except Exception as error:
            # Stop starting spares until an episode's own start succeeds: a server that cannot start would
            # otherwise be spawned again and again in the background. The next acquire starts one itself and
            # raises why.
            self._refill_failed = True
            logger.debug("agent_env: a spare of %s failed to start: %s", self.server.label, error)
            raise
        if self._closed:
            await connection.close()
        else:
            self._spares.append(connection)
            self._refill_failed = False
        return connection


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Mark a spare's failure as seen (it was logged): asyncio would otherwise warn that nobody read it."""
    if not task.cancelled():
        task.exception()


__all__ = ["ServerPool"]
