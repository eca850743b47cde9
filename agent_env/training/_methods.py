"""Fallback tool methods: one real function per published tool, whose type hints and docstring TRL can read."""

from __future__ import annotations

import inspect
import keyword
import typing
from collections.abc import Callable
from typing import Any

_BASIC_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


def basic_type(schema: dict[str, Any]) -> Any:
    """The plain Python type hint closest to a schema: all that `get_json_schema` can say about it."""
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else list(declared or [])
    hints = [_BASIC_TYPES[name] for name in names if name in _BASIC_TYPES]
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        hints.append(basic_type(branch))
    if not hints and "enum" in schema:
        hints = [type(value) for value in schema["enum"]]
    if not hints and "const" in schema:
        hints = [type(schema["const"])]
    unique = list(dict.fromkeys(hints))
    if not unique:
        return Any
    return unique[0] if len(unique) == 1 else typing.Union[tuple(unique)]  # noqa: UP007


def method_docstring(published: dict[str, Any]) -> str:
    """A Google docstring carrying the tool's description and one line per argument."""
    properties = {
        name: schema
        for name, schema in published["inputSchema"].get("properties", {}).items()
        if name.isidentifier() and not keyword.iskeyword(name)
    }
    lines = [published["description"] or published["name"].replace("_", " ")]
    if properties:
        lines += ["", "Args:"]
        for name, schema in properties.items():
            text = " ".join(str(schema.get("description") or name.replace("_", " ")).split())
            lines.append(f"    {name}: {text}")
    return "\n".join(lines)


RECEIVERS = ("self", "cls")
"""The names transformers' `get_json_schema` reads as a method's receiver (its first parameter, unannotated)."""


def tool_method(published: dict[str, Any], qualname: str, *, awaited: bool = False) -> Callable[..., Any]:
    """A function `name(self, /, **arguments)` that calls the tool on the instance's session.

    Its signature and annotations say only the basic types, as TRL's method schemas can; it is the fallback that a
    TRL which took tools from the class would render, and the `__func__` of the instance's SchemaTool (so what reads
    a bound method's function, `inspect.iscoroutinefunction` first, reads this one). With `awaited`, it is a
    coroutine function that awaits the session's `acall_tool`: the form of an async tool where TRL awaits one
    (Python 3.12 and later). Any argument name reaches the tool: the receiver is positional-only, so a tool's own
    parameter named `self` is an argument like any other (the signature then names the receiver `cls`, which
    `get_json_schema` also reads as one).
    """
    name = published["name"]
    schema = published["inputSchema"]
    required = set(schema.get("required", []))
    properties = schema.get("properties", {})

    async def acall(receiver: Any, /, **arguments: Any) -> str:
        return await receiver._session.acall_tool(name, arguments)

    def scall(receiver: Any, /, **arguments: Any) -> str:
        return receiver._session.call_tool(name, arguments)

    call: Callable[..., Any] = acall if awaited else scall

    receiver = next((word for word in RECEIVERS if word not in properties), RECEIVERS[0])
    parameters = [inspect.Parameter(receiver, inspect.Parameter.POSITIONAL_ONLY)]
    annotations: dict[str, Any] = {}
    for argument, argument_schema in properties.items():
        if not argument.isidentifier() or keyword.iskeyword(argument) or argument == receiver:
            # No Python parameter can be called `from`, nor share the receiver's name (both `self` and `cls` are
            # the tool's own); `**arguments` still takes it.
            continue
        hint = basic_type(argument_schema)
        default = inspect.Parameter.empty if argument in required else argument_schema.get("default")
        parameters.append(
            inspect.Parameter(argument, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint)
        )
        annotations[argument] = hint
    call.__name__ = name
    call.__qualname__ = qualname
    call.__doc__ = method_docstring(published)
    call.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    call.__annotations__ = annotations
    return call
