"""The errors agent_env raises: small classes, each with a stable code and a message that says how to fix it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar


class AgentEnvError(Exception):
    """Base class of every error agent_env raises on purpose."""

    code: ClassVar[str] = "agent_env_error"
    ended: str | None = None
    """On the error of a call that ended its episode (the last failure its environment allows): why, as
    `Session.ended()` says it; carried across every wire with the error, so a remote session knows too."""


class ToolDefinitionError(AgentEnvError, TypeError):
    """A tool cannot be published as written; raised when its environment class is defined."""

    code = "tool_definition"


class ToolError(AgentEnvError, ValueError):
    """A tool call the model can fix: the message is written for the model and names what to change."""

    code = "tool_error"


class ToolFailedError(ToolError):
    """A tool raised an exception that is not agent_env's (a bug, or a service it needs that is down).

    The model reads the same text for it wherever the episode runs ("tool 'lend' failed: Exception: database
    down"), as the result of a call that failed; the traceback, and where it ran, go to the log.
    """

    code = "tool_failed"


class ToolArgumentError(ToolError):
    """A tool call's arguments break the tool's published input schema."""

    code = "invalid_arguments"


class UnknownToolError(ToolError, LookupError):
    """A call names a tool the environment does not publish."""

    code = "unknown_tool"


class DatasetRowsError(AgentEnvError, TypeError):
    """A dataset row that the environment's `reset` cannot be called with: a key it cannot take, or one it needs."""

    code = "dataset_rows"


class SplitNotFoundError(AgentEnvError, LookupError):
    """An environment's `dataset_rows` was asked for a split it does not have; `splits` names the ones it has, in its
    order, so that a command given no split can play the first of them (`agent_env._splits`)."""

    code = "split_not_found"

    def __init__(self, message: str, splits: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.splits = tuple(splits)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.splits))


class ProviderError(AgentEnvError):
    """Where an episode runs failed, not the environment's code in it: a served episode gone, a Ray actor lost, an MCP
    server dead (`agent_env.server.errors.RemoteError` and its kind). A session passes it on as it is."""

    code = "provider_error"


class UnscoredEpisodeError(AgentEnvError, RuntimeError):
    """An episode could not be scored: the environment's own code failed on it (its `reset` or an MCP `setup`
    function, the `end_turn` that settles it, its `reward` or an MCP `reward` function raised, or gave no score).

    Every provider raises it (in process, served, Ray, OpenEnv) from `reset` or `reward`, never from a tool call, whose
    failure the model reads instead. What a trainer makes of it is one rule in one place,
    `agent_env.training.unscored_reward`; an evaluation ends the episode as an `error`, unscored and counted.

    Whose failure it is decides that rule (`infrastructure`): this class charges it to the episode, which a trainer
    scores as it scores a failed MCP server, 0; `InfrastructureFailedError` says a service outside the episode failed,
    so the episode says nothing about the model.

    Attributes:
        why: What failed, in words (`reward() raised ZeroDivisionError: division by zero`).
        environment: The environment's name, once the session names it ("" when the error crossed a wire: the
            message already says it).
        episode: Which episode, once the session names it: its row's id (or the row) and where it ran.
        cause: The exception the environment's code raised (it is this error's `__cause__` too, so a logged
            traceback shows it). An agent_env error (a user endpoint's failing reset) crosses a wire and a pickle
            with it; any other is None once it crossed (`why` says what it was).
        crossed: Whether it came over a wire or through a pickle from the process that ran the episode (a server,
            a Ray actor), whose log holds its traceback; False where it was raised.
        starting: Whether the episode failed to start (its `reset` or `setup` raised): then it never ran, and the
            message says it could not start, not that it could not be scored.
    """

    code = "unscored_episode"
    infrastructure: ClassVar[bool] = False
    """Whether a service outside the episode failed (so the episode says nothing about the model)."""

    def __init__(
        self,
        why: str,
        *,
        environment: str = "",
        episode: str = "",
        cause: BaseException | None = None,
        starting: bool = False,
    ) -> None:
        super().__init__(why)
        self.why = why
        self.environment = environment
        self.episode = episode
        self.cause = cause
        self.crossed = False
        self.starting = starting

    def named(self, environment: str, episode: str, *, starting: bool = False) -> UnscoredEpisodeError:
        """This error, naming `environment` and `episode` unless it names them already (and, with `starting`, an
        episode that failed to start); returns itself. One that crossed a wire unnamed keeps its message as it came:
        the server's words name both already."""
        self.starting = self.starting or starting
        if self.crossed and not self.environment:
            return self
        self.environment = self.environment or environment
        self.episode = self.episode or episode
        return self

    def __str__(self) -> str:
        if not self.environment:
            return self.why
        episode = f" the episode of {self.episode}" if self.episode else " an episode"
        return f"{self.environment} could not {'start' if self.starting else 'score'}{episode}: {self.why}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Its names travel, and an agent_env cause; any other cause may not pickle, and `why` says what it was.
        cause = self.cause if isinstance(self.cause, AgentEnvError) else None
        return (_rebuilt, (type(self), self.why, self.environment, self.episode, cause, self.starting))


