"""Run one tool call a model made through the episode's session, as TRL's tool loop runs it, and judge it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import partial
from typing import Any

from agent_env.errors import (
    CallTimeoutError,
    EpisodeStateError,
    RemoteError,
    ToolArgumentError,
    ToolError,
    ToolFailedError,
    UnknownToolError,
)
from agent_env.evaluation._messages import (
    tool_not_found,
    tool_text,
    unknown_tool,
    unreadable_arguments,
    unsupported_call,
    upstream_text,
)
from agent_env.llm import ToolCall
from agent_env.session import Session

ACCEPTED = "accepted"
MALFORMED = ("invalid_arguments", "not_json", "unknown_tool", "unsupported_type")
"""Verdicts on calls that are not well formed: a name no tool has, arguments that are not JSON or break the
published schema, a call of another type than "function"."""
REFUSED = ("tool_error", "episode_state", "error", "timeout")
"""Verdicts on well-formed calls that the environment refused: a `ToolError` (the tool's own check), a call after
the episode ended, anything else a tool raised, a call that did not finish in time (`CallTimeoutError`: past its
call timeout or its episode's time budget; the episode then ends, unscored)."""
VERDICTS = (ACCEPTED, *MALFORMED, *REFUSED)


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What came of a call: its verdict and the text the model reads."""

    verdict: str
    content: str


def decode_arguments(raw: Any) -> tuple[Any, str | None]:
    """A call's arguments as JSON values, or None and why they are not JSON.

    No arguments (None, "", whitespace) are `{}`, as TRL takes a call without them.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if not isinstance(raw, str | bytes):
        return raw, None
    try:
        return json.loads(raw), None
    except ValueError as error:
        return None, str(error)


async def run_call(
    session: Session,
    call: ToolCall,
    schemas: Mapping[str, Any],
    *,
    executor: Executor | None = None,
    upstream: bool = False,
) -> CallOutcome:
    """Run `call` on `session` and say what the model reads, as TRL would: the name first (a name no tool has is
    not found, whatever its arguments), then the arguments, validated by the session against the published schema.
    A synchronous tool runs in `executor` (the loop's default without one), never on the event loop, where it
    would stall every other episode; an async one is awaited.

    With `upstream` (a simulated user's protocol: τ²-bench's), the model reads what τ²-bench's environment writes
    (`upstream_text`), and a name no tool has still reaches the session, whose environment counts it as a failed
    call, as τ²-bench's orchestrator counts it.

    Raises:
        RemoteError: The environment's host or server failed (not the model): its episode ends, unscored. A call that
            did not finish in time is told to the model instead (verdict `timeout`), as TRL tells it; its episode
            has ended, and its reward raises `TimedOutEpisodeError`.

    Args:
        session: The episode's session.
        call: The call.
        schemas: Each published tool's input schema, by name.
        executor: Where a synchronous tool runs.
        upstream: Write what the model reads in τ²-bench's words, and let unknown names reach the environment.
    """
    text = upstream_text if upstream else tool_text
    if call.type != "function":
        return CallOutcome("unsupported_type", text(error=unsupported_call(call.type)))
    if call.name not in schemas and not upstream:
        return CallOutcome("unknown_tool", tool_text(error=unknown_tool(call.name)))
    arguments, problem = decode_arguments(call.arguments)
    if call.name not in schemas:
        arguments = arguments if isinstance(arguments, dict) else {}
    elif problem is not None:
        error = unreadable_arguments(call.name, schemas[call.name], problem)
        return CallOutcome("not_json", text(error=error))
    try:
        if session.is_async(call.name):
            result = await session.acall_tool(call.name, arguments)
        else:
            blocking = partial(session.call_tool, call.name, arguments)
            result = await asyncio.get_running_loop().run_in_executor(executor, blocking)
    except CallTimeoutError as error:  # the model reads it, as under TRL; the episode has ended, unscored
        return CallOutcome("timeout", tool_text(error=error))
    except RemoteError:  # the environment's host or server failed, not the model: the episode ends, unscored
        raise
    except UnknownToolError as error:
        return CallOutcome(
            "unknown_tool", upstream_text(error=tool_not_found(call.name)) if upstream else text(error=error)
        )
    except Exception as error:  # TRL catches every Exception a tool raises and tells the model
        return CallOutcome(verdict_of(error), text(error=error))
    return CallOutcome(ACCEPTED, text(result))


def verdict_of(error: BaseException) -> str:
    """The verdict on a call that raised `error`."""
    if isinstance(error, ToolArgumentError):
        return "invalid_arguments"
    if isinstance(error, UnknownToolError):
        return "unknown_tool"
    if isinstance(error, EpisodeStateError):
        return "episode_state"
    if isinstance(error, ToolFailedError):  # the tool's own failure (a bug, a service down), not the model's
        return "error"
    if isinstance(error, ToolError):
        return "tool_error"
    return "error"
