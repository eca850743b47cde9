"""One live MCP session with one server, on agent_env's background loop: a stdio process of its own, or an HTTP session.

A connection runs the official SDK's `mcp.Client` inside a task of its own (the SDK's transports must be entered and
left in one task), lists the server's tools (every page), and calls them under a timeout. Whatever goes wrong is
raised as an agent_env error that names the server and the episode the connection serves: a command that does not
start (with the end of its stderr), a server that died (the episode's state went with it), a call that hung (the
process is killed), a tool list that changed, a URL that refuses or wants credentials. A server's non-MCP output on
stdout is logged once; it breaks only the messages it mangles, which then time out naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import IO, Any

from agent_env._loop import off_loop, spawn
from agent_env._version import __version__
from agent_env.errors import AgentEnvError, ToolError
from agent_env.mcp._servers import HttpServer, Server, StdioServer
from agent_env.mcp._supervisor import SERVER_MARK, kill_marked, scratch_folder, server_marks
from agent_env.mcp.errors import (
    MCPServerError,
    MCPServerLostError,
    MCPStartError,
    MCPTimeoutError,
    ToolsChangedError,
)

logger = logging.getLogger("agent_env.mcp")

STDERR_TAIL = 2_000
"""How much of the end of a server's stderr a start failure quotes, in characters."""
LOST_STDERR_TAIL = 600
"""How much of what a server wrote to stderr after it started the error of a server lost mid-episode quotes, in
characters: the model reads that error too (TRL hands it a failed call's error), so it is kept short."""
MAX_TOOL_PAGES = 100
"""The most `tools/list` pages read from one server: a cursor that never ends is refused, not followed for ever."""
PING_TIMEOUT = 2.0
"""Seconds a warm connection may take to answer a ping before it is thought dead."""
_STOP_TIMEOUT = 6.0
"""Seconds the SDK's shutdown (stdin closed, wait, terminate, kill) may take before the process is killed here."""
CLIENT_NAME = "agent-env"
BEFORE_EPISODES = "(before it served one)"
"""A connection's episode until it serves one (a spare, or the one that listed the tools)."""


Verify = Callable[["Connection", list[Any]], None]
"""Checks a server's listing against what the environment published; raises `ToolsChangedError` if it differs."""


