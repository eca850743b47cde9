"""`SchemaTool`: a tool that transformers renders as its schema and TRL calls like a function."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agent_env._loop import run_sync
from agent_env.errors import AgentEnvError

# `inspect.markcoroutinefunction` (Python 3.12+) lets a callable object say it is a coroutine function; on 3.11,
# `inspect.iscoroutinefunction` is false for every callable object, so TRL treats any SchemaTool as synchronous.
MARKS_COROUTINES = sys.version_info >= (3, 12)


class ModelText(str):
    """A message for the model that stays itself inside a `repr`.

    TRL gives the model a failed call's error as `str({"error": str(error)})`: a dict's repr, which would write
    the message's newlines as `\\n` and escape its quotes. As the message's own text, it reads as written.
    """

    __slots__ = ()

    def __str__(self) -> str:
        return self  # `str(error)` hands the message on as it is, still a ModelText

    def __repr__(self) -> str:
        return str.__str__(self)


def readable(error: AgentEnvError) -> AgentEnvError:
    """`error`, its message made a `ModelText`, so TRL's `{"error": str(error)}` shows the model clean text."""
    if len(error.args) == 1 and isinstance(error.args[0], str) and not isinstance(error.args[0], ModelText):
        error.args = (ModelText(error.args[0]),)
    return error


class SchemaTool(dict[str, Any]):
    __doc__ = None  # no docstring, on purpose: transformers' get_json_schema refuses it instead of guessing a schema

    def __init__(
        self,
        published: Mapping[str, Any],
        call: Callable[[str, dict[str, Any]], Any],
        *,
        shown: Mapping[str, Any] | None = None,
    ) -> None:
        shown = shown if shown is not None else published
        super().__init__(
            type="function",
            function={
                "name": published["name"],
                "description": shown["description"],
                "parameters": shown["inputSchema"],
            },
        )
        self.__name__ = published["name"]
        self._call = call

    def __call__(self, /, **arguments: Any) -> Any:
        try:
            return self._call(self.__name__, arguments)
        except AgentEnvError as error:
            readable(error)
            raise

    def __repr__(self) -> str:
        return f"SchemaTool({self.__name__!r})"


class AsyncSchemaTool(SchemaTool):
    __doc__ = None

    def __init__(
        self,
        published: Mapping[str, Any],
        call: Callable[[str, dict[str, Any]], Awaitable[Any]],
        *,
        shown: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(published, call, shown=shown)
        if sys.version_info >= (3, 12):
            inspect.markcoroutinefunction(self)

    async def _acall(self, arguments: dict[str, Any]) -> Any:
        try:
            return await self._call(self.__name__, arguments)
        except AgentEnvError as error:
            readable(error)
            raise

    if sys.version_info >= (3, 12):

        async def __call__(self, /, **arguments: Any) -> Any:
            return await self._acall(arguments)

    else:

        def __call__(self, /, **arguments: Any) -> Any:
            # TRL on 3.11 calls every callable object synchronously: finish the coroutine on agent_env's loop.
            return run_sync(self._acall(arguments))


__all__ = ["AsyncSchemaTool", "ModelText", "SchemaTool", "readable"]
