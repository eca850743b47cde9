"""The ORS server of one environment class in this process: its tools published, its tasks as rows, its sessions.

An `ORSRuntime` resolves the environment's name on the server, lists its tools once and publishes them (refusing,
or skipping, what cannot be published; naming what was renamed), reads each split's tasks as dataset rows, opens an
episode as a session of its own (`/create_session`, `/create`, its prompt) kept alive by `/ping` until it is let
go (`/delete`, `/delete_session`), and sends calls, one at a time per episode, in the order made.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import copy
import logging
import os
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_env._loop import background_loop, spawn, submit
from agent_env.errors import SplitNotFoundError, ToolDefinitionError
from agent_env.ors import _wire as wire
from agent_env.ors._client import Key, ORSClient, Policy
from agent_env.ors._settings import ORSSettings
from agent_env.ors.errors import (
    ORSError,
    ORSMalformedError,
    ORSRefusedError,
    ORSSessionExpiredError,
    ORSTimeoutError,
)
from agent_env.schema._describe import short
from agent_env.tools import Tool, python_identifier

logger = logging.getLogger("agent_env.ors")

PROMPT_ROW = ({"role": "user", "content": ""},)
"""The `prompt` of every row made from a task: the task's prompt comes from its session, after `/create`, as the
reset's observation, which TRL makes the whole of this first user message."""
PING_FAILURES = 5
"""Pings failed in a row after which a session is given up (as the SDK client gives one up)."""
EXIT_TIMEOUT = 5.0
"""Seconds a process that exits spends, at most, deleting the sessions its episodes still hold."""


@dataclass(eq=False)
class Episode:
    """One ORS session, one episode: what its calls returned, and the fault that ended it, if one did."""

    sid: str
    task: dict[str, Any]
    rewards: list[float | None] = field(default_factory=list)
    finished: bool = False
    fault: ORSError | None = None
    lost: ORSError | None = None
    """Why a ping gave the session up (it expired, or the server stopped answering): the next call fails with it."""
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    keep_alive: asyncio.Task[None] | None = None
    started: float = field(default_factory=time.monotonic)

    def fail(self, fault: ORSError) -> None:
        """Record the fault that ended the episode (the first one)."""
        if self.fault is None and not self.finished:
            self.fault = fault


@dataclass(frozen=True)
class Terminal:
    """The environment's `@terminal` tool, which ORS hides from its tool list: published here as a tool."""

    name: str
    arg: str | None
    description: str


