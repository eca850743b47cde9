"""`SchemaTool`: a tool that transformers renders as its schema and TRL calls like a function.

TRL has found an environment's tools in two ways, and a SchemaTool set on an environment instance is found by both:

- TRL >= 1.15 lists the functions of the instance's class (`inspect.getmembers(type(instance),
  predicate=inspect.isfunction)`) and fetches each from the instance, where the SchemaTool shadows the function.
- TRL <= 1.14, and TRL's main as of July 2026, list the instance's bound methods (`inspect.getmembers(instance,
  predicate=inspect.ismethod)`). A bound SchemaTool answers `inspect.ismethod` as a bound method does: its
  `__class__` says `types.MethodType`, and it has the `__func__` (the class's function for the tool) and the
  `__self__` (the instance) of one. It is still a dict (`type(tool)` is SchemaTool), so transformers renders it as
  the schema it carries.

Whatever reads a method's function to learn about it then reads the class's function, whose type hints are only the
basic types: transformers' `get_json_schema`, which `parse_response` calls on any method it is given to type a call's
arguments, and TRL's `VLLMClient.chat` on any callable. So `get_json_schema` (transformers' own, and the copies TRL
imported) is taught that a SchemaTool's schema is the one it carries (`teach_get_json_schema`, by the factory and by
any SchemaTool made while transformers is loaded); any other function goes to transformers' as before.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import types
import weakref
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
    __doc__ = None  # no docstring of its own: what a docstring would say is the schema it carries

    _bound: tuple[weakref.ref[Any], Callable[..., Any]] | None = None
    awaited = False
    """Whether TRL awaits it: then a bound one's `__func__` is a coroutine function, and otherwise it is not."""

    def __init__(
        self,
        published: Mapping[str, Any],
        call: Callable[[str, dict[str, Any]], Any],
        *,
        shown: Mapping[str, Any] | None = None,
        bound: tuple[Any, Callable[..., Any]] | None = None,
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
        if bound is not None:  # (the environment instance, its class's function for this tool)
            if inspect.iscoroutinefunction(bound[1]) != self.awaited:
                raise TypeError(
                    f"{type(self).__name__} {self.__name__!r} is bound to {bound[1]!r}, which "
                    f"{'is not' if self.awaited else 'is'} a coroutine function: TRL, which reads a bound method's "
                    "function, would call it the wrong way"
                )
            # weak: the instance holds its tools, not the reverse
            self._bound = (weakref.ref(bound[0]), bound[1])
        if "transformers" in sys.modules:  # it renders or parses here; the factory teaches it too
            teach_get_json_schema()

    # A bound SchemaTool's face as a bound method (see the module's docstring). `type(tool)` stays SchemaTool, and
    # `isinstance(tool, dict)` (transformers' first question) stays true: Python asks the type before `__class__`.
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return types.MethodType if self._bound is not None else type(self)

    @property
    def __func__(self) -> Callable[..., Any]:
        """The environment class's function for this tool, as a bound method's `__func__`."""
        if self._bound is None:
            raise AttributeError(f"SchemaTool {self.__name__!r} is not bound to an environment instance")
        return self._bound[1]

    @property
    def __self__(self) -> Any:
        """The environment instance, as a bound method's `__self__` (None once it is collected)."""
        if self._bound is None:
            raise AttributeError(f"SchemaTool {self.__name__!r} is not bound to an environment instance")
        return self._bound[0]()

    def __call__(self, /, **arguments: Any) -> Any:
        try:
            return self._call(self.__name__, arguments)
        except AgentEnvError as error:
            readable(error)
            raise

    def __reduce_ex__(self, protocol: Any) -> Any:
        if self._bound is not None:
            raise TypeError(
                f"SchemaTool {self.__name__!r} is bound to an environment instance and its live session, which do not "
                "pickle: pickle the factory (env.factory), which makes them afresh, or dict(tool) for the schema"
            )
        return super().__reduce_ex__(protocol)

    def __repr__(self) -> str:
        return f"SchemaTool({self.__name__!r})"


def schema_of(tool: SchemaTool) -> dict[str, Any]:
    """The schema a SchemaTool carries, as a plain dict (what `get_json_schema` returns for it)."""
    return {**tool, "function": dict(tool["function"])}


_taught_lock = threading.Lock()
_taught = False


def teach_get_json_schema() -> None:
    """Make transformers' `get_json_schema` return a SchemaTool's own schema (`schema_of`) wherever transformers
    and TRL call it; any other function goes to transformers' as before. Once per process; nothing without
    transformers.

    Modules that imported it before (transformers' response parser, TRL's `vllm_client`) hold their own reference,
    which is replaced too, when it is transformers' function; a module imported later imports the taught one.
    """
    global _taught
    if _taught:
        return
    with _taught_lock:
        if _taught:
            return
        try:
            from transformers.utils import chat_template_utils
        except ImportError:  # no transformers yet: nothing calls get_json_schema
            return
        original = chat_template_utils.get_json_schema
        if not hasattr(original, "__agent_env_taught__"):

            @functools.wraps(original)
            def get_json_schema(func: Callable[..., Any]) -> dict[str, Any]:
                if isinstance(func, SchemaTool):
                    return schema_of(func)
                return original(func)

            get_json_schema.__agent_env_taught__ = True  # type: ignore[attr-defined]
            for name, module in list(sys.modules.items()):
                if (
                    name.split(".")[0] in ("transformers", "trl")
                    and vars(module).get("get_json_schema") is original
                ):
                    module.get_json_schema = get_json_schema  # type: ignore[attr-defined]
        _taught = True


class AsyncSchemaTool(SchemaTool):
    __doc__ = None
    awaited = MARKS_COROUTINES  # TRL on 3.11 calls every callable object synchronously

    def __init__(
        self,
        published: Mapping[str, Any],
        call: Callable[[str, dict[str, Any]], Awaitable[Any]],
        *,
        shown: Mapping[str, Any] | None = None,
        bound: tuple[Any, Callable[..., Any]] | None = None,
    ) -> None:
        super().__init__(published, call, shown=shown, bound=bound)
        if sys.version_info >= (3, 12) and bound is None:
            # A bound one is read through its `__func__`, which must then be a coroutine function itself.
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


__all__ = ["AsyncSchemaTool", "ModelText", "SchemaTool", "readable", "schema_of", "teach_get_json_schema"]
