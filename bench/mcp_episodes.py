"""MCP-backed episodes on the real `@modelcontextprotocol/server-memory` (and server-filesystem, mcp-server-time):
what a reset costs, what agent_env adds to a call, memory per live episode, and each server's tool block in tokens.

Needs `make mcp-servers`. Prints:
- episode start: a reset that takes a warm process (the pool) against one that waits on a cold spawn (warm=0, every
  spare stopped first), p50 and p99 over the same count;
- calls per second over stdio, one session at a time, of a desk-equivalent call (a nested `create_entities`, about
  the size of a desk offer) and of `read_graph`, against the bare `mcp.Client` on the same event loop called the
  same way (awaited, or from a thread as TRL calls), one call of each in turn (medians): the overhead agent_env adds
  (validation, the session, the deadline, reading the result), in wall time and in this process's CPU, target under
  10%; and the hop alone (a thread's call to the loop and back), on asyncio's loop and uvloop's, through a future
  and through `run_sync`'s lock;
- the memory of a live episode: its server process (RSS), and the Python side;
- each real server's tool block in tokens: Qwen3's own tokenizer under qwen3, and (the Qwen3 vocabulary with each
  family's special tokens: indicative) gemma4 and gptoss, as their templates stand and as agent_env lowers them.
"""

from __future__ import annotations

import asyncio
import gc
import shutil
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent_env import AgentEnv  # noqa: E402
from agent_env._loop import run_sync, submit  # noqa: E402
from agent_env.mcp import StdioServer  # noqa: E402
from agent_env.mcp._supervisor import OWNER_MARK, marked_processes, owner_mark  # noqa: E402

MODULES = ROOT / ".cache" / "mcp-servers" / "node" / "node_modules" / "@modelcontextprotocol"
NODE = shutil.which("node") or str(ROOT / ".cache" / "mcp-servers" / "python" / "bin" / "node")
MEMORY = str(MODULES / "server-memory" / "dist" / "index.js")
FILESYSTEM = str(MODULES / "server-filesystem" / "dist" / "index.js")
TIME = str(ROOT / ".cache" / "mcp-servers" / "python" / "bin" / "mcp-server-time")
ENTITIES = {
    "entities": [
        {
            "name": f"person-{i}",
            "entityType": "person",
            "observations": ["engineer", "works on the grid desk"],
        }
        for i in range(4)
    ]
}
"""A desk-equivalent call: a nested array of four objects with string arrays (about 300 bytes of JSON, as a
`submit_dam_offers` with four curves is)."""
RESETS = 40


def memory_server() -> StdioServer:
    return StdioServer(NODE, [MEMORY], env={"MEMORY_FILE_PATH": "{episode_dir}/memory.jsonl"})


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def resets(env: AgentEnv, count: int, *, cold: bool) -> list[float]:
    """Milliseconds of each reset; a cold one first stops every spare, so the reset waits on a spawn."""
    pool = env.provider.environment.runtime.pools[""]
    times = []
    with env.open() as session:
        for _ in range(count):
            if cold:
                run_sync(pool.close())
            else:
                deadline = time.monotonic() + 10
                while pool.spares() < 1 and time.monotonic() < deadline:
                    time.sleep(0.01)
            start = time.perf_counter()
            session.reset()
            times.append((time.perf_counter() - start) * 1e3)
            session.reward()  # ends the episode: its server is let go
            time.sleep(0.25)  # a rollout's worth of time: the pool starts a spare meanwhile
    return times


async def timed(call: Any) -> tuple[float, float]:
    """Wall and this process's CPU milliseconds of one awaited call, measured on the loop that runs it."""
    wall, cpu = time.perf_counter(), time.process_time()
    await call()
    return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3


