"""One episode behind one interface (list tools, reset, call a tool, read the reward, close), in process or remote."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import numbers
import reprlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import partial
from types import TracebackType
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from agent_env._deadline import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_EPISODE_BUDGET,
    Deadline,
    Overran,
    abandoned_calls,
    await_bounded,
    check_limit,
    run_bounded,
    run_coroutine_bounded,
)
from agent_env._loop import run_sync
from agent_env._rows import check_row, dataset_rows
from agent_env.environment import Environment, EnvironmentSource, environment_class_of, source_of
from agent_env.errors import (
    AgentEnvError,
    CallTimeoutError,
    DatasetRowsError,
    EpisodeBudgetError,
    EpisodeEndedError,
    EpisodeNotStartedError,
    EpisodeStateError,
    InfrastructureFailedError,
    ModelEndpointError,
    ProviderError,
    RemoteError,
    RewardError,
    SessionClosedError,
    TimedOutEpisodeError,
    ToolFailedError,
    UnscoredEpisodeError,
    raised_text,
)
from agent_env.schema._describe import short
from agent_env.tools import END_TURN, Tool

logger = logging.getLogger("agent_env.session")

T = TypeVar("T")


@dataclass(frozen=True)
class Score:
    """An episode's reward and, where its environment gives one, the breakdown: each part and why.

    Attributes:
        reward: The reward, as `Session.reward()` returns it.
        breakdown: JSON values (`Environment.reward_breakdown`), or None for a reward without parts.
    """

    reward: float
    breakdown: dict[str, Any] | None = None


class Session(ABC):
    """One episode of one environment. Every layer above (TRL, the server, scripts) talks to this, never to a transport.

    A session holds one episode at a time: `reset` starts one (again and again), `call_tool` acts on it, the
    `end_turn` tool ends it, and `reward` scores it (reading the reward of a running episode ends it first, so the
    model that never said it was done is scored on what it did). `close` frees it; closing twice does nothing.

    The environment's own code failing in `reset` or `reward` is always an `UnscoredEpisodeError`, on every kind of
    session, so that whoever reads rewards (a trainer, an evaluation) has one error to take care of.
    """

    @abstractmethod
    def tools(self) -> list[dict[str, Any]]:
        """The published tools: `name`, `description`, `inputSchema` (the MCP shape)."""

    @abstractmethod
    def reset(self, **row: Any) -> str | None:
        """Start a new episode from a dataset row; return the first observation.

        Raises:
            UnscoredEpisodeError: The environment's code failed to start the episode (its `reset`, an MCP `setup`);
                the message names the environment, the episode and what it raised.
        """

    @abstractmethod
    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Validate and run one tool call; return its result as text.

        Raises:
            ToolArgumentError: The arguments break the published schema; nothing changed.
            UnknownToolError: No tool has that name.
            ToolFailedError: The tool raised an exception that is not agent_env's.
            EpisodeStateError: No episode is running (before `reset`, or after it ended).
        """

    async def acall_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        """`call_tool` for async callers; runs in a worker thread unless a subclass does better."""
        return await asyncio.to_thread(self.call_tool, name, arguments)

    def is_async(self, name: str) -> bool:
        """Whether tool `name` is best called through `acall_tool`."""
        return False

    @abstractmethod
    def reward(self) -> float:
        """The episode's reward, ending the episode first if it is still running.

        Raises:
            UnscoredEpisodeError: The environment's code failed to score the episode (its `reward`, an MCP `reward`
                function, the `end_turn` that ends it first), or returned no finite number (`RewardError`); the
                message names the environment, the episode and what went wrong.
            EpisodeStateError: No episode was started, or the session is closed.
        """

    def score(self) -> Score:
        """The episode's reward with its breakdown, ending the episode first if it is still running; a session that
        cannot tell the breakdown (this default) gives the reward alone."""
        return Score(self.reward())

    def ended(self) -> str | None:
        """Why the episode has ended (`end_turn` was called, a call ended it), or None while it runs (or before it
        starts). Cheap: a remote session learns it with each call's answer, so a caller may ask after every call."""
        return None

    @abstractmethod
    def close(self) -> None:
        """Free the session; calling it again does nothing."""

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


