"""`SchemaTool`: a tool that transformers renders as its published schema and TRL calls like a function."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agent_env._loop import run_sync

# `inspect.markcoroutinefunction` (Python 3.12+) lets a callable object say it is a coroutine function; on 3.11,
# `inspect.iscoroutinefunction` is false for every callable object, so TRL treats any SchemaTool as synchronous.
MARKS_COROUTINES = sys.version_info >= (3, 12)


class SchemaTool(dict[str, Any]):
    __doc__ = None  # no docstring, on purpose: transformers' get_json_schema refuses it instead of guessing a schema

    def __init__(self, published: Mapping[str, Any], call: Callable[[str, dict[str, Any]], Any]) -> None:
        super().__init__(
            type="function",
            function={
                "name": published["name"],
                "description": published["description"],
                "parameters": published["inputSchema"],
            },
        )
        self.__name__ = published["name"]
        self._call = call

    def __call__(self, **arguments: Any) -> Any:
        return self._call(self.__name__, arguments)

    def __repr__(self) -> str:
        return f"SchemaTool({self.__name__!r})"


class AsyncSchemaTool(SchemaTool):
    __doc__ = None

    def __init__(
        self, published: Mapping[str, Any], call: Callable[[str, dict[str, Any]], Awaitable[Any]]
    ) -> None:
        super().__init__(published, call)
        if sys.version_info >= (3, 12):
            inspect.markcoroutinefunction(self)

    if sys.version_info >= (3, 12):

        async def __call__(self, **arguments: Any) -> Any:
            return await self._call(self.__name__, arguments)

    else:

        def __call__(self, **arguments: Any) -> Any:
            # TRL on 3.11 calls every callable object synchronously: finish the coroutine on agent_env's loop.
            return run_sync(self._call(self.__name__, arguments))


__all__ = ["AsyncSchemaTool", "SchemaTool"]
