"""Where a served call's CPU goes: py-spy's samples of a server process, each put in one part of the call.

A sample is the stack of the thread holding the GIL. It goes to the part of the call named by the innermost frame
that belongs to one: a frame of a general-purpose module (asyncio, threading, pydantic, anyio, the standard
library) is passed over for its caller, so that `asyncio.Lock` used by the episode registry counts as the registry's,
and pydantic used by the MCP SDK as the SDK's. HTTP framing counts as the response when it runs under the ASGI
`send`, and as parsing otherwise.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

PARTS = (
    "HTTP parsing (uvicorn's protocol, h11 or httptools)",
    "ASGI framework (Starlette's routing and middleware)",
    "our guard (Host, Origin, token, body limits)",
    "JSON read and write",
    "JSON-RPC and the MCP SDK (its pydantic models)",
    "episode registry (lookup, per-episode lock, timeouts)",
    "the worker hop (queue, thread, back to the loop)",
    "argument validation and tool dispatch (LocalSession)",
    "the environment's own work",
    "the response (HTTP framing and sending)",
    "event loop and sockets",
)
(HTTP, FRAMEWORK, GUARD, JSON, MCP, REGISTRY, HOP, VALIDATION, ENVIRONMENT, RESPONSE, LOOP) = PARTS

_FRAME = re.compile(r"^(?P<function>.*?) \((?P<file>.*?)(?::\d+)?\)$")

# (part, a pattern the frame's file and function must match); the first that matches names the frame's part.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (part, re.compile(pattern))
    for part, pattern in (
        (
            RESPONSE,
            r"RequestResponseCycle\.send |starlette/responses\.py|_send_json|Response\.__call__|"
            r"agent_env/server/_writes\.py",
        ),
        (HTTP, r"(^|/)h11/|httptools|uvicorn/protocols/http/|agent_env/server/_protocol"),
        (JSON, r"(^|/)json/|orjson|agent_env/server/_json\.py"),
        (MCP, r"(^|/)mcp/|mcp_types|agent_env/server/_mcp\.py|agent_env/server/_bindings\.py|_jsonrpc\.py"),
        (GUARD, r"agent_env/server/_guard\.py"),
        (HOP, r"agent_env/server/_workers\.py"),
        (REGISTRY, r"agent_env/server/_episodes\.py"),
        (VALIDATION, r"agent_env/(schema/|session\.py|tools\.py|environment\.py|_)|jsonschema"),
        (ENVIRONMENT, r"agent_env/envs/|(^|/)(tst|testbed)/|(^|/)numpy/|(^|/)scipy/"),
        (FRAMEWORK, r"starlette/|uvicorn/middleware|agent_env/server/_http\.py|agent_env/server/app\.py"),
    )
)


def part_of(stack: list[str]) -> str:
    """The part of a served call one sample's stack (outermost frame first) belongs to."""
    sending = any("RequestResponseCycle.send " in frame for frame in stack)
    for frame in reversed(stack):
        for part, rule in _RULES:
            if rule.search(frame):
                if part == HTTP and sending:
                    return RESPONSE
                return part
    return LOOP


def split(samples: Iterable[tuple[list[str], int]]) -> Counter[str]:
    """Samples (a stack and how many times it was seen) counted by part."""
    counts: Counter[str] = Counter()
    for stack, count in samples:
        counts[part_of(stack)] += count
    return counts


def read_raw(text: str) -> list[tuple[list[str], int]]:
    """py-spy's `--format raw` output: one stack a line, frames separated by `;`, then the count."""
    samples = []
    for line in text.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if stack and count.isdigit():
            samples.append((_without_paths(stack.split(";")), int(count)))
    return samples


def _without_paths(stack: list[str]) -> list[str]:
    """Frames with their files relative to site-packages or the checkout, so the rules read the same anywhere."""
    frames = []
    for frame in stack:
        match = _FRAME.match(frame)
        if match is None:
            frames.append(frame)
            continue
        path = re.sub(r"^.*?/site-packages/", "", match["file"])
        path = re.sub(r"^.*?/(agent_env|tst|bench)/", r"\1/", path)
        frames.append(f"{match['function']} ({path})")
    return frames