REWARD_ENDS = "its reward was read, which ends a running episode"
"""Why an episode whose reward was read while it ran has ended."""

START_HINT = "call reset(...)"
"""How a session's user starts an episode, as its messages say it."""


class EpisodeState(Enum):
    """Where a session's episode is."""

    NEW = "new"
    RUNNING = "running"
    ENDED = "ended"
    CLOSED = "closed"


class LocalSession(Session):
    """A session on an `Environment` instance in this process: the one place where calls are checked and run.

    With a `call_timeout` or an `episode_budget`, the environment's code (its reset, each tool, end_turn, its reward)
    runs under them: a synchronous call on a worker thread, an async one cancelled at its timeout. A call that does
    not finish in time fails with `CallTimeoutError` (`EpisodeBudgetError` when the budget ran out), which the model
    reads; the episode has then ended, and its reward raises `TimedOutEpisodeError`. The instance is never used again
    (a thread still running a call may yet change it): it is closed once that call returns, and the next `reset`
    builds a fresh one with `renew`.

    Args:
        environment: The environment instance the episodes run on.
        start_hint: How the session's user starts an episode, as its messages say it ("call reset(...)"; a
            server whose clients start episodes another way says theirs, so no message names a call they
            cannot make).
        where: Where the session runs, as its log lines say it (a server names the episode and its host); never
            in what the model reads.
        call_timeout: Seconds one call may run; None for no limit (a server or a Ray actor, which bound calls
            themselves, builds its sessions so).
        episode_budget: Seconds all of an episode's calls may run together (the time between calls, when the model
            generates, is not counted); None for no limit.
        renew: Builds a fresh environment instance, for the episode after one whose call did not finish in time;
            without it, such a session starts no more episodes.
    """

    def __init__(
        self,
        environment: Environment,
        *,
        start_hint: str = START_HINT,
        where: str = "in process",
        call_timeout: float | None = None,
        episode_budget: float | None = None,
        renew: Callable[[], Environment] | None = None,
    ) -> None:
        check_limit("call_timeout", call_timeout)
        check_limit("episode_budget", episode_budget)
        self.environment = environment
        self.state = EpisodeState.NEW
        self.start_hint = start_hint
        self.where = where
        self.episode = f"({where})"
        """How messages name the current episode: its row's id (or the row) and where it runs."""
        self._ended_by = "end_turn was called"
        self._unscorable: RemoteError | None = None
        """What ended the episode so that it cannot be scored: a model it asks that failed, a call out of time."""
        no_limits = call_timeout is None and episode_budget is None
        self._deadline = None if no_limits else Deadline(call_timeout, episode_budget)
        self._renew = renew
        self._retired = False
        """Whether a call on the instance did not finish in time: it is never used again."""

    def tools(self) -> list[dict[str, Any]]:
        return type(self.environment).tools.published

    def reset(self, **row: Any) -> str | None:
        self._require_open()
        check_row(type(self.environment), row)
        self.state = EpisodeState.NEW  # a reset that fails leaves no episode running, not the last one
        self.episode = episode_label(row, self.where)
        if self._deadline is not None:
            self._deadline.begin()
        try:
            if self._retired:
                self._take_fresh_environment()
            observation = checked_observation(self._bounded(partial(self.environment.reset, **row), "reset"))
        except Exception as error:
            raise self._unscored(error, "its reset raised", starting=True)  # noqa: B904 (its cause is set)
        self.state = EpisodeState.RUNNING
        self._ended_by = "end_turn was called"
        self._unscorable = None
        return observation

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        tool = self._running_tool(name, arguments)
        try:
            kwargs = tool.bind(arguments)
            text = as_text(self._run_tool(tool, kwargs))
        except Exception as error:
            failure = self._failure(tool, error)
            self._heard(name, arguments, None, failure)
            raise failure from error
        self._heard(name, arguments, text, None)
        return self._finish(tool, text)

    async def acall_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        tool = self._running_tool(name, arguments)
        try:
            kwargs = tool.bind(arguments)
            text = as_text(await self._arun_tool(tool, kwargs))
        except Exception as error:
            failure = self._failure(tool, error)
            self._heard(name, arguments, None, failure)
            raise failure from error
        self._heard(name, arguments, text, None)
        return self._finish(tool, text)

    def is_async(self, name: str) -> bool:
        found = type(self.environment).tools.get(name)
        return found is not None and found.is_async

    def reward(self) -> float:
        self._require_open()
        if self.state is EpisodeState.NEW:
            raise nothing_to_score(self.start_hint)
        if self.state is EpisodeState.RUNNING:
            self._end_before_scoring()
        if (
            self._unscorable is not None
        ):  # a model it asks failed, or a call ran out of time: nothing was earned
            raise self._unscored(self._unscorable, "")
        try:
            return checked_reward(
                type(self.environment).__name__, self._bounded(self.environment.reward, "reward()")
            )
        except Exception as error:
            raise self._unscored(error, "its reward() raised")  # noqa: B904 (its cause is set)

    def _end_before_scoring(self) -> None:
        """Run `end_turn` for a model that never called it, as reading the reward does: not as the model's call (no
        tool failure logged), since a failure here is the episode's scoring failing."""
        tool = self._running_tool(END_TURN, {})
        kwargs = tool.bind({})
        self.state = EpisodeState.ENDED  # whatever end_turn does, the episode takes no more calls
        self._ended_by = REWARD_ENDS
        try:
            self._run_tool(tool, kwargs)
        except Exception as error:
            raise self._unscored(  # noqa: B904 (its cause is set)
                error, "its end_turn, run to end the episode before its reward is read, raised"
            )

    def _unscored(self, error: Exception, what: str, *, starting: bool = False) -> Exception:
        """The error a failure of the environment's code in `reset` or `reward` is raised as (see `unscored`)."""
        return unscored(
            error, what, environment=type(self.environment).__name__, episode=self.episode, starting=starting
        )

    def score(self) -> Score:
        reward = self.reward()
        try:
            breakdown = self._bounded(self.environment.reward_breakdown, "reward_breakdown()")
        except Exception as error:
            raise self._unscored(error, "its reward_breakdown() raised")  # noqa: B904 (its cause is set)
        return Score(reward, breakdown)

    def ended(self) -> str | None:
        return self._ended_by if self.state is EpisodeState.ENDED else None

    def close(self) -> None:
        if self.state is not EpisodeState.CLOSED:
            self.state = EpisodeState.CLOSED
            if not self._retired:  # a retired instance is closed once its late call returns
                self.environment.close()

    def _run_tool(self, tool: Tool, kwargs: dict[str, Any]) -> Any:
        """Run a tool's function on the instance, under the deadline when the session has one. A call out of time,
        whether the deadline's or the tool's own (an MCP server that did not answer), ends the episode."""
        action = f"tool '{tool.name}'"
        try:
            if not tool.is_async:
                return self._bounded(partial(tool.function, self.environment, **kwargs), action)
            if self._deadline is None:
                return run_sync(tool.function(self.environment, **kwargs))
            coroutine = tool.function(self.environment, **kwargs)
            return self._bounded(partial(run_coroutine_bounded, coroutine), action, True)
        except CallTimeoutError as error:
            self._time_out(error, action)
            raise

    async def _arun_tool(self, tool: Tool, kwargs: dict[str, Any]) -> Any:
        """`_run_tool` for async callers: an async tool on the caller's loop, a synchronous one off it."""
        action = f"tool '{tool.name}'"
        try:
            if self._deadline is None:
                result = tool.function(self.environment, **kwargs)
                return await result if tool.is_async else result
            if not tool.is_async:
                return await asyncio.to_thread(self._run_tool, tool, kwargs)
            started = time.monotonic()
            try:
                return await await_bounded(
                    tool.function(self.environment, **kwargs), self._deadline.timeout()
                )
            except Overran as overran:
                raise self._overran(overran, action) from None
            finally:
                self._deadline.charge(time.monotonic() - started)
        except CallTimeoutError as error:
            self._time_out(error, action)
            raise

    def _bounded(self, function: Callable[..., T], action: str, is_coroutine: bool = False) -> T:
        """`function()` (the environment's code) under the session's deadline, if it has one: on a worker thread, or
        given the timeout as its one argument (`is_coroutine`: it runs a coroutine that it cancels); past it, the
        episode ends and `CallTimeoutError` (or `EpisodeBudgetError`) is raised."""
        deadline = self._deadline
        if deadline is None:
            return function()
        started = time.monotonic()
        try:
            if is_coroutine:
                return function(deadline.timeout())
            return run_bounded(function, deadline.timeout(), partial(self._interrupted, action=action))
        except Overran as overran:
            raise self._overran(overran, action) from None
        finally:
            deadline.charge(time.monotonic() - started)

    def _overran(self, overran: Overran, action: str) -> CallTimeoutError:
        """End the episode on `action`, a call that did not finish in time, and retire the instance: it is closed
        once nothing runs in it, and never used again. Returns the error the call fails with."""
        assert self._deadline is not None, "only a session with a deadline gives up on a call"
        error = self._deadline.expired(
            action, whose="its", then="what it did is unknown, so the episode has ended"
        )
        self._time_out(error, action)
        self._retired = True
        environment = self.environment
        overran.after(partial(_close_quietly, environment))
        logger.warning(
            "agent_env: %s of %s did not finish in time %s; its instance is retired (%d calls of this process given up "
            "on are still running)",
            action,
            type(environment).__name__,
            self.where,
            abandoned_calls(),
        )
        return error

    def _interrupted(self, overran: Overran, action: str) -> None:
        """`action` was interrupted (Ctrl-C) while it ran on: what it did is unknown, so no episode runs and the
        instance is retired as after a timeout (closed once the call returns, letting go of what it took), and the
        next reset starts on a fresh one."""
        self.state, self._retired = EpisodeState.NEW, True
        overran.after(partial(_close_quietly, self.environment))
        logger.warning(
            "agent_env: %s of %s was interrupted %s; its instance is retired once it returns",
            action,
            type(self.environment).__name__,
            self.where,
        )

    def _time_out(self, error: CallTimeoutError, action: str) -> None:
        """End the episode on `action`, a call that did not finish in time: it is never scored."""
        if self._unscorable is error:
            return
        self.state, self._ended_by = EpisodeState.ENDED, timed_out_ending(error, action)
        self._unscorable = error
        error.ended = self._ended_by

    def _take_fresh_environment(self) -> None:
        """Replace the retired instance with a fresh one (`renew`), or refuse to start an episode without one."""
        if self._renew is None:
            raise TimedOutEpisodeError(
                "a call of its last episode did not finish in time, so its environment instance may still be in use, "
                "and this session has no way to build another (`renew`): open a new session"
            )
        self.environment = self._renew()
        self._retired = False

    def _running_tool(self, name: str, arguments: Any) -> Tool:
        """The tool called `name`, once the episode is known to be running. A name no tool has is refused first,
        whatever the state (the environment hears of it, as of any other refused call, when its episode runs)."""
        try:
            tool = type(self.environment).tools.resolve(name)
        except AgentEnvError as error:
            self._heard(name, arguments, None, error)
            raise
        self._require_running(name)
        return tool

    def _heard(self, name: str, arguments: Any, text: str | None, error: Exception | None) -> None:
        """Tell the environment how a call of the running episode went (`Environment.after_call`), and end the
        episode if it says the call ended it."""
        if isinstance(error, EpisodeStateError) or self.state is not EpisodeState.RUNNING:
            return
        ended = self.environment.after_call(name, arguments, text, error)
        if ended is not None:
            self.state, self._ended_by = EpisodeState.ENDED, ended
            if isinstance(error, AgentEnvError):
                error.ended = ended
            if isinstance(error, ModelEndpointError):
                self._unscorable = error

    def _failure(self, tool: Tool, error: Exception) -> Exception:
        """`error` as the call's failure: agent_env's own as it is, anything else a tool raised as a
        `ToolFailedError` (its traceback goes to the log)."""
        return error if isinstance(error, AgentEnvError) else self._failed(tool, error)

    def _failed(self, tool: Tool, error: Exception) -> ToolFailedError:
        """The error a tool that raised `error` (not an agent_env error) fails with; its traceback goes to the log."""
        logger.error(
            "agent_env: tool %r of %s failed %s",
            tool.name,
            type(self.environment).__name__,
            self.where,
            exc_info=error,
        )
        return ToolFailedError(tool_failure(tool.name, error))

    def _finish(self, tool: Tool, text: str) -> str:
        if tool.name == END_TURN and self.state is EpisodeState.RUNNING:
            self.state = EpisodeState.ENDED
        return text

    def _require_open(self) -> None:
        if self.state is EpisodeState.CLOSED:
            raise SessionClosedError()

    def _require_running(self, name: str) -> None:
        self._require_open()
        require_running(self.state, name, ended_by=self._ended_by, start_hint=self.start_hint)


