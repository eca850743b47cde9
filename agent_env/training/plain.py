"""What a plain TRL environment (one written without agent_env) shows the model for each tool: TRL's own rendering.

This is the lossy side of every comparison agent_env draws (`agent-env eval --compare lossy`, `render --lossy`, the
token counts of `check` and `demo`), so it must be exactly what TRL would show, never lossier:

- **A tool method** (an `Environment`'s `@tool`): the environment's own method, as TRL's `GRPOTrainer` discovers it
  (listed on the class, fetched bound) and as `apply_chat_template` converts it: transformers' `get_json_schema`
  on its real signature, type hints and docstring.
- **A tool known only by its listing** (an MCP server's, an OpenEnv server's, a served environment's): what TRL's
  own port of a listed tool does (`trl.experimental.openreward`, which writes one typed method per tool from the
  listed JSON Schema), then `get_json_schema` on that method. For an MCP server this is the listing as the server
  sent it, before agent_env normalized it.

Where TRL cannot render a tool at all (`get_json_schema` raises on a TypedDict hint, a parameter without a docstring
entry, `**kwargs`; the port cannot bind a parameter named `from`), a plain TRL environment with it could not even
start: the trainer raises when it builds its first prompt. The tool is then shown in its **nearest form**, the same
function changed only where TRL refused it, and `PlainTool.refused` says what TRL raised:

- a type hint TRL cannot read becomes the nearest one it can, at every depth: a TypedDict, pydantic model,
  dataclass or other mapping `dict`, a sequence or set `list`, a one-element or open `tuple` `list`, any other
  class `Any`;
- a parameter the docstring does not describe is described by its published description (or its name in words),
  a tool without a docstring by its published description, and `**kwargs` is left out;
- a listed parameter whose name cannot be a Python parameter (`from`, `max-depth`) is left out.

Every tool keeps its published name (the name calls are held to), whatever its method is called.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import keyword
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from agent_env.session import ClassProvider, Provider
from agent_env.tools import Tool

Form = Literal["method", "listing"]

_SCALARS = (int, float, str, bool, type(None))
_BASIC = frozenset({int, float, str, bool, type(None), list, tuple, dict, Any})


@dataclass(frozen=True)
class PlainTool:
    """One tool as a plain TRL environment shows it.

    Attributes:
        name: The tool's published name.
        schema: What the chat template receives: `{"type": "function", "function": {"name", "description",
            "parameters"}}`, exactly as `get_json_schema` builds it (or its nearest form's, when `refused`).
        form: `method` (the environment's own tool method) or `listing` (TRL's port of the tool's listed schema).
        refused: What TRL raised on the tool as it is, when it cannot render it (a plain TRL environment with it
            could not start); None when `schema` is TRL's own rendering of it.
    """

    name: str
    schema: dict[str, Any]
    form: Form
    refused: str | None = None


def plain_tools(provider: Provider) -> list[PlainTool]:
    """Each of `provider`'s tools as a plain TRL environment shows it, in the order TRL lists them (by name).

    Raises:
        ImportError: transformers (the `trl` extra) is missing, or the installed TRL has no port of listed tools.
    """
    if isinstance(provider, ClassProvider):
        environment = provider.environment
        found = [plain_tool(tool, environment) for tool in environment.tools.values()]
    else:  # a served environment: its tools are known here only by their listing
        found = [
            _listing_tool(tool["name"], tool["description"], tool["inputSchema"]) for tool in provider.tools()
        ]
    return sorted(found, key=lambda tool: tool.name)


def plain_tool(tool: Tool, environment: type) -> PlainTool:
    """One tool of `environment`, a class in this process, as a plain TRL environment shows it."""
    if tool.published_elsewhere:
        return _listing_tool(tool.name, tool.description, tool.listed_schema)
    return _method_tool(tool, environment)


def unrenderable(tools: list[PlainTool]) -> dict[str, str]:
    """The tools TRL cannot render, each with what it raised."""
    return {tool.name: tool.refused for tool in tools if tool.refused is not None}


def _json_schema() -> Callable[[Callable[..., Any]], dict[str, Any]]:
    try:
        from transformers.utils import get_json_schema
    except ImportError as error:
        raise ImportError(
            f"TRL's rendering of tool methods is transformers' get_json_schema, and transformers is missing "
            f"({error}): pip install 'agent-env[trl]'"
        ) from None
    return get_json_schema


def _rendered(function: Callable[..., Any], name: str) -> dict[str, Any]:
    """`get_json_schema(function)`, under the tool's published name."""
    schema = _json_schema()(function)
    schema["function"]["name"] = name
    return schema


def _method_tool(tool: Tool, environment: type) -> PlainTool:
    # Bound to the class, as TRL's `getattr(instance, name)` binds it to an instance of it: the same signature
    # without the receiver, and a docstring looked up along the same MRO when the method has none of its own.
    method = types.MethodType(tool.function, environment)
    try:
        return PlainTool(tool.name, _rendered(method, tool.name), "method")
    except Exception as error:  # whatever get_json_schema raises, TRL's apply_chat_template raises too
        refused = _said(error)
    return PlainTool(tool.name, _rendered(_nearest_method(method, tool), tool.name), "method", refused)


def _nearest_method(method: Callable[..., Any], tool: Tool) -> Callable[..., Any]:
    """The method changed only where TRL refused it (see the module docstring): a function of the same name whose
    hints TRL can read and whose docstring describes every parameter."""
    from transformers.utils.chat_template_utils import parse_google_format_docstring

    signature = inspect.signature(method)
    try:
        hints = typing.get_type_hints(method)
    except Exception:  # a hint that does not resolve: every parameter is then read as Any
        hints = {}
    described, said, _ = parse_google_format_docstring((inspect.getdoc(method) or "").strip())
    properties = tool.input_schema.get("properties", {})
    parameters, annotations, lines = [], {}, []
    for parameter in signature.parameters.values():
        if parameter.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL):
            continue
        hint = nearest_hint(hints.get(parameter.name, Any))
        annotations[parameter.name] = hint
        parameters.append(parameter.replace(annotation=hint, kind=inspect.Parameter.KEYWORD_ONLY))
        text = (said or {}).get(parameter.name) or _described(properties.get(parameter.name), parameter.name)
        lines.append(f"    {parameter.name}: {text}")
    if "return" in hints:  # kept: get_json_schema shows a return type it can read, and skips one it cannot
        annotations["return"] = hints["return"]
    docstring = "\n".join(
        [described or tool.description or tool.name, *(["", "Args:", *lines] if lines else [])]
    )

    def nearest(**arguments: Any) -> None:
        """A stand-in: only its signature, hints and docstring are read."""

    nearest.__name__ = tool.name
    nearest.__doc__ = docstring
    nearest.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    nearest.__annotations__ = annotations
    return nearest


def _described(schema: Any, name: str) -> str:
    text = schema.get("description") if isinstance(schema, Mapping) else None
    return " ".join(str(text).split()) if text else name.replace("_", " ")


def nearest_hint(hint: Any) -> Any:
    """The nearest type hint to `hint` that transformers' `get_json_schema` reads, at every depth (see the module
    docstring); a hint it reads already comes back as it is."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return nearest_hint(arguments[0])
    if origin is None:
        return _nearest_class(hint)
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[tuple(nearest_hint(argument) for argument in arguments)]  # noqa: UP007
    if origin is Literal:
        return hint if all(type(value) in _SCALARS for value in arguments) else Any
    if origin is tuple:
        if len(arguments) == 1 or (len(arguments) == 2 and arguments[1] is Ellipsis):
            return list[nearest_hint(arguments[0])]  # type: ignore[misc]
        return (
            tuple.__class_getitem__(tuple(nearest_hint(argument) for argument in arguments))
            if arguments
            else tuple
        )
    if origin is dict or (isinstance(origin, type) and issubclass(origin, collections.abc.Mapping)):
        return dict[str, nearest_hint(arguments[1])] if len(arguments) == 2 else dict  # type: ignore[misc]
    if origin is list or (isinstance(origin, type) and issubclass(origin, collections.abc.Iterable)):
        return list[nearest_hint(arguments[0])] if arguments else list  # type: ignore[misc]
    return Any


def _nearest_class(hint: Any) -> Any:
    if hint in _BASIC:
        return hint
    if isinstance(hint, type) and issubclass(hint, Enum):
        values = [member.value for member in hint]
        return hint if values and all(type(value) in _SCALARS for value in values) else Any
    if isinstance(hint, type) and (
        typing.is_typeddict(hint)
        or dataclasses.is_dataclass(hint)
        or issubclass(hint, collections.abc.Mapping)
        or hasattr(hint, "model_json_schema")  # a pydantic model
    ):
        return dict
    if (
        isinstance(hint, type)
        and issubclass(hint, collections.abc.Iterable)
        and not issubclass(hint, str | bytes)
    ):
        return list
    return Any


def _listing_tool(name: str, description: str, listed: Any) -> PlainTool:
    """A tool known by its listing, as TRL's port of a listed tool binds it and `get_json_schema` renders it."""
    schema = listed if isinstance(listed, Mapping) else {}
    spec = {"name": name, "description": description, "input_schema": schema}
    try:
        return PlainTool(name, _rendered(_ported(spec), name), "listing")
    except Exception as error:  # the port cannot bind it (`from`), or get_json_schema refuses it
        refused = _said(error)
    listed = schema.get("properties")
    properties: Mapping[str, Any] = listed if isinstance(listed, Mapping) else {}
    bindable = {key: value for key, value in properties.items() if _bindable(key)}
    required = [key for key in schema.get("required", []) if key in bindable]
    nearest = {**spec, "input_schema": {"type": "object", "properties": bindable, "required": required}}
    return PlainTool(name, _rendered(_ported(nearest), name), "listing", refused)


def _bindable(name: Any) -> bool:
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def _ported(spec: dict[str, Any]) -> Callable[..., Any]:
    """The method TRL's port of listed tools writes for `spec`, fetched from an instance as TRL's trainer fetches it.

    Raises:
        LookupError: The port skipped the tool (it logs a warning and binds nothing), as it does for a parameter
            whose name is no Python identifier.
    """
    bind = _port()
    port = type("PlainPort", (), {})
    bind(port, spec)
    method = port.__dict__.get(spec["name"])
    if method is None:
        raise LookupError(f"TRL's port of listed tools skipped tool {spec['name']!r} (a name it cannot bind)")
    return getattr(port(), spec["name"])


def _port() -> Callable[[type, dict[str, Any]], None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TRL warns on any import from trl.experimental
        try:
            from trl.experimental.openreward.environment import _bind_tool_method
        except ImportError as error:
            raise ImportError(
                "a tool known only by its listing (an MCP or OpenEnv server's) is shown the way TRL's own port of "
                "listed tools shows it (trl.experimental.openreward, in TRL 1.16), which the installed TRL lacks "
                f"({error}): pip install 'trl>=1.16'"
            ) from None
    return _bind_tool_method


def _said(error: BaseException) -> str:
    """What TRL raised, in one line: its first sentence (transformers goes on to list what it supports)."""
    text = " ".join(str(error).split())
    first, stop, _ = text.partition(". ")
    return f"{type(error).__name__}: {first}{stop.strip()}" if text else type(error).__name__


__all__ = ["PlainTool", "nearest_hint", "plain_tool", "plain_tools", "unrenderable"]
