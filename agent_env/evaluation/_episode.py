"""Play one episode against the endpoint: reset a session, ask the model, run its calls, and score it.

An episode ends when an accepted `end_turn` call ends it, when a call, accepted or failed, ends it from within
(`Session.ended`: a user said goodbye, a limit was reached), on a reply with no tool calls, or after `max_turns`
replies; its reward is then the environment's (`session.score()`, which ends a running episode first), with the
breakdown where the environment gives one. A reply's calls run in order through the session, each answered by a tool message, as TRL's tool loop
runs them. A request that fails for good, an environment that raises outside a tool call (an `UnscoredEpisodeError`:
its reset or setup, its end_turn or reward, on every provider), or a tool call whose environment's host, server or
simulated user fails (a `RemoteError`: a served episode gone, a Ray actor lost, an MCP server dead, a user's
endpoint down) ends the episode as `error`, unscored and counted; the run goes on. A model the environment asks
(its simulated user, its judge) failing is counted by its error's code (`user_endpoint`) wherever it failed, and
the attempts of those endpoints that failed, retried ones included (the breakdown's `faults`, or the error's own),
are counted beside the agent endpoint's.

An environment with a simulated user (it publishes `message_user`, `agent_env.users.USER_CHANNEL`) is played by
the official protocol of such benchmarks (τ²-bench's): the model is not offered `message_user` nor `end_turn`; a
reply without tool calls is its message to the user, sent through `message_user`, whose answer comes back as a user
message; the episode ends when a call ends it (the user says goodbye, a limit is reached). Reaching `max_turns`
scores 0, as the benchmark scores an episode that neither side ended. Each reply that calls tools is announced to
the environment first (`agent_env.users.ASIDE`: its text, and how many of its calls follow), so that it counts the
reply as one message and applies its limits once every call of it has run, as τ²-bench's orchestrator does; every
call of the reply runs, in order. What the model reads after a call is what τ²-bench's environment writes (`Error: `
and the error, `_messages.upstream_text`). The rest is τ²-bench's default, with which its leaderboard runs
(`enforce_communication_protocol` off): a reply that both writes text and calls tools runs its calls, and its text,
which goes to the environment with them and never to the user, is still the agent's words in the record, where
COMMUNICATE counts it; a reply with neither, which upstream refuses, retries and leaves out of its metrics, ends the
episode as `error`, unscored and counted (`empty_reply`).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from agent_env.errors import (
    CallTimeoutError,
    ModelEndpointError,
    ProviderError,
    UnknownToolError,
    UnscoredEpisodeError,
)
from agent_env.evaluation._arms import Arm
from agent_env.evaluation._calls import ACCEPTED, CallOutcome, decode_arguments, run_call
from agent_env.evaluation._messages import (
    tool_message,
    tool_not_found,
    unreadable_arguments,
    unsupported_call,
    upstream_text,
)
from agent_env.inspection.probe import opening
from agent_env.llm import ChatClient, RequestFailedError, Sampling
from agent_env.session import Provider, Session
from agent_env.tools import END_TURN
from agent_env.training.trl import own_paragraph
from agent_env.users import ASIDE, USER_CHANNEL

ENDINGS = ("end_turn", "ended", "no_tool_calls", "max_turns", "agent_error", "error")
"""How an episode can end: `ended` is a call that ended it from within (the environment says why, in `ending`);
`agent_error`, scored 0, a reply that broke a simulated user's protocol in runs before the protocol was τ²-bench's
default (a reply with both text and calls; one with neither is now an `error`, `EMPTY_REPLY`): read in their files,
never written, and played again by `--resume`."""
EMPTY_REPLY = "empty_reply"
"""The fault of an episode ended by a reply with neither text nor a tool call under a simulated user's protocol."""
ENVIRONMENT_ERROR = "environment_error"
"""The fault counted against an episode that its environment ended (reset, reward or a served session failed); a
request that failed for good is counted as its `RequestFailedError.fault`, and a model the environment asks (its
simulated user, its judge) failing as that error's code (`user_endpoint`, `judge_endpoint`), wherever it failed."""
DEFAULT_MAX_TURNS = 10
"""The most replies an episode gets by default, in an environment without a simulated user."""
USER_MAX_TURNS = 200
"""The most replies an episode gets by default under a simulated user's protocol: τ²-bench's `max_steps`. Every
reply takes at least two of the environment's steps (a call and its answer, a message and its reply), so an
environment whose own step limit is at most twice this (τ²'s: 200) ends the episode itself first, as the benchmark
does; this only stops an episode whose environment has no such limit."""
CALL_MARKUP = re.compile(
    r"<tool_call>|<\|tool_call|\[TOOL_CALLS\]|<function=|to=functions\.|<\|python_tag\|>|\"name\"\s*:\s*\"[^\"]+\"\s*,"
    r"\s*\"(?:arguments|parameters)\""
)
"""What a tool call looks like in a reply's text, in the formats models are trained on (Hermes/Qwen, Mistral,
Llama, Qwen 3.5, gpt-oss, plain JSON): a server that ignores `tools`, or cannot parse them, leaves it there."""
HERMES_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
"""A Hermes (Qwen 2.5, Qwen 3) call in text: a JSON object with the tool's `name` and its `arguments`."""