def require_running(state: EpisodeState, name: str, *, ended_by: str, start_hint: str = START_HINT) -> None:
    """Raise the error a call of tool `name` gets when the open session's episode is not running.

    Args:
        state: The episode's state.
        name: The tool called.
        ended_by: What ended the episode, as the message says it ("end_turn was called").
        start_hint: How the session's user starts an episode.
    """
    if state is EpisodeState.NEW:
        raise EpisodeNotStartedError(
            f"tool '{name}' was called before the episode started: {start_hint} first"
        )
    if state is EpisodeState.ENDED:  # the model reads this: it can make no call that starts another episode
        raise EpisodeEndedError(
            f"tool '{name}' was not run: the episode has ended ({ended_by}) and takes no more calls",
            start_hint=start_hint,
        )


PASSED_ON: tuple[type[AgentEnvError], ...] = (EpisodeStateError, DatasetRowsError, ProviderError)
"""What a session's `reset` and `reward` raise as they are: a call the episode's state does not allow, a row `reset`
cannot take, and a failure of where the episode runs (a served episode gone, an MCP server dead)."""


def unscored(
    error: Exception, what: str, *, environment: str, episode: str, starting: bool = False
) -> Exception:
    """The error a session raises when `error` came out of the environment's `reset` or `reward` (`starting`: out of
    its `reset`, so the episode never started): an `UnscoredEpisodeError`, the one the environment raised (naming
    `environment` and `episode`) or a new one saying `what` raised `error` (whatever it is, an environment's own
    `AgentEnvError` or `ToolError` included), unless `error` is one of `PASSED_ON`, which is the caller's or the
    provider's, not the environment's code failing. A call that did not finish in time is a `TimedOutEpisodeError`,
    and a model the environment asks failing an `InfrastructureFailedError`: neither says anything of the model.

    A new error has `error` as its `__cause__` already, so a logged traceback shows where `error` was raised.
    """
    if isinstance(error, UnscoredEpisodeError):
        return error.named(environment, episode, starting=starting)
    failure: Exception
    if isinstance(error, CallTimeoutError):  # what the late call did is unknown
        failure = timed_out_episode(error, environment=environment, episode=episode, starting=starting)
    elif isinstance(
        error, ModelEndpointError
    ):  # not the model's failing, nor the environment's code: a service's
        failure = InfrastructureFailedError(
            str(error), environment=environment, episode=episode, cause=error, starting=starting
        )
    elif isinstance(error, PASSED_ON):
        return error
    else:
        failure = UnscoredEpisodeError(
            f"{what} {raised_text(error)}",
            environment=environment,
            episode=episode,
            cause=error,
            starting=starting,
        )
    failure.__cause__ = error
    return failure


