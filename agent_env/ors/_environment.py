"""The environment class an `ORSEnvironment` builds in each process: its instances are episodes, each an ORS session.

An instance runs one episode at a time. A reset opens a session on the row's task and returns the session's prompt;
tools send validated calls and read their results; the episode ends when a result says `finished: true` (its
reward counted), when `end_turn` is called, or when a fault ends it; the reward is read, and the session deleted.

The reward is the sum of the rewards the episode's results carried (ORS: rewards are "accumulated over an episode";
a null adds nothing), so a sparse environment's reward is its finishing call's; 0.0 when none carried one, as an
episode the model never finished earned nothing. An episode a fault ended has no reward: `reward()` raises an
`UnscoredEpisodeError` (an `InfrastructureFailedError` when the server or the way to it failed, which a trainer
leaves unscored; a plain one when the environment's own tool raised on the server, which it scores 0).
"""

from __future__ import annotations

import weakref
from typing import Any, ClassVar

from agent_env._loop import on_background_loop, run_sync, submit
from agent_env.environment import Environment, built_class, remote_tool
from agent_env.errors import (
    DatasetRowsError,
    EpisodeStateError,
    InfrastructureFailedError,
    ToolArgumentError,
    ToolError,
    UnknownToolError,
    UnscoredEpisodeError,
)
from agent_env.ors import _wire as wire
from agent_env.ors._runtime import Episode, ORSRuntime
from agent_env.ors._settings import ORSSettings
from agent_env.ors.errors import ORSError, ORSMalformedError, ORSToolFailedError

FINISHED = "a tool's result said finished: true"
"""What ended an episode its environment finished, as the message of a later call says it."""


class ORSToolsEnvironment(Environment):
    """The base of the classes `ORSEnvironment.environment_class()` builds: each instance plays one ORS session at a
    time, and deletes it once the episode is scored, reset or closed."""

    source: ClassVar[ORSSettings]
    runtime: ClassVar[ORSRuntime]

    def __init__(self) -> None:
        self._episode: Episode | None = None
        self._record: Episode | None = None
        """The last episode, kept for its breakdown once its session is let go."""
        self._outcome: float | UnscoredEpisodeError | None = None
        self._finalizer: weakref.finalize | None = None

    def reset(
        self,
        prompt: Any = None,
        task_spec: Any = None,
        split: str | None = None,
        index: int | None = None,
        **columns: Any,
    ) -> str | None:
        """Let go of the last episode's session and open one on the row's task: its `task_spec`, or its `split` and
        `index`; the observation is the session's prompt. `prompt` and any other column are the trainer's."""
        self._let_go()
        task = _task(task_spec, split, index, columns)
        opening = submit(self.runtime.open_episode(task))
        try:
            episode, observation = opening.result()
        except ORSError as error:
            raise _reset_failure(error, task) from error
        except BaseException:  # interrupted (Ctrl-C) while its session opens: let go of it once it is open
            opening.add_done_callback(self._let_go_unclaimed)
            raise
        self._episode = self._record = episode
        self._outcome = None
        self._finalizer = weakref.finalize(self, self.runtime.let_go, episode)
        return observation

    def after_call(
        self, name: str, arguments: Any, result: str | None, error: Exception | None
    ) -> str | None:
        """End the episode when a result said `finished: true`, or when a fault ended its session."""
        episode = self._episode
        if episode is None:
            return None
        if episode.finished:
            return FINISHED
        if episode.fault is not None:
            return f"its ORS session failed ({episode.fault.kind})"
        return None

    def reward(self) -> float:
        """The sum of the rewards its results carried (0.0 if none did); read once, then the session is deleted.

        Raises:
            InfrastructureFailedError: A fault (the server unreachable, the session expired, a stream cut short, a
                malformed answer, 429 or 5xx past the retries) ended the episode before it finished.
            UnscoredEpisodeError: The environment's tool raised on the server (an SSE `event: error`).
        """
        if self._outcome is None:
            episode = self._episode
            if episode is None:
                raise EpisodeStateError(
                    "this episode's ORS session was let go before its reward was read (its session was closed); "
                    "reset to start another episode"
                )
            try:
                self._outcome = _outcome(episode)
            finally:
                self._let_go()
        if isinstance(self._outcome, UnscoredEpisodeError):
            raise self._outcome
        return self._outcome

    def reward_breakdown(self) -> dict[str, Any] | None:
        """Whether the environment finished the episode, and the reward each of its results carried, in order."""
        record = self._record
        if record is None:
            return None
        return {"finished": record.finished, "rewards": list(record.rewards)}

    def close(self) -> None:
        """Let go of the episode's session."""
        self._let_go()

    @classmethod
    def faults(cls) -> dict[str, int]:
        """Every fault this class met in this process so far, retried ones included, by kind (`unavailable`,
        `rate_limited`, `stream_cut`, ...: each `ORSError`'s `kind`)."""
        return cls.runtime.faults()

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The server's tasks of `split`, each a row that names its task."""
        return run_sync(self.runtime.dataset_rows(split))

    async def call_remote(self, name: str, arguments: dict[str, Any]) -> str:
        """Send one validated call of tool `name`; return the text the model reads.

        Raises:
            ToolArgumentError, UnknownToolError, ToolError: The server did not run it (`ok: false`), with its words.
            ORSError: A fault: the episode ends (see `reward`).
        """
        episode = self._episode
        if episode is None:  # scored and let go: the session has ended the episode already
            raise ToolError(f"tool '{name}' was called after the episode's ORS session was let go")
        result = await on_background_loop(self.runtime.call(episode, name, arguments))
        if isinstance(result, wire.Refusal):
            raise _refusal(name, result, episode, self.runtime)
        episode.rewards.append(result.reward)
        episode.finished = result.finished
        return self.runtime.cut(wire.blocks_text(result.blocks))

    def _let_go(self) -> None:
        episode, self._episode = self._episode, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if episode is not None:
            self.runtime.let_go(episode)

    def _let_go_unclaimed(self, opening: Any) -> None:
        if not opening.cancelled() and opening.exception() is None:
            self.runtime.let_go(opening.result()[0])