def unreadable_call(text: str) -> bool:
    """Whether `text` writes a Hermes call whose JSON does not read as a call (no JSON object with a `name`). A
    server's parser (vLLM's `hermes`) hands on only the calls it can read and leaves such a reply as text, as TRL's
    parser does: the model wrote a malformed call, which is no sign that the server ignores tools."""
    for body in HERMES_CALL.findall(text):
        try:
            found = json.loads(body)
        except ValueError:
            return True
        if not (isinstance(found, dict) and isinstance(found.get("name"), str)):
            return True
    return False


def count_call_markup(text: str, faults: Counter[str]) -> None:
    """Count a reply without calls whose text writes one: `unreadable_call` when its JSON does not read (the model's
    malformed call), `unparsed_call` when it reads (the server ignored `tools` or cannot parse this model's calls)."""
    if unreadable_call(text):
        faults["unreadable_call"] += 1
    elif CALL_MARKUP.search(text):
        faults["unparsed_call"] += 1


@dataclass(frozen=True)
class Task:
    """One episode to play, the same in every arm.

    Attributes:
        id: The episode's id: the row's `task_id` (or `id`), else `split/index`; `#k` for the k-th repeat of a row.
        position: Its place in the run, from 0; its seed (its first reply's) is the sampling seed plus this.
        row: The dataset row `reset(**row)` gets (empty for an environment without a dataset).
    """

    id: str
    position: int
    row: dict[str, Any]


@dataclass
class Episode:
    """One played episode, as its JSONL line holds it."""

    arm: str
    episode: str
    position: int
    seed: int
    task: dict[str, Any]
    reward: float | None
    ended_by: str
    error: str | None
    turns: int
    calls: list[dict[str, Any]]
    faults: dict[str, int]
    tokens: dict[str, int] | None
    wall_time: float
    transcript: list[dict[str, Any]]
    replies: list[dict[str, Any]] = field(default_factory=list)
    opening: int = 0
    """How many of the transcript's first messages the row and the environment wrote (the rest are the run's)."""
    ending: str | None = None
    """Why the episode ended, in words, when a call ended it or the protocol did (None for the other endings)."""
    breakdown: dict[str, Any] | None = None
    """The reward's parts and why (`Session.score`), where the environment gives them."""

    def scored(self) -> bool:
        """Whether the episode ran to a reward (it did not end in an `error`)."""
        return self.ended_by != "error"

    def to_json(self) -> dict[str, Any]:
        return {"type": "episode", **asdict(self)}

    def scrubbed(self, scrub: Callable[[str], str]) -> Episode:
        """This episode with `scrub` (which cuts the API key out) applied to the text the server wrote or that
        quotes it: the replies and calls, and the tool messages, which quote the calls' arguments (the error is
        scrubbed when it is made). The run's own fields (ids, the row, the seed, verdicts, the opening the row and
        the environment wrote) are left whole: a placeholder key ("test", "EMPTY") is an ordinary word, and cutting
        it from them corrupts the record and breaks `--resume`."""
        return replace(
            self,
            calls=[
                {
                    **_scrub_fields(call, ("id", "name"), scrub),
                    "arguments": _scrub_all(call.get("arguments"), scrub),
                }
                if "arguments" in call
                else _scrub_fields(call, ("id", "name"), scrub)
                for call in self.calls
            ],
            replies=[_scrub_fields(reply, ("finish_reason", "reasoning"), scrub) for reply in self.replies],
            transcript=[
                *self.transcript[: self.opening],
                *(_scrub_text(message, scrub) for message in self.transcript[self.opening :]),
            ],
        )

    def light(self) -> Episode:
        """This episode without its transcript and replies: what a run keeps in memory to sum it up."""
        return replace(self, transcript=[], replies=[])

    @classmethod
    def from_json(cls, line: Mapping[str, Any]) -> Episode:
        return cls(**{name: line[name] for name in cls.__dataclass_fields__ if name in line})