REFUSED_ROW: tuple[type[Exception], ...] = (ValueError, LookupError, TypeError)
"""What an environment's `reset` raises when it refuses its row (an unknown task id, a value of the wrong kind): the
exceptions Python code raises for an argument it cannot take."""


def refused_row(error: BaseException) -> bool:
    """Whether `error`, an episode that failed to start, is its row's being refused (`REFUSED_ROW` from the
    environment's `reset`) rather than the environment's own code failing: a server logs the one in a line, the
    other with its traceback."""
    return isinstance(error, UnscoredEpisodeError) and error.starting and isinstance(error.cause, REFUSED_ROW)


def timed_out_episode(
    error: CallTimeoutError, *, environment: str = "", episode: str = "", starting: bool = False
) -> TimedOutEpisodeError:
    """The error reading the reward of an episode that ended on `error`, a call that did not finish in time (or a
    reset that did not, `starting`), raises on every kind of session: unscored, and left out by a trainer."""
    failure = TimedOutEpisodeError(
        str(error), environment=environment, episode=episode, cause=error, starting=starting
    )
    failure.__cause__ = error
    return failure


def lost_episode(
    error: ProviderError, *, environment: str = "", episode: str = ""
) -> InfrastructureFailedError:
    """The error reading the reward of an episode lost where it ran (`error`: a server that restarted or idled it
    out, an actor that died, a connection that dropped, a server that cannot be reached), on every kind of session:
    unscored, since what became of it is unknown, and left out by a trainer (None), as an infrastructure failure."""
    failure = InfrastructureFailedError(
        f"the episode was lost: {error}", environment=environment, episode=episode, cause=error
    )
    failure.__cause__ = error
    return failure