def overhead(name: str, arguments: dict[str, Any], calls: int = 600) -> list[tuple[float, float]]:
    """The bare `mcp.Client` (awaited on the loop, and called from a thread: the least a synchronous caller of it
    pays) and agent_env (the session of `env.factory()`'s environment awaited; its synchronous `call_tool`; and TRL's
    call, that environment's SchemaTool called as `tool(**arguments)`) on the same server build, on the same event
    loop, one call of each in turn, `calls` times: the median ms per call of each, wall and this process's CPU, each
    compared with the bare client called the same way. Returns the medians, (wall ms, CPU ms) per row.

    Driven from a thread, as TRL drives tools: each awaited call is timed on the loop that runs it (the thread that
    started it waits, taking no CPU), each synchronous one from the thread, hop included. Taking turns call by call,
    and medians, keeps the five under the same load on a machine whose load moves from second to second.
    """
    from mcp import Client, StdioServerParameters

    env = AgentEnv.mcp(memory_server(), warm=0)
    trained = env.factory()  # the TRL environment a trainer gets: its tool is what TRL calls
    trained.reset()
    trained_tool = getattr(trained, name)
    # Every agent_env row calls through its session, so that all of them reach one server process: two processes of
    # the same server answer 30-60 us apart in wall time (with the same CPU here), which would pass for agent_env's.
    session = trained._session
    folder = tempfile.mkdtemp(
        prefix="agent-env-bench-"
    )  # a memory file of its own, empty, as the episode's is
    parameters = StdioServerParameters(
        command=NODE, args=[MEMORY], env={"MEMORY_FILE_PATH": f"{folder}/memory.jsonl"}
    )
    bare_client: list[Any] = []
    opened, release = threading.Event(), threading.Event()

    async def hold_bare() -> None:  # the SDK's client must be entered and left in one task
        async with Client(parameters, cache=None) as bare:
            await bare.call_tool("create_entities", ENTITIES)  # the same graph on both servers
            bare_client.append(bare)
            opened.set()
            await asyncio.to_thread(release.wait)

    held = submit(hold_bare())
    opened.wait()
    bare = bare_client[0]
    trained.create_entities(**ENTITIES)  # the same graph on its server

    def synchronous(call: Any) -> tuple[float, float]:  # from a thread, blocking
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3

    ways = (
        lambda: run_sync(timed(lambda: bare.call_tool(name, arguments))),
        lambda: run_sync(timed(lambda: session.acall_tool(name, arguments))),
        lambda: synchronous(
            lambda: run_sync(bare.call_tool(name, arguments))
        ),  # the least a thread's call costs
        lambda: synchronous(lambda: session.call_tool(name, arguments)),
        lambda: synchronous(lambda: trained_tool(**arguments)),  # TRL's call: `tool(**arguments)`
    )
    rows: list[list[tuple[float, float]]] = [[] for _ in ways]
    try:
        for index in range(calls + 20):
            for way in (
                (index + step) % len(ways) for step in range(len(ways))
            ):  # each first, second, ... in turn
                figures = ways[way]()
                if index >= 20:  # the first calls warm caches up
                    rows[way].append(figures)
    finally:
        release.set()  # else the bare client's task, waiting in a thread, keeps the process from exiting
    held.result()
    session.close()
    env.close()
    shutil.rmtree(folder, ignore_errors=True)
    medians = [
        (statistics.median(wall for wall, _ in row), statistics.median(cpu for _, cpu in row)) for row in rows
    ]
    labels = (
        "bare mcp.Client, awaited",
        "agent_env, awaited",
        "bare mcp.Client, sync",
        "session.call_tool",
        "TRL's call (SchemaTool)",
    )
    bases = (None, 0, None, 2, 2)  # each is compared with the bare client called the same way
    for index, label in enumerate(labels):
        wall, cpu = medians[index]
        base = bases[index]
        if base is None:
            extra = "" if index == 0 else f"   the hop alone: {(wall - medians[0][0]) * 1e3:+4.0f} us wall"
        else:
            extra = (
                f"   {(wall / medians[base][0] - 1) * 100:+5.1f}% wall, {cpu - medians[base][1]:+.3f} ms CPU over "
                f"bare {'awaited' if base == 0 else 'sync'}"
            )
        print(
            f"  {name:16} {label:24} {wall:6.2f} ms/call ({1e3 / wall:5.0f}/s), client CPU {cpu:.3f} ms{extra}"
        )
    return medians


