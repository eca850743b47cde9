"""Soak the served GridSim desk: 64 concurrent episodes of mixed valid and invalid calls for minutes on end.

The server runs `build_app("gridsim-desk")` under uvicorn in a subprocess on a free loopback port. Each episode is
an asyncio task with its own HTTP client that plays a seeded random mix until the time is up: reads (forecasts,
the brief, the book), valid submissions (an hour not yet booked), checks, withdraws, schema-breaking calls (a
string for a price, a missing `hours`, an unknown product), rule-breaking ones (a curve past the price cap, a
backwards hour range, an hour already booked), an unknown tool, a body that is not standard JSON, a cross-site
post (a foreign Origin, or a body not sent as JSON), and every so often end_turn, a call after it, the reward,
and a reset into the next task (sometimes closing the episode and opening another instead). Every answer is checked against the outcomes that action may have: an answer outside
them is counted as unexplained, and so is a request that got no answer at all.

It prints the calls served, the answers by kind (status and error code), p50/p99 latency, and the server's
resident memory at the start, through the run, and at the end. Loopback only, bounded by `--seconds` (default
five minutes), stops by itself.

    PYTHONPATH=. uv run --frozen python bench/soak.py --seconds 300
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import psutil

from bench._served import served

MIB = 1024 * 1024
OK = frozenset({(200, None)})

Outcome = tuple[int, str | None]


@dataclass
class Tally:
    """What every episode saw: outcomes by action, latencies, and anything unexplained."""

    outcomes: Counter[tuple[str, int, str | None]] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    unexplained: list[str] = field(default_factory=list)
    lost: int = 0


@dataclass
class Episode:
    """One client's episode and what it has booked (so its valid submissions stay valid)."""

    client: httpx.AsyncClient
    rng: random.Random
    rows: list[dict[str, Any]]
    tally: Tally
    episode_id: str = ""
    booked: set[int] = field(default_factory=set)
    ended: bool = False

    async def send(
        self, action: str, method: str, path: str, expected: frozenset[Outcome], **body: Any
    ) -> Any:
        started = time.perf_counter()
        try:
            answer = await self.client.request(method, path, **body)
        except httpx.HTTPError as error:
            self.tally.lost += 1
            self.tally.unexplained.append(f"{action}: no answer ({type(error).__name__}: {error})")
            return None
        self.tally.latencies.append(time.perf_counter() - started)
        payload = answer.json() if answer.content else None
        code = payload["error"]["code"] if answer.status_code >= 400 and isinstance(payload, dict) else None
        self.tally.outcomes[(action, answer.status_code, code)] += 1
        if (answer.status_code, code) not in expected:
            message = payload["error"]["message"] if code else answer.text
            self.tally.unexplained.append(f"{action}: {answer.status_code} {code}: {str(message)[:200]}")
        return payload

    async def call(self, action: str, name: str, arguments: Any, expected: frozenset[Outcome] = OK) -> Any:
        return await self.send(
            action, "POST", f"/episodes/{self.episode_id}/tools/{name}", expected, json=arguments
        )

    async def open(self) -> None:
        opened = await self.send(
            "open", "POST", "/episodes", frozenset({(201, None)}), json=self.rng.choice(self.rows)
        )
        self.episode_id, self.booked, self.ended = opened["episode_id"], set(), False

    async def reset(self) -> None:
        await self.send(
            "reset", "POST", f"/episodes/{self.episode_id}/reset", OK, json=self.rng.choice(self.rows)
        )
        self.booked, self.ended = set(), False

    def hour_set(self) -> Any:
        start = self.rng.randint(1, 24)
        return self.rng.choice(
            [f"HE{start:02d}", f"HE{start:02d}-HE{min(24, start + 3):02d}", "all", [start]]
        )

    def curve(self, hour: int) -> dict[str, Any]:
        price = round(self.rng.uniform(-20, 80), 2)
        return {"hours": f"HE{hour:02d}", "points": [[-50, price], [0, price + 5], [50, price + 30]]}


async def read(episode: Episode) -> None:
    name, arguments = episode.rng.choice(
        [
            ("desk_brief", {}),
            ("battery_status", {}),
            ("dam_price_forecast", {"hours": episode.hour_set(), "bands": True}),
            ("as_price_forecast", {"product": "regup", "hours": episode.hour_set()}),
            ("system_conditions", {"hours": episode.hour_set()}),
            ("price_history", {"days": episode.rng.randint(1, 7)}),
            ("as_product_rules", {}),
            ("list_offers", {}),
        ]
    )
    await episode.call("read", name, arguments)