LOST_ENDING = "the episode was lost where it ran"
"""Why an episode has ended once where it ran lost it, as later calls' errors say it."""


def timed_out_ending(error: CallTimeoutError, action: str) -> str:
    """Why an episode has ended when `action`, one of its calls, did not finish in time, as later calls' errors say
    it ("tool 'x' was not run: the episode has ended (tool 'sleep' did not finish in time) ...")."""
    if isinstance(error, EpisodeBudgetError):
        return f"its time budget ran out during {action}"
    return f"{action} did not finish in time"


def _close_quietly(environment: Environment) -> None:
    """Close a retired instance once its late call has returned; a failure is logged, never raised (no one waits)."""
    try:
        environment.close()
    except Exception:
        logger.exception("agent_env: closing a retired %s failed", type(environment).__name__)


def episode_label(row: Mapping[str, Any], where: str) -> str:
    """How messages name the episode a row starts: the row's `task_id` or `id` (else the row itself, cut short),
    and where it runs (`task_id="desk-v4/test/0003" (in process)`)."""
    for key in ("task_id", "id"):
        value = row.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return f"{key}={short(value)} ({where})"
    return f"row {short(dict(row))} ({where})" if row else f"an empty row ({where})"


def tool_failure(name: str, error: Exception) -> str:
    """What the model reads when tool `name` raised `error`, an exception that is not agent_env's: the same text
    wherever the episode runs."""
    detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return f"tool '{name}' failed: {detail}"