class Player:
    """Plays episodes of one environment against one endpoint and model (one `Player` per run).

    Args:
        provider: Where sessions come from.
        client: The endpoint.
        model: The model to ask.
        sampling: The sampling settings.
        max_turns: The most replies an episode gets.
        schemas: Each published tool's input schema, by name.
        executor: Where the session's blocking work runs (opening, reset, synchronous tools, reward, close): a
            served session's are requests.
    """

    def __init__(
        self,
        provider: Provider,
        client: ChatClient,
        model: str,
        sampling: Sampling,
        max_turns: int,
        schemas: Mapping[str, Any],
        executor: Executor | None = None,
    ) -> None:
        self.provider = provider
        self.client = client
        self.model = model
        self.sampling = sampling
        self.max_turns = max_turns
        self.schemas = schemas
        self.executor = executor

    async def _blocking(self, function: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, function)

    async def _open(self) -> Session:
        """A new session; one that opens after all while this episode is cancelled is closed, not left open."""
        opening = asyncio.ensure_future(self._blocking(self.provider.open))
        try:
            return await asyncio.shield(opening)
        except asyncio.CancelledError:
            opening.add_done_callback(_close_if_opened)
            raise

    async def play(self, task: Task, arm: Arm) -> Episode:
        """Play `task` in `arm` to its end; never raises for a fault of the server, the model or the environment."""
        started = time.perf_counter()
        record = Episode(
            arm=arm.name,
            episode=task.id,
            position=task.position,
            seed=self.sampling.seed + task.position,
            task={key: value for key, value in task.row.items() if key != "prompt"},
            reward=None,
            ended_by="error",
            error=None,
            turns=0,
            calls=[],
            faults={},
            tokens=None,
            wall_time=0.0,
            transcript=[],
        )
        faults: Counter[str] = Counter()
        session: Session | None = None
        phase = "reset"  # where an UnscoredEpisodeError comes from: the reset or the reward
        try:
            session = opened = await self._open()
            observation = await self._blocking(lambda: opened.reset(**task.row))
            phase = "the reward"
            record.transcript = opening(task.row.get("prompt"), own_paragraph(observation, task.row))
            record.opening = len(record.transcript)
            record.ended_by = await self._turns(opened, arm, task, record, faults)
            # "error": a reply the user's protocol cannot take ended it, unscored (`record.error` says why)
            if record.ended_by == "error":
                pass
            elif self._talks_to_user() and record.ended_by == "max_turns":
                record.reward = 0.0
                record.ending = record.ending or f"the episode reached --max-turns ({self.max_turns})"
                record.breakdown = {"reward": 0.0, "note": f"{record.ending}: neither the agent nor the user "
                                    "ended the conversation, which the official protocol scores 0"}  # fmt: skip
            else:
                score = await self._blocking(opened.score)
                record.reward, record.breakdown = (
                    official_reward(score.reward, score.breakdown),
                    score.breakdown,
                )
                faults.update(services_faults(score.breakdown))
        except RequestFailedError as error:
            record.ended_by, record.error = "error", self.client.scrub(str(error))
            faults[error.fault] += 1
        except ModelEndpointError as error:  # a model the environment asks (its user) failed in a call
            record.ended_by = "error"
            record.error = self.client.scrub(f"{type(error).__name__}: {error}")
            faults[error.code] += 1
            faults.update(error.faults)
        except UnscoredEpisodeError as error:  # reset or reward failed: a service, or the environment's code
            record.ended_by = "error"
            cause = error.cause
            if isinstance(cause, ModelEndpointError):
                what = "the episode could not start" if phase == "reset" else "it could not be scored"
                record.error = self.client.scrub(f"{type(cause).__name__} at {phase} ({what}): {cause}")
                faults[cause.code] += 1
                faults.update(cause.faults)
            else:
                record.error = self.client.scrub(environment_failure(error))
                faults[unscored_fault(error)] += 1
        except (
            CallTimeoutError
        ) as error:  # a call outside the model's (its simulated user's reply) out of time
            record.ended_by = "error"
            record.error = self.client.scrub(f"{type(error).__name__}: {error}")
            faults[error.code] += 1
        except Exception as error:  # the environment (reset, reward, its provider) failed: this episode only
            record.ended_by = "error"
            record.error = self.client.scrub(environment_failure(error))
            faults[ENVIRONMENT_ERROR] += 1
        finally:
            if session is not None:  # closed even when the run is cancelled (another episode failed it)
                await asyncio.shield(self._blocking(session.close))
        record.faults = dict(faults)
        record.wall_time = round(time.perf_counter() - started, 4)
        return record.scrubbed(self.client.scrub)

    def _talks_to_user(self) -> bool:
        """Whether the environment has a simulated user, whose official protocol this run then plays."""
        return USER_CHANNEL in self.schemas

    def _offered(self, arm: Arm) -> list[dict[str, Any]]:
        """The tools the model is offered: the arm's, but the user's channel and `end_turn` under the user protocol,
        where a plain reply is the message to the user and only a call or the user ends the episode."""
        if not self._talks_to_user():
            return arm.tools
        hidden = (USER_CHANNEL, END_TURN)
        return [tool for tool in arm.tools if tool.get("function", {}).get("name") not in hidden]

    async def _turns(
        self, session: Session, arm: Arm, task: Task, record: Episode, faults: Counter[str]
    ) -> str:
        """Ask and answer until the episode ends; returns how it ended."""
        messages = record.transcript
        tools = self._offered(arm)
        for turn in range(1, self.max_turns + 1):
            fields = self.sampling.fields(task.position, turn)
            reply = await self.client.complete(self.model, messages, tools, fields, faults)
            record.turns = turn
            messages.append(reply.message)
            record.replies.append(
                {"finish_reason": reply.finish_reason, "usage": reply.usage, "reasoning": reply.reasoning}
            )
            if reply.usage is not None:
                tokens = record.tokens or {"prompt": 0, "completion": 0}
                tokens["prompt"] += reply.usage[0]
                tokens["completion"] += reply.usage[1]
                record.tokens = tokens
            if reply.finish_reason == "length":
                faults["truncated"] += 1
            if self._talks_to_user():
                ended = await self._user_turn(session, reply, turn, record, faults)
                if ended is not None:
                    return ended
                continue
            if not reply.tool_calls:
                count_call_markup(reply.content, faults)
                return "no_tool_calls"
            if reply.content.strip():
                faults["text_with_calls"] += 1
            if len(reply.tool_calls) > 1:
                faults["parallel_calls"] += 1
            ended = await self._run_calls(session, reply.tool_calls, turn, record, faults)
            if ended is not None:
                return ended
        return "max_turns"

    async def _user_turn(
        self, session: Session, reply: Any, turn: int, record: Episode, faults: Counter[str]
    ) -> str | None:
        """One reply under the user protocol, as τ²-bench plays it by default (`enforce_communication_protocol`
        off): its calls run, any text beside them going to the environment's record, not the user (`ASIDE`); or its
        text goes to the user and the user's answer comes back as a user message. A reply with neither ends the
        episode unscored. Returns how the episode ended, or None while it goes on."""
        text = reply.content.strip()
        if reply.tool_calls:
            if text:
                faults["text_with_calls"] += 1
            if len(reply.tool_calls) > 1:
                faults["parallel_calls"] += 1
            return await self._reply_calls(session, text, reply.tool_calls, turn, record, faults)
        if not text:
            faults[EMPTY_REPLY] += 1
            record.error = (
                "the model's reply had neither text nor a tool call, which τ²-bench's protocol cannot take: "
                "upstream retries such a simulation and leaves it out of its metrics as an infrastructure error; "
                "here the episode is unscored, and --resume plays it again"
            )
            return "error"
        # a call written as text is counted, and goes to the user as text, as τ²-bench's agent sends it
        count_call_markup(text, faults)
        answer = await self._blocking(lambda: session.call_tool(USER_CHANNEL, {"message": text}))
        ended = self._ended(session, record)
        if answer or ended is None:  # no answer: the episode ended before the user could answer (a limit)
            record.transcript.append({"role": "user", "content": answer})
        return ended

    async def _reply_calls(
        self,
        session: Session,
        text: str,
        calls: Sequence[Any],
        turn: int,
        record: Episode,
        faults: Counter[str],
    ) -> str | None:
        """A reply's calls under the user protocol: announced to the environment first (its text, the calls that will
        reach it and those answered here), then every one run in order, each answered as τ²-bench's environment
        answers it. Returns how the episode ended, or None while it goes on."""
        screened = [self._screened(call) for call in calls]
        reaching = sum(outcome is None for outcome in screened)
        announcement = {"text": text, "calls": reaching, "refused": len(calls) - reaching}
        try:
            await self._blocking(lambda: session.call_tool(ASIDE, announcement))
        except UnknownToolError:  # an environment that keeps no such record: its calls count one by one
            if text:
                faults["aside_unheard"] += 1
        for call, outcome in zip(calls, screened, strict=True):
            if outcome is None:
                if session.ended() is not None:  # it ended before this reply's calls could run
                    continue
                outcome = await run_call(session, call, self.schemas, executor=self.executor, upstream=True)
            self._answered(call, outcome, turn, record, faults)
        return self._ended(session, record)

    def _screened(self, call: Any) -> CallOutcome | None:
        """What eval answers itself, as τ²-bench's environment would, for a call that never reaches the environment
        under the user protocol: one of another type, one naming a tool the model was not offered (the user's
        channel, `end_turn`, the hidden announcement), one whose arguments are not JSON. None for a call the session
        runs (a name no tool has among them: the environment counts it as a failed call, as upstream does)."""
        if call.type != "function":
            return CallOutcome("unsupported_type", upstream_text(error=unsupported_call(call.type)))
        if call.name in WITHHELD:
            return CallOutcome("unknown_tool", upstream_text(error=tool_not_found(call.name)))
        if call.name in self.schemas:
            _, problem = decode_arguments(call.arguments)
            if problem is not None:
                error = unreadable_arguments(call.name, self.schemas[call.name], problem)
                return CallOutcome("not_json", upstream_text(error=error))
        return None

    def _answered(
        self, call: Any, outcome: CallOutcome, turn: int, record: Episode, faults: Counter[str]
    ) -> None:
        """Count and record a call's outcome, and the tool message that answers it."""
        if outcome.verdict in ("not_json", "unknown_tool", "unsupported_type"):
            faults[outcome.verdict] += 1
        record.calls.append(
            {
                "turn": turn,
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "verdict": outcome.verdict,
            }
        )
        record.transcript.append(tool_message(call.id, outcome.content))

    def _ended(self, session: Session, record: Episode) -> str | None:
        """`ended` once a call has ended the episode from within (the environment's reason kept), else None."""
        why = session.ended()
        if why is None:
            return None
        record.ending = why
        return "ended"

    async def _run_calls(
        self, session: Session, calls: Sequence[Any], turn: int, record: Episode, faults: Counter[str]
    ) -> str | None:
        """Run a reply's calls in order, each answered by a tool message; how the episode ended if one ended it
        (`end_turn`, or a call, accepted or failed, that ended it from within: a failed call can reach τ²'s
        `max_errors`; the calls after it are answered as refused), else None.
        """
        ended: str | None = None
        for call in calls:
            outcome = await run_call(session, call, self.schemas, executor=self.executor)
            self._answered(call, outcome, turn, record, faults)
            if ended is None and outcome.verdict == ACCEPTED and call.name == END_TURN:
                ended = "end_turn"
            elif ended is None:  # a failed call ends it too when it reaches a limit (τ²'s max_errors)
                ended = self._ended(session, record)
        return ended