async def submit(episode: Episode) -> None:
    free = [hour for hour in range(1, 25) if hour not in episode.booked]
    if not free:
        await withdraw(episode)
        return
    hour = episode.rng.choice(free)
    answer = await episode.call("valid submission", "submit_dam_offers", {"curves": [episode.curve(hour)]})
    if answer is not None and "result" in answer:
        episode.booked.add(hour)


async def check(episode: Episode) -> None:
    free = [hour for hour in range(1, 25) if hour not in episode.booked] or [1]
    expected = OK if free != [1] or not episode.booked else frozenset({(422, "tool_error")})
    arguments = {"curves": [episode.curve(episode.rng.choice(free))], "as_offers": []}
    await episode.call("check", "check_offers", arguments, expected)


async def withdraw(episode: Episode) -> None:
    await episode.call("withdraw", "withdraw_offers", {"hours": "all"})
    episode.booked.clear()


async def break_schema(episode: Episode) -> None:
    arguments = episode.rng.choice(
        [
            {"curves": [{"hours": "HE03", "points": [[0, "cheap"], [1, 2]]}]},
            {"curves": [{"points": [[0, 1], [1, 2]]}]},
            {"curves": [], "as_offers": [{"product": "spin", "hours": "HE01", "mw": 1, "price": 1}]},
            {"curves": [{"hours": "HE03", "points": [[0, 1]]}]},
            {"curves": "all of them"},
        ]
    )
    await episode.call(
        "schema-breaking", "submit_dam_offers", arguments, frozenset({(422, "invalid_arguments")})
    )


async def break_rules(episode: Episode) -> None:
    kind = episode.rng.randrange(3)
    if kind == 0:
        arguments = {"curves": [{"hours": "HE05", "points": [[-50, 10], [50, 99999]]}]}
        await episode.call(
            "rule-breaking", "submit_dam_offers", arguments, frozenset({(422, "invalid_offers")})
        )
    elif kind == 1:
        arguments = {"hours": "HE09-HE02"}
        await episode.call(
            "rule-breaking", "dam_price_forecast", arguments, frozenset({(422, "invalid_hour_set")})
        )
    elif episode.booked:
        hour = episode.rng.choice(sorted(episode.booked))
        arguments = {"curves": [episode.curve(hour)]}
        await episode.call("rule-breaking", "submit_dam_offers", arguments, frozenset({(422, "tool_error")}))


async def hostile(episode: Episode) -> None:
    if episode.rng.random() < 0.5:
        name = quote("../../etc/passwd", safe="")  # as RemoteSession sends a tool name: one path segment
        await episode.call("unknown tool", name, {}, frozenset({(422, "unknown_tool")}))
    elif episode.rng.random() < 0.6:
        body = episode.rng.choice([b'{"hours": NaN}', b'{"hours": "HE01", "hours": "HE02"}', b"[" * 5000])
        await episode.send(
            "not standard JSON",
            "POST",
            f"/episodes/{episode.episode_id}/tools/dam_price_forecast",
            frozenset({(400, "invalid_request")}),
            content=body,
            headers={"Content-Type": "application/json"},
        )
    else:  # what a web page on another site can send: refused before anything runs
        origin = episode.rng.choice([None, "http://evil.example"])
        headers = {"Content-Type": "text/plain", **({"Origin": origin} if origin else {})}
        await episode.send(
            "cross-site",
            "POST",
            f"/episodes/{episode.episode_id}/tools/dam_price_forecast",
            frozenset({(403 if origin else 415, "invalid_request")}),
            content=b'{"hours": "all"}',
            headers=headers,
        )


async def finish(episode: Episode) -> None:
    """end_turn, a call after it, the reward, and the next task (or a fresh episode)."""
    await episode.call("end_turn", "end_turn", {})
    await episode.call("after end_turn", "list_offers", {}, frozenset({(409, "episode_ended")}))
    await episode.send("reward", "POST", f"/episodes/{episode.episode_id}/reward", OK)
    if episode.rng.random() < 0.2:
        await episode.send("close", "DELETE", f"/episodes/{episode.episode_id}", frozenset({(204, None)}))
        await episode.open()
    else:
        await episode.reset()


