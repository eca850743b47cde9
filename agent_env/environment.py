"""The authoring contract: subclass `Environment`, mark tool methods with `@tool`, implement `reset` and `reward`."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from agent_env.tools import END_TURN, Tool, ToolSet, tool

TURN_ENDED = "Turn ended."
"""What `end_turn` answers."""


class Environment:
    """One agent environment: state for one episode at a time, tools the model calls, and a reward.

    Subclasses mark tool methods with `@tool`; their published schemas are built and checked when the class is
    defined, so a tool that cannot be published fails there, with its name and the reason. An instance runs one
    episode at a time: `reset` starts one (and may be called again to start the next), tools act on it, `end_turn`
    ends it, and `reward` scores it. Nothing here checks the episode's order of calls: a `Session` does, so that
    every way of reaching an environment (in process, TRL, MCP) holds calls to the same rules.

    Class attributes:
        tools: The published tools, by name, built from the class's `@tool` methods when the class is defined.
        evaluation_split: The split `agent-env eval` plays when it is told none: the one a benchmark reports on
            (τ²-bench's `base`). None, the default, for `test`.
    """

    tools: ClassVar[ToolSet]
    evaluation_split: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.tools = ToolSet.collect(cls)

    def reset(self, **row: Any) -> str | None:
        """Start a new episode and return the observation the model reads first (or None for none).

        Args:
            **row: A dataset row (TRL passes every column, `prompt` included); take the keys you need and
                ignore the rest.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement reset(**row)")

    def reward(self) -> float:
        """The episode's reward; called after the episode ends (or when the trainer asks for it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement reward()")

    def after_call(
        self, name: str, arguments: Any, result: str | None, error: Exception | None
    ) -> str | None:
        """Hear how a call of the running episode went, and say whether it ended the episode.

        The session calls this after every call it takes while the episode runs: run (`result` is the text the
        model reads), or refused or failed (`error`: an unknown tool, arguments that break the schema, a tool that
        raised). It is how an environment keeps the episode's record of calls, counts errors, or ends the episode
        from within (a simulated user said goodbye, a limit was reached). The default keeps nothing and ends nothing.

        Returns:
            Why the episode has ended, when this call ended it ("the user ended the conversation"); else None. The
            session then refuses further calls, as after `end_turn`, and `Session.ended()` says why.
        """
        return None

    def reward_breakdown(self) -> dict[str, Any] | None:
        """Each part of the last reward and why, as JSON values, for the reward's caller (`Session.score`) and the
        records of an evaluation; called after `reward`. None, the default, for a reward that has no parts."""
        return None

    def close(self) -> None:
        """Free what the environment holds (processes, connections); its session calls this when it closes.

        Calling it again does nothing. The default holds nothing.
        """

    @classmethod
    def shutdown(cls) -> None:
        """Free what the class holds for all its episodes in this process (an MCP environment's spare servers);
        episodes still open keep what is theirs. Calling it again does nothing. The default holds nothing."""

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The rows of a dataset split, each one a valid `reset(**row)`; an environment without tasks has none."""
        raise NotImplementedError(f"{type(self).__name__} has no dataset: it defines no dataset_rows(split)")

    @tool
    def end_turn(self) -> str:
        """End your turn. Call this once you are done; the episode is then scored."""
        return TURN_ENDED


Environment.tools = ToolSet.collect(Environment)


@runtime_checkable
class EnvironmentSource(Protocol):
    """A picklable description from which each process builds an environment class, for environments whose tools
    are only known at run time (an `agent_env.mcp.MCPEnvironment`: MCP servers' tools). Every provider takes one
    wherever it takes a class, and sends the description, never the class, to other processes."""

    def environment_class(self) -> type[Environment]:
        """The environment class, built once per process; it names this source in `__environment_source__`."""
        ...

    def label(self) -> str:
        """How messages, and processes comparing what they run, name it."""
        ...


EnvironmentReference = str | type[Environment] | EnvironmentSource
"""What names an environment: a built-in name or `package.module:name` (for `agent_env.envs.load_environment`), a
class, or an `EnvironmentSource`."""


def environment_class_of(environment: type[Environment] | EnvironmentSource) -> type[Environment]:
    """The class itself, or the one a source builds.

    Raises:
        LookupError: Neither an `Environment` subclass nor an `EnvironmentSource`.
    """
    if isinstance(environment, type) and issubclass(environment, Environment):
        return environment
    if not isinstance(environment, type) and isinstance(environment, EnvironmentSource):
        return environment.environment_class()
    raise LookupError(
        f"{environment!r} is not an environment: pass an Environment subclass or an MCPEnvironment (or, where a "
        "name is taken, a built-in name or 'package.module:Class')"
    )


def source_of(environment: type[Environment]) -> EnvironmentSource | None:
    """The source a class was built from (its `__environment_source__`), or None for a class written in Python."""
    source = vars(environment).get("__environment_source__")
    return source if isinstance(source, EnvironmentSource) else None


E = TypeVar("E", bound=Environment)


def built_class(base: type[E], name: str, source: Any, runtime: Any, tools: list[Tool]) -> type[E]:
    """The class a source builds in a process for tools that run elsewhere (an MCP server's, an ORS environment's).

    `base` subclassed as `name`, made fresh (never a shared class changed). It holds `source`, the `EnvironmentSource`
    it was built from (which providers ship, never the class: `source_of` reads it), and `runtime`, what reaches the
    tools. It publishes `tools` and agent_env's `end_turn`, unless the tools have an `end_turn` of their own, which
    then ends the episode as agent_env's does: the session ends it when it is called.
    """
    namespace = {
        "__module__": base.__module__,
        "__qualname__": name,
        "__environment_source__": source,
        "source": source,
        "runtime": runtime,
    }
    environment: type[E] = type(name, (base,), namespace)
    own_end_turn = any(tool.name == END_TURN for tool in tools)
    environment.tools = ToolSet([*tools, *([] if own_end_turn else [Environment.tools[END_TURN]])])
    return environment


def remote_tool(name: str) -> Callable[..., Awaitable[str]]:
    """The function of tool `name` on a `built_class`, whose instances send each validated call on to where the
    tool runs (their `call_remote`)."""

    async def call(environment: Any, /, **arguments: Any) -> str:
        return await environment.call_remote(name, arguments)

    call.__name__ = name
    return call


_REFERENCE = re.compile(r"(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):(?P<name>[A-Za-z_]\w*)")


def class_reference(environment: type) -> str | None:
    """`package.module:Class`, by which another process imports `environment` itself; None for a class that cannot
    be imported by name: one built at run time from a source (an `MCPEnvironment`'s), defined in a function or in
    `__main__`, or not found under its own name."""
    if source_of(environment) is not None:
        return None
    module, name = environment.__module__, environment.__qualname__
    if module == "__main__" or getattr(sys.modules.get(module), name, None) is not environment:
        return None
    reference = f"{module}:{name}"
    return reference if _REFERENCE.fullmatch(reference) else None


def import_class(reference: str) -> type[Environment]:
    """The `Environment` subclass written in Python that `package.module:Class` names (a `class_reference`),
    imported here. A module of Python's standard library is never imported for it: no environment lives there.

    Raises:
        ImportError: Its module cannot be imported here.
        LookupError: `reference` names no such class.
    """
    found = _REFERENCE.fullmatch(reference)
    if found is None:
        raise LookupError(f"{reference!r} is no 'package.module:Class'")
    module_name = found["module"]
    if module_name.partition(".")[0] in sys.stdlib_module_names:
        raise LookupError(
            f"{reference!r} names a module of Python's standard library, where no environment is"
        )
    environment = getattr(importlib.import_module(module_name), found["name"], None)
    if not (isinstance(environment, type) and issubclass(environment, Environment)):
        raise LookupError(f"{reference!r} names no Environment subclass here")
    if source_of(environment) is not None:
        raise LookupError(f"{reference!r} is built from a source, not written in Python")
    return environment


__all__ = [
    "END_TURN",
    "Environment",
    "EnvironmentReference",
    "EnvironmentSource",
    "built_class",
    "class_reference",
    "environment_class_of",
    "import_class",
    "remote_tool",
    "source_of",
    "tool",
]
