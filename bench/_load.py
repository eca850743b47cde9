"""A light HTTP/1.1 load for the server benchmarks: episodes on connections of their own, each sending its calls one
after another, as a `RemoteSession` does, from asyncio streams with h11 (the parser uvicorn's h11 protocol uses).

Why not httpx: on a machine with two cores, the clients share the CPU with the server they measure, and an httpx
`AsyncClient` spends about twice the server's CPU on each call (700-1,100 us against 370-630 us for a desk call,
measured here), so the figures measured the clients. Here a call costs the client about a fifth of that (h11 builds the request, with
the headers httpx sends, and parses the answer). What the server sees is the same.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11


@dataclass(frozen=True)
class Call:
    """One request: its method, path, JSON body (None: no body) and headers beyond httpx's own."""

    method: str
    path: str
    body: Any = None
    headers: tuple[tuple[bytes, bytes], ...] = ()


class Answer:
    """One answer: the status and the body."""

    __slots__ = ("body", "status")

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


class Connection:
    """One keep-alive HTTP/1.1 connection to the server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader = reader
        self.writer = writer
        self.host = host.encode()
        self.state = h11.Connection(h11.CLIENT)
        self.last_headers: list[tuple[bytes, bytes]] = []

    @classmethod
    async def open(cls, url: str) -> Connection:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        return cls(reader, writer, parts.netloc)

    async def request(self, call: Call) -> Answer:
        """Send one request, with the headers httpx sends, and read its answer."""
        body = b"" if call.body is None else json.dumps(call.body).encode()
        headers = [
            (b"host", self.host),
            (b"accept", b"*/*"),
            (b"accept-encoding", b"gzip, deflate"),
            (b"connection", b"keep-alive"),
            (b"user-agent", b"python-httpx/0.28.1"),
            (b"content-length", str(len(body)).encode()),
        ]
        if call.body is not None:
            headers.append((b"content-type", b"application/json"))
        headers += call.headers
        request = h11.Request(method=call.method, target=call.path, headers=headers)
        sent = (
            self.state.send(request)
            + self.state.send(h11.Data(data=body))
            + self.state.send(h11.EndOfMessage())
        )
        self.writer.write(sent)
        status, answer = 0, bytearray()
        while True:
            event = self.state.next_event()
            if event is h11.NEED_DATA:
                data = await self.reader.read(65536)
                if not data:
                    raise ConnectionError("the server closed the connection")
                self.state.receive_data(data)
            elif isinstance(event, h11.Response):
                status = event.status_code
                self.last_headers = list(event.headers)
            elif isinstance(event, h11.Data):
                answer += event.data
            elif isinstance(event, h11.EndOfMessage):
                self.state.start_next_cycle()
                return Answer(status, bytes(answer))

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def drive(
    connection: Connection, calls: Sequence[Call], count: int = 0, *, until: float | None = None
) -> list[float]:
    """Make `count` calls (cycling through `calls`) one after another, or as many as fit before `until` (a
    `time.perf_counter()` reading); each one's latency in seconds.

    Raises:
        RuntimeError: A call was not answered 200, or (over MCP) was a tool error.
    """
    latencies: list[float] = []
    while len(latencies) < count if until is None else time.perf_counter() < until:
        started = time.perf_counter()
        answer = await connection.request(calls[len(latencies) % len(calls)])
        latencies.append(time.perf_counter() - started)
        if answer.status != 200 or b'"isError":true' in answer.body or _ors_failed(answer.body):
            raise RuntimeError(f"answered {answer.status}: {answer.body[:300]!r}")
    return latencies


def _ors_failed(body: bytes) -> bool:
    """Whether an ORS call's stream ended in an error, a refusal, or a tool's error."""
    return body.startswith(b"event: task_id") and (
        b"event: error" in body or b'"ok":false' in body or b'"metadata":{"error"' in body
    )


MCP_ACCEPT = (b"accept", b"application/json, text/event-stream")


async def mcp_session(connection: Connection, query: str = "") -> tuple[tuple[bytes, bytes], ...]:
    """Open an MCP session (the initialize handshake) on `connection`; the headers its calls carry."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "load", "version": "1"},
        },
    }
    answer = await connection.request(Call("POST", f"/mcp{query}", initialize, (MCP_ACCEPT,)))
    if answer.status != 200:
        raise RuntimeError(f"initialize answered {answer.status}: {answer.body[:300]!r}")
    session = next(value for name, value in connection.last_headers if name == b"mcp-session-id")
    headers = (MCP_ACCEPT, (b"mcp-session-id", session), (b"mcp-protocol-version", b"2025-11-25"))
    await connection.request(
        Call("POST", f"/mcp{query}", {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    )
    return headers


def mcp_call(name: str, arguments: Any, headers: tuple[tuple[bytes, bytes], ...], query: str = "") -> Call:
    """A `tools/call` request in an MCP session."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return Call("POST", f"/mcp{query}", body, headers)


async def ors_session(connection: Connection, row: dict[str, Any]) -> tuple[tuple[bytes, bytes], ...]:
    """Open an ORS session on `connection` (`/create_session`, then `/create` with the row as its task); the headers
    its calls carry."""
    answer = await connection.request(Call("POST", "/create_session", {}))
    sid = answer.body.split(b"data: ", 1)[1].split(b"\r\n", 1)[0]
    headers = ((b"x-session-id", sid),)
    answer = await connection.request(Call("POST", "/create", {"task_spec": row}, headers))
    if answer.status != 200:
        raise RuntimeError(f"/create answered {answer.status}: {answer.body[:300]!r}")
    return headers


@dataclass(frozen=True)
class Plan:
    """What each episode of a load does: over which surface (`control`: the control API; `mcp`: an MCP session;
    `ors`: an ORS session, the environment named `ors_name` on the wire), from which rows (episode `i` starts from
    row `i` mod their number), and its calls in order (cycled)."""

    surface: str
    rows: list[dict[str, Any]]
    calls: list[tuple[str, Any]]
    ors_name: str = ""


async def open_episode(connection: Connection, plan: Plan, index: int) -> list[Call]:
    """Start episode `index` of `plan` on `connection`; the calls it makes, as requests."""
    row = plan.rows[index % len(plan.rows)]
    if plan.surface == "mcp":
        query = "?" + "&".join(f"{key}={value}" for key, value in row.items()) if row else ""
        headers = await mcp_session(connection, query)
        return [mcp_call(name, arguments, headers, query) for name, arguments in plan.calls]
    if plan.surface == "ors":
        headers = await ors_session(connection, row)
        path = f"/{plan.ors_name}/call"
        return [
            Call("POST", path, {"name": name, "input": arguments}, headers) for name, arguments in plan.calls
        ]
    answer = await connection.request(Call("POST", "/episodes", row))
    if answer.status != 201:
        raise RuntimeError(f"opening an episode answered {answer.status}: {answer.body[:300]!r}")
    episode_id = answer.json()["episode_id"]
    return [Call("POST", f"/episodes/{episode_id}/tools/{name}", arguments) for name, arguments in plan.calls]


@dataclass(frozen=True)
class Share:
    """What one client process measured: each timed call's latency, when its first call started and its last
    finished, its CPU seconds, and the server's CPU seconds (user and system) read at those two moments."""

    latencies: list[float]
    started: float
    finished: float
    cpu: float
    server_cpu: tuple[float, float] = (0.0, 0.0)


def _server_cpu(server: Any) -> float:
    if server is None:
        return 0.0
    times = server.cpu_times()
    return float(times.user + times.system)


async def _share(
    url: str, plan: Plan, episodes: range, calls: int, seconds: float, ready: Any, server_pid: int | None
) -> Share:
    connections = [await Connection.open(url) for _ in episodes]
    requests = [await open_episode(c, plan, index) for c, index in zip(connections, episodes, strict=True)]
    await asyncio.gather(
        *(drive(c, r, len(r)) for c, r in zip(connections, requests, strict=True))
    )  # warm up
    server = None
    if server_pid is not None:
        import psutil

        server = psutil.Process(server_pid)
    await asyncio.to_thread(ready.wait)  # every client process has opened and warmed its episodes
    server_started = _server_cpu(server)
    started, cpu = time.time(), time.process_time()
    until = time.perf_counter() + seconds if seconds else None
    runs = await asyncio.gather(
        *(drive(c, r, calls, until=until) for c, r in zip(connections, requests, strict=True))
    )
    finished, cpu = time.time(), time.process_time() - cpu
    server_finished = _server_cpu(server)
    for connection in connections:
        await connection.close()
    latencies = [latency for run in runs for latency in run]
    return Share(latencies, started, finished, cpu, (server_started, server_finished))


def _process(
    url: str, plan: Plan, episodes: range, calls: int, seconds: float, ready: Any, server_pid: int | None
) -> Share:
    return asyncio.run(_share(url, plan, episodes, calls, seconds, ready, server_pid))


@dataclass(frozen=True)
class Measured:
    """A load's outcome: calls per second, latency percentiles (ms), the clients' CPU per call (us), and the server's
    (us; 0 when its process was not named)."""

    calls: int
    rate: float
    p50: float
    p99: float
    client_cpu_us: float
    server_cpu_us: float = 0.0


def run_load(
    url: str,
    plan: Plan,
    episodes: int,
    *,
    calls: int = 0,
    seconds: float = 0.0,
    processes: int = 2,
    server_pid: int | None = None,
) -> Measured:
    """Drive `episodes` concurrent episodes of `plan` from `processes` client processes, each episode on its own
    connection making `calls` calls one after another (or calling for `seconds`), all starting together once every
    client has opened and warmed its episodes.

    With `server_pid`, the server's CPU per call is measured over the timed calls alone: from the first client's
    reading as the calls start to the last one's as they end, so that opening and warming the episodes (a desk
    episode's reset costs as much as dozens of calls) is not shared out over the calls."""
    import multiprocessing
    import statistics

    processes = min(processes, episodes)
    shares = [range(index, episodes, processes) for index in range(processes)]
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(processes) as pool:
        ready = manager.Barrier(processes)
        pending = [
            pool.apply_async(_process, (url, plan, share, calls, seconds, ready, server_pid))
            for share in shares
        ]
        results: list[Share] = [result.get(timeout=600) for result in pending]
    latencies = sorted(latency for share in results for latency in share.latencies)
    elapsed = max(share.finished for share in results) - min(share.started for share in results)
    cuts = statistics.quantiles(latencies, n=100)
    cpu = sum(share.cpu for share in results)
    server = min(share.server_cpu[0] for share in results), max(share.server_cpu[1] for share in results)
    return Measured(
        len(latencies),
        len(latencies) / elapsed,
        cuts[49] * 1e3,
        cuts[98] * 1e3,
        cpu / len(latencies) * 1e6,
        (server[1] - server[0]) / len(latencies) * 1e6,
    )