ACTIONS: list[tuple[Callable[[Episode], Any], int]] = [
    (read, 30),
    (submit, 20),
    (check, 8),
    (withdraw, 4),
    (break_schema, 12),
    (break_rules, 10),
    (hostile, 4),
    (finish, 3),
]


async def play(url: str, seed: int, rows: list[dict[str, Any]], deadline: float, tally: Tally) -> None:
    actions, weights = zip(*ACTIONS, strict=True)
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        episode = Episode(client, random.Random(seed), rows, tally)
        await episode.open()
        while time.monotonic() < deadline:
            await episode.rng.choices(actions, weights)[0](episode)
        await episode.send("close", "DELETE", f"/episodes/{episode.episode_id}", frozenset({(204, None)}))


async def sample_memory(process: psutil.Process, every: float, samples: list[tuple[float, float]]) -> None:
    started = time.monotonic()
    while True:
        await asyncio.sleep(every)
        samples.append((time.monotonic() - started, process.memory_info().rss / MIB))


async def soak(
    url: str, process: psutil.Process, seconds: float, episodes: int
) -> tuple[Tally, dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        rows = [{"task_id": row["task_id"]} for row in (await client.get("/datasets/train")).json()["rows"]]
        warm = Tally()
        await asyncio.gather(
            *(play(url, -seed - 1, rows, time.monotonic() + 3, warm) for seed in range(episodes))
        )
        rss_start = process.memory_info().rss / MIB
        tally, samples = Tally(), []
        sampler = asyncio.create_task(sample_memory(process, max(seconds / 10, 1), samples))
        started = time.monotonic()
        await asyncio.gather(*(play(url, seed, rows, started + seconds, tally) for seed in range(episodes)))
        elapsed = time.monotonic() - started
        sampler.cancel()
        health = (await client.get("/health")).json()
    return tally, {
        "elapsed": elapsed,
        "rss_start": rss_start,
        "rss_end": process.memory_info().rss / MIB,
        "samples": samples,
        "live_at_end": health["episodes"],
        "warm_unexplained": warm.unexplained,
    }


def report(tally: Tally, figures: dict[str, Any], episodes: int) -> bool:
    calls = sum(tally.outcomes.values())
    print(
        f"{episodes} episodes for {figures['elapsed']:.0f} s: {calls:,} calls served ({calls / figures['elapsed']:,.0f}/s)"
    )
    cuts = statistics.quantiles(tally.latencies, n=100)
    print(
        f"latency: p50 {cuts[49] * 1e3:.2f} ms, p99 {cuts[98] * 1e3:.2f} ms, max {max(tally.latencies) * 1e3:.1f} ms"
    )
    print("answers by action, status and code:")
    for (action, status, code), count in sorted(tally.outcomes.items()):
        print(f"  {count:9,}  {action:<18} {status} {code or ''}")
    samples = ", ".join(f"{rss:.0f}" for _, rss in figures["samples"])
    print(
        f"server RSS: {figures['rss_start']:.1f} MiB at the start, {figures['rss_end']:.1f} MiB at the end "
        f"({figures['rss_end'] - figures['rss_start']:+.1f}); through the run: {samples}"
    )
    print(f"episodes live on the server after every client closed its own: {figures['live_at_end']}")
    unexplained = tally.unexplained + figures["warm_unexplained"]
    print(f"lost (no answer): {tally.lost}; unexplained answers: {len(unexplained)}")
    for line in Counter(unexplained).most_common(10):
        print(f"  {line[1]} x {line[0]}")
    return not unexplained and figures["live_at_end"] == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="how long to soak (default 300)")
    parser.add_argument("--episodes", type=int, default=64, help="concurrent episodes (default 64)")
    args = parser.parse_args()
    if not 0 < args.seconds <= 3600 or not 0 < args.episodes <= 256:
        parser.error("--seconds must be in (0, 3600] and --episodes in (0, 256]")
    with served("gridsim-desk", max_episodes=256, call_timeout=30, idle_timeout=600) as (url, process):
        tally, figures = asyncio.run(soak(url, process, args.seconds, args.episodes))
    clean = report(tally, figures, args.episodes)
    print("clean: every answer was one its action may have" if clean else "NOT CLEAN: see above")
    sys.exit(0 if clean else 1)


if __name__ == "__main__":
    main()