class ORSRuntime:
    """The server of one environment class in this process; see the module docstring."""

    def __init__(self, source: ORSSettings) -> None:
        self.source = source
        self.key = Key(source.api_key_env)  # read here, in this process, from its variable; never pickled
        policy = Policy(source.timeout, source.retries, source.start_timeout)
        self.client = ORSClient(source.base_url, source.env_name or "", self.key, policy, source.transport)
        self.routes: dict[str, str] = {}
        """Published name -> the name the server lists it by."""
        self.terminal: Terminal | None = None
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self._splits: list[str] | None = None
        self._live: set[Episode] = set()
        """The episodes whose sessions this process still holds (a trainer rarely closes its environments)."""
        self._deleting: set[asyncio.Task[None]] = set()
        """The deletions of sessions let go, under way."""
        self._pid = os.getpid()
        _runtimes.add(self)

    @property
    def env_name(self) -> str:
        """The environment's name on the server, once resolved."""
        return self.client.env_name

    def faults(self) -> dict[str, int]:
        """Every fault met in this process, retried ones included, by kind."""
        return dict(self.client.faults)

    async def start(self) -> list[dict[str, Any]]:
        """Resolve the environment's name, and list its tools (the terminal tool among them, last)."""
        if not self.client.env_name:
            names = await self.client.list_environments()
            if len(names) != 1:
                raise ToolDefinitionError(
                    f"{self.source.label()} serves {len(names)} environments ({', '.join(map(repr, names)) or 'none'}): "
                    "name the one to use with env_name="
                )
            self.client.env_name = names[0]
        try:
            listing = await self.client.listing("GET", "/tools")
        except ORSRefusedError as error:
            if error.status != 404:
                raise
            raise await self._unknown_environment(error) from None
        tools, terminal = _listed_tools(listing, self.source.label(), self.key)
        if terminal is not None:
            self.terminal = terminal
            tools.append(_terminal_entry(terminal))
        return tools

    async def _unknown_environment(self, error: ORSRefusedError) -> Exception:
        """What a 404 on the tools of the environment named means: no such environment, naming those the server
        serves (an SDK server answers only "Not Found"); `error` itself when the server cannot list them, or lists
        the name after all."""
        try:
            names = await self.client.list_environments()
        except ORSError:
            return error
        name = self.env_name
        if name in names:
            return error
        alike = [served for served in names if served.lower() == name.lower()]
        fix = f"env_name={alike[0]!r}" if alike else "name one of them with env_name="
        return ToolDefinitionError(
            f"{self.source.label()} is not one the server serves: it serves {', '.join(map(repr, names)) or 'none'}; "
            f"{fix} (it answered: {error})"
        )

    def publish(
        self, listed: list[dict[str, Any]], remote: Callable[[str], Callable[..., Awaitable[str]]]
    ) -> list[Tool]:
        """The tools to publish from the listing, routed; refusing (or skipping) what cannot be published."""
        source, label = self.source, self.source.label()
        tools, renamed = [], []
        for entry in listed:
            listed_name = entry["name"]
            safe = python_identifier(listed_name)
            if source.tools is not None and listed_name not in source.tools and safe not in source.tools:
                continue
            schema = entry["input_schema"]
            if schema is None:  # a tool that takes no arguments: ORS lists no schema for it
                schema = {"type": "object", "properties": {}}
            try:
                tool = Tool.from_schema(
                    safe, entry["description"], schema, remote(safe), listed_name=listed_name
                )
            except ToolDefinitionError as error:
                message = f"{label} lists tool {listed_name!r}, which agent_env cannot publish"
                if not source.skip_unpublishable:
                    raise ToolDefinitionError(
                        f"{message}: leave it out (tools=[...] names the ones to keep), or pass "
                        f"skip_unpublishable=True to skip every such tool. Why it cannot: {error}"
                    ) from None
                logger.warning("agent_env: skipped (skip_unpublishable=True): %s: %s", message, error)
                continue
            if safe in self.routes:
                raise ToolDefinitionError(
                    f"{label} lists tool {listed_name!r}, published as {safe!r}, a name its tool "
                    f"{self.routes[safe]!r} already has; leave one out (tools=[...])"
                )
            if safe != listed_name:
                renamed.append(f"{listed_name!r} as {safe!r}")
            self.routes[safe] = listed_name
            tools.append(tool)
        unknown = [
            name
            for name in source.tools or ()
            if name not in self.routes and python_identifier(name) not in self.routes
        ]
        if unknown:
            raise ToolDefinitionError(
                f"{label}: tools= names {', '.join(map(repr, unknown))}, which it does not list; its tools are: "
                + ", ".join(entry["name"] for entry in listed)
            )
        if renamed:
            logger.warning(
                "agent_env: published %s: a tool name must be a Python identifier for TRL's call parsers to read it "
                "under every template (calls still reach the server under its own name)",
                ", ".join(renamed),
            )
        return tools

    # Rows.

    async def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The tasks of a split as dataset rows, each naming its task by `task_spec` (and, for the record, by its
        `split` and `index`); by `split` and `index` alone where the server lists no tasks but counts them.

        Raises:
            SplitNotFoundError: The server has no such split (it names the ones it has).
        """
        if split not in self._rows:
            try:
                answer = await self.client.listing("POST", "/tasks", {"split": split})
            except ORSRefusedError as error:
                if error.status != 400:
                    raise
                if "not supported" in str(
                    error
                ):  # the SDK's "list_tasks is not supported": count them instead
                    self._rows[split] = await self._counted_rows(split)
                    return _copies(self._rows[split])
                raise await self._missing_split(split, error) from None
            tasks = answer.get("tasks") if isinstance(answer, dict) else None
            if not isinstance(tasks, list) or not all(isinstance(task, dict) for task in tasks):
                raise ORSMalformedError(
                    f"{self.source.label()} answered POST /{self.env_name}/tasks with no list of task objects: "
                    f"{short(answer)}"
                )
            self._rows[split] = [
                {"prompt": list(PROMPT_ROW), "task_spec": task, "split": split, "index": index}
                for index, task in enumerate(tasks)
            ]
        return _copies(self._rows[split])

    async def _counted_rows(self, split: str) -> list[dict[str, Any]]:
        answer = await self.client.listing("POST", "/num_tasks", {"split": split})
        count = answer.get("num_tasks") if isinstance(answer, dict) else None
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ORSMalformedError(
                f"{self.source.label()} counted the tasks of {split!r} as {short(answer)}"
            )
        return [{"prompt": list(PROMPT_ROW), "split": split, "index": index} for index in range(count)]

    async def _missing_split(self, split: str, error: ORSError) -> Exception:
        """A 400 on a split's tasks: the split is missing, naming those the server has; or, when it has it (its tasks
        failed to load, say), the server's refusal as it is."""
        splits = await self.splits()
        if split in splits:
            return error
        return SplitNotFoundError(
            f"{self.source.label()} has no split {split!r} (it answered: {error}); its splits are "
            f"{', '.join(map(repr, splits)) or 'none'}",
            splits=splits,
        )

    async def splits(self) -> list[str]:
        """The names of the server's splits, in its order."""
        if self._splits is None:
            answer = await self.client.listing("GET", "/splits")
            names = [entry.get("name") if isinstance(entry, dict) else entry for entry in answer or []]
            if not isinstance(answer, list) or not all(isinstance(name, str) for name in names):
                raise ORSMalformedError(f"{self.source.label()} listed its splits as {short(answer)}")
            self._splits = [str(name) for name in names]
        return list(self._splits)

    # Episodes.

    async def open_episode(self, task: dict[str, Any]) -> tuple[Episode, str]:
        """A new session on `task` (`{"task_spec"}` or `{"split", "index"}`), its episode created, kept alive, and
        its prompt as the text the model reads first."""
        sid = await self.client.create_session()
        try:
            await self.client.create(sid, task)
            blocks = await self.client.prompt(sid)
        except BaseException:
            spawn(self._deleted(sid))
            raise
        episode = Episode(sid, task)
        episode.keep_alive = asyncio.get_running_loop().create_task(self._keep_alive(episode))
        self._live.add(episode)
        return episode, self.cut(wire.blocks_text(blocks))

    async def call(
        self, episode: Episode, name: str, arguments: Mapping[str, Any]
    ) -> wire.Output | wire.Refusal:
        """Send the model's validated call of published tool `name`: one at a time per episode, in the order made."""
        async with episode.turn:
            if episode.lost is not None:  # a ping found the session gone
                episode.fail(episode.lost)
                raise episode.lost
            if episode.fault is not None:
                raise episode.fault
            try:
                async with asyncio.timeout(self.source.call_timeout):
                    return await self.client.call(episode.sid, self.routes.get(name, name), arguments)
            except TimeoutError:
                fault = ORSTimeoutError(
                    f"tool {name!r} did not finish within call_timeout={self.source.call_timeout:g} s on "
                    f"{self.source.label()}; the session's state is unknown, so it is given up"
                )
                self.client.faults[fault.kind] += 1
                episode.fail(fault)
                raise fault from None
            except ORSError as error:
                episode.fail(error)
                raise

    def let_go(self, episode: Episode) -> None:
        """Stop keeping an episode's session alive and delete it on the server, in the background; from any thread,
        never waiting."""
        loop = background_loop()
        if not loop.is_closed():
            loop.call_soon_threadsafe(self._let_go_here, episode)

    def _let_go_here(self, episode: Episode) -> None:
        if episode not in self._live:
            return
        self._live.discard(episode)
        if episode.keep_alive is not None:
            episode.keep_alive.cancel()
            episode.keep_alive = None
        deleting = asyncio.get_running_loop().create_task(self._deleted(episode.sid))
        self._deleting.add(deleting)
        deleting.add_done_callback(self._deleting.discard)

    async def _deleted(self, sid: str) -> None:
        try:
            await self.client.delete(sid)
        except ORSError as error:
            logger.warning(
                "agent_env: deleting ORS session %s on %s failed: %s", sid, self.source.label(), error
            )

    async def _keep_alive(self, episode: Episode) -> None:
        failures = 0
        while True:
            await asyncio.sleep(self.source.ping_interval)
            try:
                await self.client.ping(episode.sid)
                failures = 0
            except ORSSessionExpiredError as error:
                episode.lost = error
                return
            except ORSError as error:
                failures += 1
                if failures >= PING_FAILURES:
                    episode.lost = error
                    return

    def holds(self) -> bool:
        """Whether this process still holds a session, or is deleting one."""
        return bool(self._live or self._deleting)

    async def delete_held(self) -> None:
        """Delete every session this process's episodes still hold, together, and wait for the deletions under way."""
        for episode in list(self._live):
            self._let_go_here(episode)
        await asyncio.gather(*list(self._deleting), return_exceptions=True)

    async def close(self) -> None:
        """Close the client's connections."""
        with contextlib.suppress(Exception):
            await self.client.aclose()

    def cut(self, text: str) -> str:
        """What the model reads of `text` (a prompt, a result): the key cut out, should the server echo it, and then
        the first `max_result_chars` characters, with a note saying it was cut."""
        text = self.key.redact(text)
        most = self.source.max_result_chars
        if len(text) <= most:
            return text
        return (
            f"{text[:most]}\n[agent_env cut this result: it has {len(text):,} characters, and only the first "
            f"{most:,} are shown (max_result_chars)]"
        )


