"""What hostile request bodies cost a served environment: its memory after a flood, a bystander's wait, the worst call.

Three figures, each from the GridSim desk served by uvicorn in a subprocess on a free loopback port:

- memory: the server's RSS before and after 24 bodies of just under 4 MiB (dense JSON the desk refuses), sent four
  at a time to `POST /episodes/{id}/tools/check_offers`, and again after a pause;
- latency: `GET /health` polled every 20 ms while four clients each send such bodies one after another, against
  the same polling with no bodies in the same run (the ratio is the stall the bodies cause);
- CPU: the worst call the desk's published schema lets through (every array at its `maxItems`), timed in process
  with `time.process_time`, both one the desk refuses (overlapping hours) and one it books.
- big integers: the red team's body (950 integers of 4,299 digits, 4.1 MB, within both limits), eight at a time,
  with /health polled as above; and in process, the CPU `read_json` takes to refuse one against what `json.loads`
  takes to convert it (what the server paid before it refused integers past `MAX_INTEGER_DIGITS`).

When the server takes `max_body_values`, the memory and latency figures are also measured with that limit lifted,
so the body is parsed and reaches the desk's validator (what the worker threads then hold is what is measured).
Loopback only, bounded loops, stops by itself in about a minute. `--stack granian` serves the same app under
granian (`testbed/granian.py`) instead of `agent-env serve`'s uvicorn stack.

    PYTHONPATH=. uv run --frozen python bench/server_hostile.py [--stack granian]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import statistics
import time
from typing import Any

import httpx
import psutil

from agent_env.errors import AgentEnvError
from agent_env.server.app import build_app
from agent_env.server.limits import DEFAULT_MAX_BODY_VALUES
from bench._served import STACKS, served

MIB = 1024 * 1024
FLOOD_BODIES, AT_ONCE = 24, 4
LATENCY_ROUNDS = 3
"""Bodies each of the four latency clients sends, one after another."""


def dense_body(limit: int = 4 * MIB, pair: bytes = b"[0,0]") -> bytes:
    """Just under `limit` bytes of `{"curves": [[0, 0], ...]}`: about 700,000 small arrays the schema refuses."""
    count = (limit - 64) // (len(pair) + 1)
    return b'{"curves":[' + b",".join([pair] * count) + b"]}"


def big_integers(count: int = 950, digits: int = 4_299) -> bytes:
    """`{"curves": [...]}` holding `count` integers of `digits` digits: Python converts each at a cost that grows with
    the square of its length, holding the GIL, and 4,299 is just within its own limit (4,300)."""
    return b'{"curves":[' + b",".join([b"9" * digits] * count) + b"]}"


def integer_cpu(body: bytes, repeats: int = 5) -> tuple[float, float]:
    """CPU ms to read `body` with `read_json` (which refuses it) and with `json.loads` (which converts it); best of
    `repeats`."""
    from agent_env.server._json import NotJsonError, read_json

    def cpu(read: Any) -> float:
        best = float("inf")
        for _ in range(repeats):
            started = time.process_time()
            with contextlib.suppress(NotJsonError):
                read(body)
            best = min(best, time.process_time() - started)
        return best * 1e3

    return cpu(read_json), cpu(json.loads)


def at_the_values_limit(values: int = DEFAULT_MAX_BODY_VALUES) -> bytes:
    """The densest body the default `max_body_values` lets through: pairs of floats, `values` JSON values in all."""
    pair = b"[0.5,0.5]"
    return dense_body(len(pair) * values // 3, pair)


async def open_episode(client: httpx.AsyncClient) -> str:
    answer = await client.post("/episodes", json={"task_id": "desk-v4/test/0000"})
    answer.raise_for_status()
    episode_id: str = answer.json()["episode_id"]
    return episode_id


async def flood(url: str, process: psutil.Process, body: bytes) -> dict[str, float]:
    """RSS (MiB) before a flood of refused bodies, right after it, and 2 s later."""
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        episode = await open_episode(client)
        path = f"/episodes/{episode}/tools/check_offers"
        headers = {"Content-Type": "application/json"}
        await client.post(path, content=b'{"curves":[]}', headers=headers)
        before = process.memory_info().rss / MIB
        statuses: list[int] = []
        for start in range(0, FLOOD_BODIES, AT_ONCE):
            answers = await asyncio.gather(
                *(client.post(path, content=body, headers=headers) for _ in range(start, start + AT_ONCE))
            )
            statuses += [answer.status_code for answer in answers]
        after = process.memory_info().rss / MIB
        await asyncio.sleep(2)
        settled = process.memory_info().rss / MIB
    assert all(status in (413, 422) for status in statuses), statuses
    return {"before": before, "after": after, "settled": settled, "status": statuses[0]}


async def poll_health(client: httpx.AsyncClient, stop: asyncio.Event, latencies: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        (await client.get("/health")).raise_for_status()
        latencies.append(time.perf_counter() - started)
        await asyncio.sleep(0.02)


async def health_latency(url: str, body: bytes, at_once: int = AT_ONCE) -> dict[str, float]:
    """/health latency (ms) alone for 2 s, then while `at_once` clients send `LATENCY_ROUNDS` bodies each."""
    async with (
        httpx.AsyncClient(base_url=url, timeout=120) as poller,
        httpx.AsyncClient(
            base_url=url, timeout=120, limits=httpx.Limits(max_connections=max(8, at_once))
        ) as senders,
    ):
        episode = await open_episode(senders)
        path = f"/episodes/{episode}/tools/check_offers"
        quiet: list[float] = []
        stop = asyncio.Event()
        polling = asyncio.create_task(poll_health(poller, stop, quiet))
        await asyncio.sleep(2)
        stop.set()
        await polling

        async def send_rounds() -> None:
            for _ in range(LATENCY_ROUNDS):
                await senders.post(path, content=body, headers={"Content-Type": "application/json"})

        loaded: list[float] = []
        stop = asyncio.Event()
        polling = asyncio.create_task(poll_health(poller, stop, loaded))
        await asyncio.gather(*(send_rounds() for _ in range(at_once)))
        stop.set()
        await polling
    return {
        "quiet_p50": statistics.median(quiet) * 1e3,
        "quiet_max": max(quiet) * 1e3,
        "loaded_p50": statistics.median(loaded) * 1e3,
        "loaded_max": max(loaded) * 1e3,
        "polls": len(loaded),
        "at_once": at_once,
    }


def worst_desk_calls() -> dict[str, float]:
    """CPU ms of the worst schema-valid `check_offers` calls, in process: refused and booked, and their size."""
    from agent_env.envs import load_environment
    from agent_env.session import LocalSession

    session = LocalSession(load_environment("gridsim-desk")())
    session.reset(task_id="desk-v4/test/0000")
    figures = {"huge_ms": _cpu_ms(session, HUGE_CALL), "huge_bytes": len(compact(HUGE_CALL))}
    schema = next(t for t in session.tools() if t["name"] == "check_offers")["inputSchema"]
    curves_max = schema["properties"]["curves"].get("maxItems")
    offers_max = schema["properties"]["as_offers"].get("maxItems")
    if curves_max is None or offers_max is None:
        return figures
    points = [[-100 + 20 * i, -250 + 500 * i] for i in range(10)]
    products = ["regup", "regdn", "rrspfr", "rrsffr", "ecrs", "nspin"]
    refused = {
        "curves": [{"hours": list(range(1, 25)), "points": points} for _ in range(curves_max)],
        "as_offers": [
            {"product": products[i % 6], "hours": list(range(1, 25)), "mw": 1, "price": 1}
            for i in range(offers_max)
        ],
    }
    booked = {
        "curves": [{"hours": [hour], "points": points} for hour in range(1, curves_max + 1)],
        "as_offers": [
            {"product": products[i % 6], "hours": [i // 6 + 1], "mw": 1, "price": 1}
            for i in range(offers_max)
        ],
    }
    figures.update(curves_max=curves_max, offers_max=offers_max)
    for name, arguments in (("refused", refused), ("booked", booked)):
        figures[f"{name}_ms"] = max(_cpu_ms(session, arguments) for _ in range(20))
        figures[f"{name}_bytes"] = len(compact(arguments))
    return figures


HUGE_CALL = {"curves": [{"hours": [1] * 1_800_000, "points": [[-100, 0], [100, 10]]}]}
"""The red team's call: one curve whose hour list names HE01 1.8 million times (3.6 MB of compact JSON), which the
desk's rules accept (a repeated hour is read once) and which no schema bound refused before `maxItems`."""


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _cpu_ms(session: Any, arguments: dict[str, Any]) -> float:
    """CPU ms of one `check_offers` call, whether the desk answers or refuses it."""
    started = time.process_time()
    with contextlib.suppress(AgentEnvError):
        session.call_tool("check_offers", arguments)
    return (time.process_time() - started) * 1e3