def _task(task_spec: Any, split: Any, index: Any, columns: dict[str, Any]) -> dict[str, Any]:
    """What `/create` takes for a row: its task spec, or its split and index."""
    if task_spec is not None:
        if not isinstance(task_spec, dict):
            raise DatasetRowsError(
                f"a row's task_spec must be a JSON object (the ORS task), not {type(task_spec).__name__}"
            )
        return {"task_spec": task_spec}
    if isinstance(split, str) and isinstance(index, int) and not isinstance(index, bool):
        return {"split": split, "index": index}
    given = ", ".join(sorted(["prompt", *columns]))
    raise DatasetRowsError(
        "a row of an ORS environment names its task by task_spec (a JSON object), or by split (a name) and index "
        f"(a whole number), as env.dataset(split) makes them; this one has {given}"
    )


def _reset_failure(error: ORSError, task: dict[str, Any]) -> Exception:
    """What a reset that met `error` raises: the error itself for a refused key (no episode can start, so the
    trainer stops and says why); an `UnscoredEpisodeError` when the server refused the task or the environment's code
    failed on it (4xx, 500); else an `InfrastructureFailedError` (the server, or the way to it, failed)."""
    from agent_env.ors.errors import ORSUnauthorizedError

    if isinstance(error, ORSUnauthorizedError):
        return error
    shown = wire.dumps(task)
    shown = shown if len(shown) <= 200 else shown[:200] + "..."
    if error.status is not None and (400 <= error.status < 500 or error.status == 500):
        failure: UnscoredEpisodeError = UnscoredEpisodeError(
            f"its ORS server could not start the task {shown}: {error}", cause=error
        )
    else:
        failure = InfrastructureFailedError(
            f"its ORS session could not be opened on the task {shown} ({error.kind}): {error}", cause=error
        )
    failure.__cause__ = error
    return failure


def _outcome(episode: Episode) -> float | UnscoredEpisodeError:
    """The episode's reward, or why it has none."""
    fault = episode.fault
    if fault is None or episode.finished:
        return float(sum(reward for reward in episode.rewards if reward is not None))
    if isinstance(fault, ORSToolFailedError):
        failure: UnscoredEpisodeError = UnscoredEpisodeError(
            f"its tool raised on the ORS server: {fault}", cause=fault
        )
    else:
        failure = InfrastructureFailedError(f"its ORS session failed ({fault.kind}): {fault}", cause=fault)
    failure.__cause__ = fault
    return failure


def _refusal(name: str, refusal: wire.Refusal, episode: Episode, runtime: ORSRuntime) -> Exception:
    """The error a call the server did not run (`ok: false`) raises, with the server's words for the model."""
    said = runtime.key.redact(refusal.error)
    if refusal.reason in (wire.INPUT_VALIDATION, wire.BAD_INPUT_SHAPE):
        return ToolArgumentError(f"Invalid arguments for tool '{name}' (the ORS server refused them): {said}")
    if refusal.reason == wire.NOT_FOUND:
        return UnknownToolError(f"the ORS server has no tool {name!r}: {said}")
    if refusal.reason == wire.EPISODE_FINISHED:
        # Its finishing result never reached this session (and with it, perhaps, the reward): no reward can be trusted.
        fault = ORSMalformedError(
            f"the ORS server says the episode has finished, but no result this session read said so: {said}"
        )
        runtime.client.faults[fault.kind] += 1
        episode.fail(fault)
        return fault
    return ToolError(f"tool '{name}' was not run by the ORS server: {said}")


def build_class(source: ORSSettings) -> type[ORSToolsEnvironment]:
    """The environment class of `source` (an `ORSEnvironment`, which the class names as its source) in this process:
    its server asked for the environment's name and tools, which are published.

    A class of its own, made fresh (never a shared one changed), named after `source.name` or the environment's name
    on the server.
    """
    runtime = ORSRuntime(source)
    try:
        listed = run_sync(runtime.start())
        tools = runtime.publish(listed, remote_tool)
    except BaseException:
        run_sync(runtime.close())
        raise
    name = source.name or runtime.env_name
    return built_class(ORSToolsEnvironment, name, source, runtime, tools)


__all__ = ["FINISHED", "ORSToolsEnvironment", "build_class"]