_runtimes: weakref.WeakSet[ORSRuntime] = weakref.WeakSet()


@atexit.register
def delete_held_sessions() -> None:
    """Delete, as this process exits, every session its episodes still hold, so a trainer that ends without closing
    its environments does not leave them to the server's reaper (the SDK server's waits 15 minutes): best effort (a
    server that is gone or slow is given up on), within `EXIT_TIMEOUT` in all. A forked child leaves its parent's
    sessions alone."""
    deadline = time.monotonic() + EXIT_TIMEOUT
    for runtime in list(_runtimes):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        if runtime._pid != os.getpid() or not runtime.holds():
            continue
        with contextlib.suppress(Exception):
            submit(asyncio.wait_for(runtime.delete_held(), remaining)).result(remaining + 1)


def _listed_tools(listing: Any, label: str, key: Key) -> tuple[list[dict[str, Any]], Terminal | None]:
    """The tool entries of a `/tools` answer, each held to `{name, description, input_schema}`, and its terminal
    tool."""
    entries = listing.get("tools") if isinstance(listing, dict) else None
    if not isinstance(entries, list):
        raise ORSMalformedError(
            f'{label} listed its tools with no "tools" list: {key.redact(short(listing))}'
        )
    tools = []
    for entry in entries:
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("name"), str)
            and entry["name"]
            and isinstance(entry.get("description", ""), str | type(None))
            and (entry.get("input_schema") is None or isinstance(entry.get("input_schema"), dict))
        ):
            raise ORSMalformedError(
                f"{label} listed a tool that is no {{name, description, input_schema}}: {key.redact(short(entry))}"
            )
        tools.append(
            {
                "name": entry["name"],
                "description": entry.get("description") or "",
                "input_schema": entry.get("input_schema"),
            }
        )
    raw = listing.get("terminal_tool")
    terminal = None
    if raw:
        if not (
            isinstance(raw, dict)
            and isinstance(raw.get("name"), str)
            and isinstance(raw.get("arg"), str | type(None))
        ):
            raise ORSMalformedError(f"{label} named its terminal tool as {key.redact(short(raw))}")
        terminal = Terminal(raw["name"], raw.get("arg"), str(raw.get("description") or ""))
    return tools, terminal


def _terminal_entry(terminal: Terminal) -> dict[str, Any]:
    """The terminal tool as a listed one: it takes the model's final message as its one argument (or none)."""
    properties = (
        {
            terminal.arg: {
                "type": "string",
                "description": "Your final answer, as you would write it to the user.",
            }
        }
        if terminal.arg
        else {}
    )
    schema = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    description = terminal.description or "Give your final answer; this ends the episode."
    return {"name": terminal.name, "description": description, "input_schema": schema}


def _copies(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return copy.deepcopy(rows)


__all__ = ["PROMPT_ROW", "Episode", "ORSRuntime", "Terminal"]