WITHHELD = frozenset({USER_CHANNEL, END_TURN, ASIDE})
"""The tools a model is not offered under a simulated user's protocol: a call of one by name is, as upstream's agent
would find, a tool not found."""


def official_reward(reward: float, breakdown: Mapping[str, Any] | None) -> float:
    """The reward eval reports: the benchmark's own (`official_reward` in the breakdown) where the environment gives
    it beside another it trains on (τ²'s `reward="checks"`), else the environment's reward."""
    official = (breakdown or {}).get("official_reward")
    if isinstance(official, int | float) and not isinstance(official, bool):
        return float(official)
    return float(reward)


def services_faults(breakdown: Mapping[str, Any] | None) -> dict[str, int]:
    """The failed attempts of the services an environment asked for the episode (its simulated user's endpoint,
    its judge's), retried ones included, as its reward's breakdown reports them (`faults`: counts by kind, each
    kind prefixed by whose, `user_rate_limited`); none when it reports none."""
    found = (breakdown or {}).get("faults")
    if not isinstance(found, Mapping):
        return {}
    return {
        str(kind): count
        for kind, count in found.items()
        if isinstance(count, int) and not isinstance(count, bool) and count > 0
    }


def unscored_fault(error: UnscoredEpisodeError) -> str:
    """The fault an episode its environment could not score is counted as: where it ran failing, by that failure's
    code (a call out of time, `call_timeout` or `episode_budget`; a full server, `too_many_episodes`), another
    service by the error's own code (`infrastructure_failed`), the environment's code failing `environment_error`."""
    if not error.infrastructure:
        return ENVIRONMENT_ERROR
    return error.cause.code if isinstance(error.cause, ProviderError) else error.code