class Connection:
    """One MCP session with one server.

    Args:
        server: The server.
        start_timeout: Seconds the server may take to start and answer `initialize`.
        verify: Checks the server's listing when it says its tools changed.
        handshake: The SDK client's `mode`: "auto" probes `server/discover` (2026-07-28) and falls back to
            `initialize`; "legacy" sends `initialize` alone, as clients before 2026 did.
    """

    def __init__(
        self,
        server: Server,
        *,
        start_timeout: float,
        verify: Verify | None = None,
        handshake: str = "auto",
    ) -> None:
        self.server = server
        self.handshake = handshake
        self.verify = verify
        """Checks a fresh listing against the published tools; raises `ToolsChangedError` if it differs."""
        self.start_timeout = start_timeout
        self.id = uuid.uuid4().hex[:12]
        self.episode = BEFORE_EPISODES
        """The episode this connection serves, as messages name it."""
        self.server_name: str | None = None
        """The name the server gave itself in `initialize`."""
        self.legacy = False
        """Whether the server speaks only the protocol from before 2026 (`initialize`): it answered no probe."""
        self.closed_while_starting = False
        """Whether the server closed the connection (died) before it was ready."""
        self.directory: str | None = None
        self._client: Any = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._done = asyncio.Event()
        self._failure: BaseException | None = None
        self._lost: str | None = None
        self._stderr: IO[str] | None = None
        self._stderr_started = 0
        """How much the server had written to stderr when it was ready: a later failure quotes only what came after
        (an mcp 1.x server logs its refusal of the 2026 client's `server/discover` probe while starting)."""
        self._junk: str | None = None
        self._refused_with: int | None = None
        """The HTTP status (401 or 403) an HTTP server refused the credentials with."""
        self._tools_changed: str | None = None
        self._checking: asyncio.Task[None] | None = None
        """The check of a listing the server said changed, while it runs: calls wait for it."""
        self._task: asyncio.Task[None] | None = None
        self._cleaned = False

    @property
    def label(self) -> str:
        """How messages name the server: its own name and how it was reached."""
        named = f"'{self.server_name}' " if self.server_name and self.server_name != self.server.label else ""
        return f"MCP server {named}({self.server.label})"

    async def open(self) -> None:
        """Start the server (or the HTTP session) and initialize it.

        Raises:
            MCPStartError: It did not start, did not answer `initialize` in time, or (over HTTP) refused the
                credentials.
        """
        if isinstance(self.server, StdioServer):
            if self.server.per_episode_dir:
                self.directory = scratch_folder()
            cwd = self.server.resolved(self.directory)[2]
            if cwd is not None and not os.path.isdir(cwd):
                self._clean_up()
                raise MCPStartError(
                    f"{self.label} could not start: its working directory {cwd!r} (cwd=) does not exist"
                )
        self._task = asyncio.create_task(self._run(), name=f"agent-env-mcp-{self.id}")
        try:
            await asyncio.wait_for(self._ready.wait(), self.start_timeout)
        except TimeoutError:
            hint = (
                "check that the URL is the server's MCP endpoint and that it answers"
                if isinstance(self.server, HttpServer)
                else "check that the command starts an MCP server on stdio"
            )
            late = MCPStartError(
                f"{self.label} did not finish starting within {self.start_timeout:g} s{self._stderr_tail()}"
                f"{self._junk_note()}; {hint} (or raise start_timeout=)"
            )
            await self._abandon()  # after reading its stderr, which closing removes
            raise late from None
        except BaseException:  # cancelled while starting: stop what was started
            await asyncio.shield(self.close())
            raise
        if self._failure is not None:
            error = self._start_error(self._failure)
            await self.close()
            raise error from None

    async def list_tools(self) -> list[Any]:
        """Every tool the server lists, following `tools/list` pagination, within `start_timeout` in all.

        Raises:
            MCPTimeoutError: The listing took longer; the server is stopped (it stalls).
            MCPServerError: The server refused to list, or listed what is not MCP, or pages without end.
        """
        try:
            async with asyncio.timeout(self.start_timeout):
                return await self._list_pages()
        except TimeoutError:
            during = "" if self.episode == BEFORE_EPISODES else f" (in episode {self.episode})"
            self._lost = (
                f"{self.label} did not list its tools within {self.start_timeout:g} s{during}; the server was "
                "stopped (or raise start_timeout=)"
            )
            spawn(self.close())
            raise MCPTimeoutError(self._lost) from None

    async def _list_pages(self) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await self._request(
                partial(self._client.list_tools, cursor=cursor), "listing its tools", refusal=MCPServerError
            )
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise MCPServerError(
            f"{self.label} lists its tools over more than {MAX_TOOL_PAGES} pages; agent_env stopped following them"
        )

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float, *, episode: str | None = None
    ) -> Any:
        """Call one tool for `episode` (the connection's own by default; a shared server serves many) and return the
        SDK's `CallToolResult`. A check of the server's tools that is under way (it said they changed) is waited for
        first, so that no call reaches a server whose tools are not the ones the model was shown.

        Raises:
            MCPTimeoutError: No answer within `timeout`; the server is stopped and the episode's state is gone.
            MCPServerLostError: The server died or was lost earlier in the episode.
            ToolsChangedError: The server said its tools changed, and they did.
            ToolError: The server refused the request itself (a JSON-RPC error), with its message.
        """
        episode = episode or self.episode
        action = f"tool '{name}'"
        try:
            async with asyncio.timeout(timeout):
                if self._checking is not None:
                    await asyncio.shield(self._checking)
                if self._tools_changed is not None:
                    raise ToolsChangedError(self._tools_changed)
                return await self._request(lambda: self._client.call_tool(name, arguments), action, episode)
        except TimeoutError:
            gone = (
                "its session was closed" if isinstance(self.server, HttpServer) else "the server was stopped"
            )
            self._lost = (
                f"{action} got no answer from {self.label} within {timeout:g} s in episode {episode}"
                f"{self._junk_note()}; {gone} and {self._state_gone()}"
            )
            spawn(self.close())  # in the background: the caller has waited long enough
            raise MCPTimeoutError(self._lost) from None

    async def ping(self) -> bool:
        """Whether the server answers a ping promptly (a warm process may have died while it waited); any answer
        counts, an error too (a 2026-07-28 server has no ping, and says so)."""
        return await self._ping() is True

    async def gone(self) -> bool:
        """Whether the server is gone: its connection failed or closed, which a ping shows at once. A late answer does
        not count: a shared server busy with another episode's call is slow, not dead."""
        return await self._ping() is False

    async def _ping(self) -> bool | None:
        """True if the server answered a ping, False if its connection failed or closed, None if no answer came
        within `PING_TIMEOUT`."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        if not self.alive:
            return False
        try:
            await asyncio.wait_for(self._client.session.send_ping(), PING_TIMEOUT)
        except TimeoutError:
            return None
        except MCPError as error:
            return error.code != CONNECTION_CLOSED
        except Exception:
            return False
        return True

    def check_alive(self) -> None:
        """Raise what failed on this connection (the server died, hung, or changed its tools), if anything did.

        Raises:
            MCPServerLostError, ToolsChangedError: As a call would now.
        """
        if self._lost is not None:
            raise MCPServerLostError(self._lost)
        if self._tools_changed is not None:
            raise ToolsChangedError(self._tools_changed)

    @property
    def alive(self) -> bool:
        """Whether the connection is open and nothing has gone wrong on it."""
        return (
            self._ready.is_set() and self._failure is None and self._lost is None and not self._stop.is_set()
        )

    async def close(self) -> None:
        """Stop the server (the SDK closes stdin, waits, then terminates its process group), kill anything left
        with its mark, and remove its scratch folder; never raises."""
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._done.wait()), _STOP_TIMEOUT)
            if (
                not self._done.is_set()
            ):  # still starting (an HTTP server that never answers), or stuck closing
                self._task.cancel()
        await off_loop(
            self._clean_up
        )  # a scan of /proc and a folder removed: off the loop (here once exiting)

    async def _abandon(self) -> None:
        """Stop a connection that never became ready, at once: its process is killed (there is no session to end
        gently), so the SDK's shutdown has nothing to wait for."""
        self._stop.set()
        if isinstance(self.server, StdioServer):
            await off_loop(kill_marked, SERVER_MARK, self.id)
        if self._task is not None:
            self._task.cancel()
        await self.close()

    async def _request(
        self,
        request: Callable[[], Awaitable[Any]],
        action: str,
        episode: str | None = None,
        *,
        refusal: type[AgentEnvError] = ToolError,
    ) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        if self._lost is not None:  # lost by an earlier request (another episode's, on a shared server)
            raise MCPServerLostError(f"{action} was not sent: {self._lost}")
        try:
            return await request()
        except MCPError as error:
            # CONNECTION_CLOSED is also JSON-RPC's generic server error (-32000): a server answering with it is
            # alive, and what it said is a refusal like any other; only a connection that is gone is a loss.
            if error.code != CONNECTION_CLOSED or (
                not self._stop.is_set() and await self._ping() is not False
            ):
                raise refusal(f"{self.label} refused {action}: {_short(error.message, 2_000)}") from None
            if self._stop.is_set():  # closed here (the episode ended or was reset), not by the server
                raise MCPServerLostError(
                    f"{action} was cut short in episode {episode or self.episode}: the episode was closed or reset "
                    "while it ran"
                ) from None
            next_reset = (
                "opens a new session" if isinstance(self.server, HttpServer) else "starts a fresh server"
            )
            self._lost = (
                f"{self.label} died or closed the connection during episode {episode or self.episode} ({action})"
                f"{self._stderr_tail(since_ready=True)}; {self._state_gone()}, and the next reset {next_reset}"
            )
            spawn(self.close())
            raise MCPServerLostError(self._lost) from None
        except AgentEnvError:
            raise
        except Exception as error:  # the SDK could not read the answer: a result that breaks the protocol
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise MCPServerError(
                f"{self.label} answered {action} in episode {episode or self.episode} with what is not valid MCP "
                f"({type(error).__name__}: {_short(first)}): a fault of the server, not of the call"
            ) from None

    async def _run(self) -> None:
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        try:
            async with self._client_context() as client:
                self._client = client
                info = client.server_info
                self.server_name = getattr(info, "name", None)
                self.legacy = client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
                watcher = asyncio.create_task(self._watch_tools(client))
                self._stderr_started = self._stderr_size()
                self._ready.set()
                try:
                    await self._stop.wait()
                finally:
                    watcher.cancel()
                    await asyncio.gather(watcher, return_exceptions=True)
        except BaseException as error:  # the SDK raises exception groups; the first real cause is what counts
            self._failure = error
            if not isinstance(error, Exception):
                raise
        finally:
            self._ready.set()
            self._done.set()

    @contextlib.asynccontextmanager
    async def _client_context(self) -> AsyncIterator[Any]:
        from mcp import Client
        from mcp_types import Implementation

        info = Implementation(name=CLIENT_NAME, version=__version__)
        async with contextlib.AsyncExitStack() as stack:
            transport = await self._transport(stack)
            client = Client(
                transport,
                cache=None,
                client_info=info,
                message_handler=self._on_message,
                mode=self.handshake,
            )
            yield await stack.enter_async_context(client)

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        server = self.server
        if isinstance(server, HttpServer):
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async def remember_refusal(response: Any) -> None:
                if response.status_code in (401, 403):
                    self._refused_with = response.status_code

            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=server.request_headers(),
                    timeout=httpx2.Timeout(30.0, read=300.0),
                    event_hooks={"response": [remember_refusal]},
                )
            )
            return streamable_http_client(server.url, http_client=http)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        args, env, cwd = server.resolved(self.directory)
        # Kept open for the server's life (the process writes into it); closed in _clean_up.
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        parameters = StdioServerParameters(
            command=server.command,
            args=args,
            env={**env, **server_marks(self.id)},
            cwd=cwd,
            encoding_error_handler="replace",  # a line that is not UTF-8 is junk like any other, not a lost stream
        )
        return stdio_client(parameters, errlog=self._stderr)

    async def _on_message(self, message: Any) -> None:
        from mcp_types import ToolListChangedNotification

        if isinstance(message, Exception):
            self._on_junk(message)
        elif isinstance(message, ToolListChangedNotification) and self.verify is not None:
            self._tools_may_have_changed()

    def _on_junk(self, error: Exception) -> None:
        """Remember the first line of a server's stdout that is not MCP; warn once per server, not per process."""
        if self._junk is not None:
            return
        self._junk = _short(repr(_junk_line(error)))
        if id(self.server) in _junk_reported:
            return
        _junk_reported.add(id(self.server))
        logger.warning(
            "agent_env: %s wrote something that is not MCP to its stdout: %s (in episode %s; said once per server). A "
            "stdio server must write only MCP messages there, and its logs on stderr: a line glued to a message "
            "loses that message, and the call waiting for it times out.",
            self.label,
            self._junk,
            self.episode,
        )

    async def _watch_tools(self, client: Any) -> None:
        """Listen for a changed tool list on a 2026-07-28 connection, from a server that says it sends one (an
        older server notifies without being asked: `_on_message`)."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools = getattr(client.server_capabilities, "tools", None)
        if self.verify is None or not getattr(tools, "list_changed", False):
            return
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _ in subscription:
                    await self._tools_may_have_changed()
        except Exception as error:  # a server that cannot keep a subscription still runs episodes
            logger.debug("agent_env: listening for tool changes of %s ended: %s", self.label, error)

    def _tools_may_have_changed(self) -> asyncio.Task[None]:
        """Start checking the server's listing (it said its tools changed), once at a time; calls wait for it."""
        if self._checking is None:
            self._checking = asyncio.get_running_loop().create_task(self._check_tools())
        return self._checking

    async def _check_tools(self) -> None:
        """Compare the listing the server now gives with the published one (it said its tools changed)."""
        assert self.verify is not None
        try:
            self.verify(self, await self.list_tools())
        except ToolsChangedError as error:
            self._tools_changed = f"{error} (during episode {self.episode}); the episode cannot go on"
        except Exception as error:
            logger.debug("agent_env: relisting the tools of %s failed: %s", self.label, error)
        finally:
            self._checking = None

    def _start_error(self, failure: BaseException) -> MCPStartError:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        cause = _root_cause(failure)
        self.closed_while_starting = isinstance(cause, MCPError) and cause.code == CONNECTION_CLOSED
        status = self._refused_with
        if status is not None:
            return MCPStartError(
                f"{self.label} refused the credentials (HTTP {status}); pass token= (or headers=) to HttpServer, or "
                "on the command line --mcp-header 'Authorization: Bearer ${TOKEN}' with TOKEN exported"
            )
        if isinstance(cause, FileNotFoundError):
            return MCPStartError(
                f"{self.label} could not start: command {self.server.command!r} was not found"  # type: ignore[union-attr]
                " (is it installed and on PATH?)"
            )
        detail = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        if isinstance(self.server, HttpServer):
            return MCPStartError(
                f"{self.label} did not answer initialize ({_short(detail)}); is an MCP server listening at "
                f"{self.server.url}, and is that its MCP endpoint (often /mcp)?"
            )
        return MCPStartError(
            f"{self.label} could not start or did not answer initialize ({_short(detail)}){self._stderr_tail()}"
            f"{self._junk_note()}"
        )

    def _stderr_tail(self, *, since_ready: bool = False) -> str:
        """The end of what the server wrote to stderr, as a message quotes it: since it started, or (`since_ready`,
        for a failure mid-episode) since it was ready, shorter."""
        if self._stderr is None:
            return ""
        start, limit = (self._stderr_started, LOST_STDERR_TAIL) if since_ready else (0, STDERR_TAIL)
        try:  # read where the server wrote, without moving the offset it shares with this process
            fd = self._stderr.fileno()
            size = os.fstat(fd).st_size
            begin = max(start, size - 4 * limit - 4)  # no more than the tail, in UTF-8's widest characters
            text = os.pread(fd, size - begin, begin).decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        tail = text.strip()[-limit:]
        if tail:
            return f"; the end of its stderr:\n{tail}"
        return "; it wrote nothing more to stderr" if since_ready else "; it wrote nothing to stderr"

    def _stderr_size(self) -> int:
        if self._stderr is None:
            return 0
        try:
            return os.fstat(self._stderr.fileno()).st_size
        except (OSError, ValueError):
            return 0

    def _state_gone(self) -> str:
        if self.server.shared:
            return "the state of every episode on this shared server is gone with it"
        return "the episode's state is gone with it"

    def _junk_note(self) -> str:
        return f"; it wrote non-MCP output to stdout ({self._junk})" if self._junk else ""

    def _clean_up(self) -> None:
        """Kill what is left of the server by its mark, remove its scratch folder, close its stderr; once."""
        if self._cleaned:
            return
        self._cleaned = True
        if isinstance(self.server, StdioServer):
            kill_marked(SERVER_MARK, self.id)
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.close()


_junk_reported: set[int] = set()
"""The servers (by the id of their description) whose junk on stdout was reported."""


def _junk_line(error: Exception) -> str:
    """The line that failed to parse as MCP: the input pydantic names, else the error's first line."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            found = errors()[0].get("input")
            if isinstance(found, str | bytes):
                return found.decode(errors="replace") if isinstance(found, bytes) else found
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _root_cause(error: BaseException) -> BaseException:
    """The first error inside nested exception groups, through `__cause__` where an SDK wrapped one."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    cause = error.__cause__ or error.__context__
    if (
        cause is not None
        and not isinstance(error, FileNotFoundError)
        and isinstance(cause, OSError | BaseExceptionGroup)
    ):
        return _root_cause(cause)
    return error


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["Connection"]