def nothing_to_score(start_hint: str = START_HINT) -> EpisodeNotStartedError:
    """The error of reading the reward before any episode started."""
    return EpisodeNotStartedError(f"no episode to score: {start_hint} first")


def checked_reward(environment: str, value: Any) -> float:
    """The value `{environment}.reward()` returned, as a float; `RewardError` naming the method, what it returned and
    what to return, unless it is a finite real number (an int or a float: not a bool, not text, not NaN)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if value is None:
        returned, fix = "None", "did it forget to return the score?"
    elif isinstance(value, bool):
        returned, fix = f"the bool {value}", "return 1.0 or 0.0 instead"
    elif isinstance(value, str):
        returned, fix = f"the string {reprlib.repr(value)}", "return the number itself, not its text"
    else:
        returned, fix = (
            f"{reprlib.repr(value)} (a {type(value).__name__})",
            "return a number that TRL can average",
        )
    raise RewardError(
        f"{environment}.reward returned {returned}; a reward must be a finite real number, an int or a float like "
        f"0.5: {fix}"
    )


def checked_observation(value: Any) -> Any:
    """What an environment's `reset` returned, as it is when TRL can take it: None, a string, or a list of content
    parts (each an object with a string `type`: `{"type": "text", "text": ...}`), which TRL appends to the prompt's
    last message; else `UnscoredEpisodeError` saying what it returned and what to return (TRL would stop the step at
    `content + observation` with a bare TypeError)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(
        isinstance(part, dict) and isinstance(part.get("type"), str) for part in value
    ):
        return value
    kind = type(value).__name__
    raise UnscoredEpisodeError(
        f"its reset returned {reprlib.repr(value)} ({'an' if kind[:1] in 'aeiou' else 'a'} {kind}), not an observation "
        'TRL can append to the prompt: return a string, None, or a list of content parts like {"type": "text", '
        '"text": "..."}'
    )