def environment_failure(error: Exception) -> str:
    """Why an episode whose environment failed ended, as its record says it: an episode the environment could not
    start or score (`UnscoredEpisodeError`) by what failed, without the episode's own name (the record is the
    episode's, and episodes that fail alike are counted together); anything else by what was raised."""
    if isinstance(error, UnscoredEpisodeError) and error.environment:
        return f"{error.environment} could not {'start' if error.starting else 'score'} it: {error.why}"
    if isinstance(error, UnscoredEpisodeError):
        return str(error)
    return f"the environment raised {type(error).__name__}: {error}"


STRUCTURE = ("role", "type")
"""The keys of a message whose values are its structure, not text: never scrubbed."""


def _scrub_fields(item: dict[str, Any], names: Sequence[str], scrub: Callable[[str], str]) -> dict[str, Any]:
    return {key: _scrub_text(value, scrub) if key in names else value for key, value in item.items()}


def _scrub_text(value: Any, scrub: Callable[[str], str]) -> Any:
    """`value` with `scrub` applied to every string in it but a mapping's keys and its `STRUCTURE` values."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {key: item if key in STRUCTURE else _scrub_text(item, scrub) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub_text(item, scrub) for item in value]
    return value


def _scrub_all(value: Any, scrub: Callable[[str], str]) -> Any:
    """`value` with `scrub` applied to every string in it, a mapping's keys too: a call's arguments as a server
    that parsed them sent them, every key and value its text."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {
            scrub(key) if isinstance(key, str) else key: _scrub_all(item, scrub)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_scrub_all(item, scrub) for item in value]
    return value


def _close_if_opened(opening: asyncio.Future[Any]) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()