def report_flood(label: str, figures: dict[str, float]) -> None:
    print(
        f"  {label}: every body answered {figures['status']}; RSS {figures['before']:.0f} MiB before, "
        f"{figures['after']:.0f} MiB after {FLOOD_BODIES} bodies, {figures['settled']:.0f} MiB 2 s later"
    )


def report_latency(label: str, figures: dict[str, float]) -> None:
    print(
        f"  {label}: /health p50 {figures['loaded_p50']:.1f} ms, max {figures['loaded_max']:.0f} ms under "
        f"{figures['at_once']:.0f} concurrent bodies ({figures['polls']:.0f} polls); alone p50 {figures['quiet_p50']:.1f} ms, "
        f"max {figures['quiet_max']:.0f} ms; max ratio {figures['loaded_max'] / figures['quiet_max']:.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--stack", choices=STACKS, default="uvicorn", help="the server under the app (testbed/granian.py)"
    )
    stack = parser.parse_args().stack
    body = dense_body()
    lifts_values = "max_body_values" in inspect.signature(build_app).parameters
    settings: list[tuple[str, dict[str, Any]]] = [("default limits", {})]
    if lifts_values:
        settings.append(("max_body_values lifted", {"max_body_values": 10**7}))
    print(f"under {stack}: bodies of {len(body) / MIB:.2f} MiB ({len(body):,} bytes) of dense JSON")
    for label, extra in settings:
        with served("gridsim-desk", stack=stack, **extra) as (url, process):
            report_flood(f"memory, {label}", asyncio.run(flood(url, process, body)))
        with served("gridsim-desk", stack=stack, **extra) as (url, _):
            report_latency(f"latency, {label}", asyncio.run(health_latency(url, body)))
    if lifts_values:
        densest = at_the_values_limit()
        with served("gridsim-desk", stack=stack) as (url, _):
            figures = asyncio.run(health_latency(url, densest))
        report_latency(
            f"latency, bodies at the values limit ({len(densest) / 1024:.0f} KiB of float pairs)", figures
        )
    integers = big_integers()
    with served("gridsim-desk", stack=stack) as (url, _):
        figures = asyncio.run(health_latency(url, integers, at_once=8))
    report_latency(f"latency, {len(integers) / MIB:.1f} MiB of 950 integers of 4,299 digits", figures)
    refused, converted = integer_cpu(integers)
    print(
        f"  CPU to read one such body: {refused:.2f} ms for read_json to refuse it, {converted:.0f} ms for "
        f"json.loads to convert it ({converted / refused:.0f}x)"
    )
    worst = worst_desk_calls()
    print(
        f"a {worst['huge_bytes'] / MIB:.1f} MiB check_offers (one curve, HE01 listed 1.8 million times): "
        f"{worst['huge_ms']:.0f} ms CPU in process"
    )
    if "curves_max" not in worst:
        print("worst valid desk call: the desk's arrays have no maxItems, so there is no worst valid one")
        return
    print(
        f"worst valid desk call ({worst['curves_max']:.0f} curves, {worst['offers_max']:.0f} AS offers, every "
        f"hour list at 24): refused {worst['refused_ms']:.1f} ms CPU ({worst['refused_bytes'] / 1024:.0f} KiB), "
        f"booked {worst['booked_ms']:.1f} ms CPU ({worst['booked_bytes'] / 1024:.0f} KiB); max of 20 in process"
    )


if __name__ == "__main__":
    main()