def as_text(result: Any) -> str:
    """A tool's result as the text the model reads: strings as they are, anything else as compact JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str)


class LocalProvider:
    """Opens in-process sessions of one environment class with one configuration; picklable, so it can travel.

    A class built from an `EnvironmentSource` (an `MCPEnvironment`) travels as its source, and each process builds
    it again (starting its servers there).

    Args:
        environment: The environment class, or the source one is built from.
        call_timeout: Seconds one call of an episode (its reset, a tool, its reward) may run; None for no limit.
        episode_budget: Seconds all of an episode's calls may run together; None for no limit.
        **config: Passed to the environment's constructor.
    """

    def __init__(
        self,
        environment: type[Environment] | EnvironmentSource,
        *,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
        episode_budget: float | None = DEFAULT_EPISODE_BUDGET,
        **config: Any,
    ) -> None:
        check_limit("call_timeout", call_timeout)
        check_limit("episode_budget", episode_budget)
        self.environment = environment_class_of(environment)
        self.config = config
        self.name = self.environment.__name__
        self.call_timeout = call_timeout
        self.episode_budget = episode_budget

    def tools(self) -> list[dict[str, Any]]:
        """The environment's published tools, without opening an episode."""
        return self.environment.tools.published

    def open(self) -> LocalSession:
        """A new session on a fresh environment instance, under the provider's call timeout and episode budget."""
        return LocalSession(
            self._build(),
            call_timeout=self.call_timeout,
            episode_budget=self.episode_budget,
            renew=self._build,
        )

    def _build(self) -> Environment:
        return self.environment(**self.config)

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The rows of a dataset split, each one a valid `reset(**row)` (or `DatasetRowsError` naming the keys)."""
        return dataset_rows(self.environment, self.config, split)

    def close(self) -> None:
        """Free what the environment class holds in this process (`Environment.shutdown`)."""
        self.environment.shutdown()

    def __getstate__(self) -> dict[str, Any]:
        return {
            "environment": source_of(self.environment) or self.environment,
            "config": self.config,
            "call_timeout": self.call_timeout,
            "episode_budget": self.episode_budget,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        limits = {key: state[key] for key in ("call_timeout", "episode_budget") if key in state}
        self.__init__(state["environment"], **limits, **state["config"])  # type: ignore[misc]


class Provider(Protocol):
    """Where sessions of one environment come from: in process (`LocalProvider`) or a server."""

    name: str

    def tools(self) -> list[dict[str, Any]]: ...
    def open(self) -> Session: ...
    def dataset_rows(self, split: str) -> list[dict[str, Any]]: ...
    def close(self) -> None:
        """Free what this process holds for the environment; open sessions keep theirs, and it stays usable."""


@runtime_checkable
class ClassProvider(Protocol):
    """A provider that holds its environment's class in this process (`LocalProvider`, `RayProvider`), and so the
    `Tool`s behind its published dicts; a served environment's client holds only the dicts."""

    environment: type[Environment]


@runtime_checkable
class ServedClassProvider(Protocol):
    """A provider of an environment served elsewhere (`agent-env serve`, its OpenEnv surface) whose server can name
    the class it serves, so that what only the class tells (its own tool methods) can be had by importing it here."""

    def served_class(self) -> str | None:
        """`package.module:Class`, as the server names the class it serves; None when it names none."""
        ...


@runtime_checkable
class ServedSplitProvider(Protocol):
    """A provider of an environment served elsewhere whose server lists the split the environment names for
    evaluation (`Environment.evaluation_split`)."""

    def evaluation_split(self) -> str | None: ...


def evaluation_split(provider: Provider) -> str | None:
    """The split `provider`'s environment names for evaluation (`Environment.evaluation_split`), where it can be
    told: a class in this process, or a server that lists it; else None."""
    if isinstance(provider, ClassProvider):
        return provider.environment.evaluation_split
    if isinstance(provider, ServedSplitProvider):
        return provider.evaluation_split()
    return None


def tools_published_elsewhere(provider: Provider) -> frozenset[str]:
    """The names of `provider`'s tools whose description and schema another server wrote (an MCP server's), so that
    what they leave unsaid is not a docstring's to fix; none known when the class is not in this process."""
    if not isinstance(provider, ClassProvider):
        return frozenset()
    return frozenset(tool.name for tool in provider.environment.tools.values() if tool.published_elsewhere)