def _rebuilt(
    cls: type[UnscoredEpisodeError],
    why: str,
    environment: str,
    episode: str,
    cause: BaseException | None = None,
    starting: bool = False,
) -> UnscoredEpisodeError:
    """An `UnscoredEpisodeError` (or subclass) unpickled with its names, which `Exception`'s pickling drops."""
    error = cls(why, environment=environment, episode=episode, cause=cause, starting=starting)
    error.crossed = True
    return error


class InfrastructureFailedError(UnscoredEpisodeError):
    """An episode could not be scored because a service outside it failed (a simulated user's model endpoint, a
    judge that is down): the episode says nothing about the model, so a trainer leaves it unscored (None) rather than
    scoring it 0. An environment raises it from `reset` or `reward`; the session names the environment and episode."""

    code = "infrastructure_failed"
    infrastructure = True


class RewardError(UnscoredEpisodeError, TypeError):
    """An environment's `reward()` returned something that is not a finite real number, so its episode could not be
    scored."""

    code = "invalid_reward"


class EpisodeStateError(AgentEnvError, RuntimeError):
    """A call that the episode's state does not allow (before reset, or after it ended)."""

    code = "episode_state"


class EpisodeNotStartedError(EpisodeStateError):
    """A tool was called, or the reward read, before `reset` started an episode."""

    code = "episode_not_started"


class EpisodeEndedError(EpisodeStateError):
    """A tool was called after the episode ended; only `reset` starts a new one.

    Its message is for the model, which cannot start an episode, so it says only that the episode has ended; how
    the session's user starts another (`start_hint`) is a note, which a traceback shows and `str(error)` leaves out.
    """

    code = "episode_ended"

    def __init__(self, message: str, *, start_hint: str = "call reset(...)") -> None:
        super().__init__(message)
        self.add_note(f"{start_hint} to start another episode")


class RemoteError(ProviderError, ConnectionError):
    """Something outside the model failed: a served environment's server, a Ray actor, an MCP server, a simulated
    user's endpoint. Not the model's to fix, so an evaluation ends the episode unscored rather than blaming it."""

    code = "remote_error"


class CallTimeoutError(RemoteError, TimeoutError):
    """A call (a reset, a tool call, reading the reward) did not finish in time: past its call timeout (a tool that
    never returns, a server or actor that does not answer), or past what was left of its episode's time budget
    (`EpisodeBudgetError`).

    The model reads it, as any failed call; then the episode has ended, its state unknown (the call may still be
    running: a Python thread cannot be stopped), so it is never scored: reading its reward raises
    `TimedOutEpisodeError`, which a trainer leaves out (None) and an evaluation counts by this error's code.
    """

    code = "call_timeout"


class EpisodeBudgetError(CallTimeoutError):
    """A call did not finish within what was left of its episode's time budget: the wall-clock time all the
    episode's calls (its reset, tool calls and reward) may take together."""

    code = "episode_budget"


class TimedOutEpisodeError(UnscoredEpisodeError):
    """An episode that ended on a call that did not finish in time (its `cause`: a `CallTimeoutError`, or an
    `EpisodeBudgetError`), so it cannot be scored: what the call did is unknown, and it says nothing about the model.
    A trainer leaves it out of its group (None), as an infrastructure failure; an evaluation ends it unscored and
    counts it by its cause's code (`call_timeout`, `episode_budget`)."""

    code = "timed_out_episode"
    infrastructure = True


class ModelEndpointError(RemoteError):
    """A model the environment itself asks (a simulated user, a judge) could not be asked: its endpoint failed for
    good (down, refused, rate-limited or timed out past its retries) or answered nothing usable. The episode ends
    unscored, never with a reward the agent did not earn: raised from a call (the user could not answer), it ends the
    episode, whose reward the session then refuses as an `InfrastructureFailedError`, as it does when it is raised
    while scoring (a judge).

    Attributes:
        faults: The failed attempts met before it gave up (its retried faults included), by kind as records count
            them, prefixed by whose endpoint it is (`user_rate_limited`, `judge_timeout`); carried by a pickle (Ray) and
            across an HTTP wire.
    """

    code = "model_endpoint"

    def __init__(self, message: str = "", *, faults: Mapping[str, int] | None = None) -> None:
        super().__init__(message)
        self.faults: dict[str, int] = dict(faults or {})


class UserEndpointError(ModelEndpointError):
    """A simulated user's endpoint failed for good, or answered with no text: the conversation cannot go on."""

    code = "user_endpoint"


class JudgeEndpointError(ModelEndpointError):
    """A judge's endpoint failed for good, or answered what cannot be read as its verdicts; or no judge was given for a
    reward that has nothing else to measure."""

    code = "judge_endpoint"


class SessionClosedError(EpisodeStateError):
    """A session was used after `close`."""

    code = "session_closed"

    def __init__(self, message: str = "this session is closed; open a new one") -> None:
        super().__init__(message)


def raised_text(error: BaseException) -> str:
    """An exception as a message quotes it: `ZeroDivisionError: division by zero` (its type alone when it says
    nothing)."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