def hop_cost(calls: int = 600) -> None:
    """The hop alone, in the same run: a round trip to a child process over its pipes (a line sent and echoed back,
    as a stdio server's answer comes back; at once, and after 0.7 ms of the child's own work, about what
    server-memory takes) run from a thread on a loop of its own, against the same awaited on that loop; on asyncio's
    loop and uvloop's, through `asyncio.run_coroutine_threadsafe` (a future) and through `agent_env._loop.run_sync`'s
    way (`Started`: a task and a lock). One call of each in turn, `calls` times; the medians' difference from the
    awaited call's, wall and this process's CPU.

    A real round trip, not a timer: while the child answers, the loop's thread sleeps in its poll and the calling
    thread on its lock, and waking both is most of what a hop costs, the more so the longer they slept."""
    import uvloop

    from agent_env._loop import Started

    async def echo(work: float) -> asyncio.subprocess.Process:
        script = f"import sys, time\nfor line in sys.stdin:\n    time.sleep({work})\n    sys.stdout.write(line)\n    sys.stdout.flush()"
        return await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )

    def from_thread(way: Any) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        way()
        return (time.perf_counter() - wall) * 1e6, (time.process_time() - cpu) * 1e6

    print(
        "the hop alone: a round trip to a child process from a thread, over the same awaited on its loop (medians, "
        "us a call)"
    )
    for label, make, work in (
        (label, make, work)
        for work in (0.0, 0.0007)
        for label, make in (("asyncio", asyncio.new_event_loop), ("uvloop", uvloop.new_event_loop))
    ):
        loop = make()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        child = asyncio.run_coroutine_threadsafe(echo(work), loop).result()

        async def round_trip(child: asyncio.subprocess.Process = child) -> None:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(b"ping\n")
            await child.stdout.readline()

        def with_lock(loop: asyncio.AbstractEventLoop = loop) -> None:
            started = Started(loop, round_trip())
            started.wait(None)
            started.result()

        ways = (
            lambda loop=loop: asyncio.run_coroutine_threadsafe(timed(round_trip), loop).result(),
            lambda loop=loop: from_thread(
                lambda: asyncio.run_coroutine_threadsafe(round_trip(), loop).result()
            ),
            lambda: from_thread(with_lock),
        )
        rows: list[list[tuple[float, float]]] = [[], [], []]
        for index in range(calls):
            for way in ((index + step) % 3 for step in range(3)):
                rows[way].append(ways[way]())
        base_wall = statistics.median(wall for wall, _ in rows[0]) * 1e3  # timed() gives ms
        base_cpu = statistics.median(cpu for _, cpu in rows[0]) * 1e3
        for index, way_label in ((1, "future"), (2, "lock")):
            wall = statistics.median(wall for wall, _ in rows[index])
            cpu = statistics.median(cpu for _, cpu in rows[index])
            print(
                f"  {label:8} {way_label:7} answered {'at once ' if not work else f'after {work * 1e3:g} ms'}  "
                f"+{wall - base_wall:5.0f} us wall, +{cpu - base_cpu:5.0f} us CPU"
            )
        child.stdin.close()  # type: ignore[union-attr]
        asyncio.run_coroutine_threadsafe(child.wait(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def live_memory(env: AgentEnv, episodes: int) -> tuple[float, float]:
    """MiB of server RSS and of Python allocations per live episode, with `episodes` open at once."""
    import psutil

    env.close()
    before = {pid for pid in marked_processes(OWNER_MARK, owner_mark())}
    gc.collect()
    tracemalloc.start()
    sessions = [env.open() for _ in range(episodes)]
    for session in sessions:
        session.reset()
        session.call_tool("create_entities", ENTITIES)
    python_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    time.sleep(1.0)  # let the pool's spares settle, then count only the episodes' own servers
    ours = [
        connection
        for session in sessions
        for connection in session.environment._episode._connections.values()
    ]
    rss = 0
    from agent_env.mcp._supervisor import SERVER_MARK

    for connection in ours:
        for pid in marked_processes(SERVER_MARK, connection.id):
            if pid not in before:
                rss += psutil.Process(pid).memory_info().rss
    for session in sessions:
        session.close()
    return rss / episodes / 2**20, python_bytes / episodes / 2**20


def tool_blocks() -> None:
    from agent_env.training.families import family_of, lower
    from agent_env.training.fidelity import PROBE, entry
    from agent_env.training.templates import resolve_template
    from bench.fidelity import tokenizer_for

    servers = {
        "server-memory": memory_server(),
        "server-filesystem": StdioServer(NODE, [FILESYSTEM, "{episode_dir}"]),
        "mcp-server-time": StdioServer(TIME),
    }
    print(
        f"{'server':18} {'tools':>5} {'qwen3':>7} {'gemma4 stock':>13} {'lowered':>8} {'gptoss stock':>13} {'lowered':>8}"
    )
    for label, server in servers.items():
        env = AgentEnv.mcp(server, warm=0)
        published = env.tools()
        counts = []
        for name in ("qwen3", "gemma4", "gptoss"):
            template = resolve_template(name)
            family = family_of(template.text)
            tokenizer = tokenizer_for(name)
            bare = len(tokenizer.encode(template.render(PROBE, None)).ids)
            for chosen in (None, family) if family else (None,):
                text = template.render(PROBE, [entry(lower(tool, chosen)) for tool in published])
                counts.append(len(tokenizer.encode(text).ids) - bare)
        env.close()
        print(
            f"{label:18} {len(published):5d} {counts[0]:7d} {counts[1]:13d} {counts[2]:8d} {counts[3]:13d} {counts[4]:8d}"
        )


def main() -> None:
    env = AgentEnv.mcp(memory_server(), warm=2)
    warm = resets(env, RESETS, cold=False)
    env.close()
    cold_env = AgentEnv.mcp(memory_server(), warm=0)
    cold = resets(cold_env, RESETS // 2, cold=True)
    cold_env.close()
    print(f"episode start (reset), server-memory over stdio, {RESETS} warm and {RESETS // 2} cold resets")
    print(
        f"  warm pool:  p50 {statistics.median(warm):7.1f} ms   p99 {percentile(warm, 0.99):7.1f} ms   (target: p50 under 20 ms)"
    )
    print(f"  cold spawn: p50 {statistics.median(cold):7.1f} ms   p99 {percentile(cold, 0.99):7.1f} ms")
    print(f"  the warm pool starts episodes {statistics.median(cold) / statistics.median(warm):.0f}x faster")

    print(
        "per call over stdio, server-memory; the overhead is agent_env's over the bare client called the same way "
        "(target < 10%)"
    )
    for name, arguments in (("create_entities", ENTITIES), ("read_graph", {})):
        overhead(name, arguments)
    hop_cost()
    env = AgentEnv.mcp(memory_server(), warm=1)
    server_mib, python_mib = live_memory(env, 8)
    env.close()
    print(
        f"memory per live episode (8 open): its server process {server_mib:.1f} MiB RSS, Python side {python_mib:.2f} MiB"
    )
    print(
        "tool blocks in tokens (Qwen3 vocabulary; gemma4 and gptoss with their special tokens added: indicative)"
    )
    tool_blocks()


if __name__ == "__main__":
    main()
