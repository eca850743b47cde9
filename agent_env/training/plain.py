"""What a plain TRL environment (one written without agent_env) shows the model for each tool: TRL's own rendering.

This is the lossy side of every comparison agent_env draws (`agent-env eval --compare lossy`, `render --lossy`, the
token counts of `check` and `demo`), so it must be exactly what TRL would show, never lossier:

- **A tool method** (an `Environment`'s `@tool`): the environment's own method, as TRL's `GRPOTrainer` discovers it
  (listed on the class, fetched bound) and as `apply_chat_template` converts it: transformers' `get_json_schema`
  on its real signature, type hints and docstring. So it is for an environment served elsewhere (`agent-env serve`,
  its OpenEnv surface) whose server names its class (`package.module:Class`), when that class can be imported here
  and has the served tool set (the same fingerprint): the methods are the same as in process.
- **A tool known only by its listing** (an MCP server's, another OpenEnv server's, a served environment whose class
  cannot be had here): what TRL's own port of a listed tool does (`trl.experimental.openreward`, which writes one
  typed method per tool from the listed JSON Schema), then `get_json_schema` on that method. For an MCP server this
  is the listing as the server sent it, before agent_env normalized it, under the name the server lists it by; for
  a served environment, the listing as served. `PlainView.basis` says which, and why.

Where TRL cannot render a tool at all (`get_json_schema` raises on a TypedDict hint, a parameter without a docstring
entry, `**kwargs`; the port cannot bind a parameter named `from`), a plain TRL environment with it could not even
start: the trainer raises when it builds its first prompt. Where TRL's port skips a listed tool (a name, its own or
a parameter's, that is no ASCII identifier: `café`, `get-sum`, `max-depth`; it logs a warning and binds nothing), a
plain TRL environment starts without it. Either way the tool is shown in its **nearest form**, the same function
changed only where TRL refused it, and `PlainTool.refused` says what TRL raised or did:

- a type hint TRL cannot read becomes the nearest one it can, at every depth: a TypedDict, pydantic model,
  dataclass or other mapping `dict`, a sequence or set `list`, a one-element or open `tuple` `list`, any other
  class `Any`;
- a parameter the docstring does not describe is described by its published description (or its name in words),
  a tool without a docstring by its published description, and `**kwargs` is left out;
- a listed parameter whose name cannot be a parameter of the port's method (`from`, `max-depth`, `self`) is left
  out, and a listed tool whose name the port skips is bound under a stand-in name.

Every tool keeps its published name (the name calls are held to), whatever its method is called.
"""

from __future__ import annotations

import collections.abc
import contextlib
import dataclasses
import inspect
import keyword
import logging
import re
import types
import typing
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, Protocol, runtime_checkable

from agent_env.environment import Environment, import_class
from agent_env.errors import raised_text
from agent_env.schema import fingerprint
from agent_env.session import ClassProvider, Provider, ServedClassProvider
from agent_env.tools import Tool, ToolSet

Form = Literal["method", "listing"]

_SCALARS = (int, float, str, bool, type(None))
_BASIC = frozenset({int, float, str, bool, type(None), list, tuple, dict, Any})
_PORTABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A name TRL's port of listed tools binds (its `_VALID_TOOL_NAME`): it skips a tool whose name, or a parameter's,
is not one."""
SKIPPED = "TRL's port of listed tools skips it"
"""How `PlainTool.refused` starts for a tool the port skips."""
STAND_IN = "tool"
"""The name a listed tool whose own name the port skips is bound under in its nearest form."""


@dataclass(frozen=True)
class PlainTool:
    """One tool as a plain TRL environment shows it.

    Attributes:
        name: The tool's published name.
        schema: What the chat template receives: `{"type": "function", "function": {"name", "description",
            "parameters"}}`, exactly as `get_json_schema` builds it (or its nearest form's, when `refused`).
        form: `method` (the environment's own tool method) or `listing` (TRL's port of the tool's listed schema).
        refused: What TRL raised on the tool as it is, when it cannot render it (a plain TRL environment with it
            could not start), or, when `skipped`, what its port of listed tools did; None when `schema` is TRL's
            own rendering of it.
        skipped: Whether TRL's port of listed tools skips the tool (a plain TRL environment starts without it),
            rather than raising on it.
    """

    name: str
    schema: dict[str, Any]
    form: Form
    refused: str | None = None
    skipped: bool = False


@dataclass(frozen=True)
class PlainView:
    """Every tool of an environment as a plain TRL environment shows it, and what that rests on.

    Attributes:
        tools: The tools, in the order TRL lists them (by name).
        basis: For an environment not in this process, which form its tools take and why: its class's own methods
            (the class its server names, imported here with the served tool set), or TRL's port of the listing as
            served (and why the class could not be had). None in process, where the class is at hand.
    """

    tools: list[PlainTool]
    basis: str | None = None


@runtime_checkable
class _ListedToolsProvider(Protocol):
    """A provider holding the tools it listed from a server, each with its listing as the server sent it."""

    def tool_set(self) -> ToolSet: ...


def plain_tools(provider: Provider) -> list[PlainTool]:
    """Each of `provider`'s tools as a plain TRL environment shows it, in the order TRL lists them (by name); see
    `plain_view`.

    Raises:
        ImportError: transformers (the `trl` extra) is missing, or the installed TRL has no port of listed tools.
    """
    return plain_view(provider).tools


def plain_view(provider: Provider) -> PlainView:
    """Each of `provider`'s tools as a plain TRL environment shows it, and what that rests on: the environment's
    class, in process, or, for one served elsewhere, the class its server names when it can be imported here with
    the served tool set; else TRL's port of the listing (`PlainView.basis` says why).

    Raises:
        ImportError: transformers (the `trl` extra) is missing, or the installed TRL has no port of listed tools.
    """
    if isinstance(provider, ClassProvider):
        return PlainView(_class_tools(provider.environment))
    environment, basis = served_class(provider)
    if environment is not None:
        return PlainView(_class_tools(environment), basis)
    if isinstance(provider, _ListedToolsProvider):  # the listing as the server sent it (an OpenEnv server's)
        found = [plain_tool(tool, Environment) for tool in provider.tool_set().values()]
    else:
        found = [
            _listing_tool(tool["name"], tool["description"], tool["inputSchema"]) for tool in provider.tools()
        ]
    return PlainView(sorted(found, key=lambda tool: tool.name), basis)


LISTING_AS_SERVED = "so each tool is TRL's port of its listing as served"


def served_class(provider: Provider) -> tuple[type[Environment] | None, str]:
    """The class of an environment served elsewhere, when its server names it (`package.module:Class`) and it can
    be imported here with the served tool set (the same fingerprint), and what the lossy arm then rests on, in
    words; else None, and why the class could not be had."""
    reference = provider.served_class() if isinstance(provider, ServedClassProvider) else None
    if reference is None:
        return None, (
            "the server names no class to import here (it is not an agent_env server, or it serves an "
            f"MCPEnvironment's tools or a class defined in __main__), {LISTING_AS_SERVED}"
        )
    try:
        environment = import_class(reference)
    except Exception as error:  # whatever importing its module raises
        return (
            None,
            f"the server's class {reference} cannot be imported here ({raised_text(error)}), {LISTING_AS_SERVED}",
        )
    here, served = fingerprint(environment.tools.published), fingerprint(provider.tools())
    if here != served:
        return None, (
            f"the server's class {reference} has another tool set here ({here}) than the server's ({served}), "
            f"{LISTING_AS_SERVED}"
        )
    return environment, (
        f"the server's class {reference}, imported here with the served tool set ({served}), so each tool is its "
        "own method, as in process"
    )


def _class_tools(environment: type[Environment]) -> list[PlainTool]:
    found = [plain_tool(tool, environment) for tool in environment.tools.values()]
    return sorted(found, key=lambda tool: tool.name)


def plain_tool(tool: Tool, environment: type) -> PlainTool:
    """One tool of `environment`, a class in this process, as a plain TRL environment shows it."""
    if tool.published_elsewhere:
        return _listing_tool(tool.name, tool.description, tool.listed_schema, tool.listed_name)
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


def _listing_tool(name: str, description: str, listed: Any, listed_name: str | None = None) -> PlainTool:
    """A tool known by its listing, as TRL's port of a listed tool binds it (under `listed_name`, the name the
    server lists it by, when it is published under another) and `get_json_schema` renders it."""
    schema = listed if isinstance(listed, Mapping) else {}
    spec = {"name": listed_name or name, "description": description, "input_schema": schema}
    skipped = False
    try:
        return PlainTool(name, _rendered(_ported(spec), name), "listing")
    except _SkippedError:  # the port binds nothing: a plain TRL environment starts without it
        refused, skipped = _skip_reason(spec, name), True
    except Exception as error:  # the port cannot bind it (`from`), or get_json_schema refuses it
        refused = _said(error)
    listed_properties = schema.get("properties")
    properties: Mapping[str, Any] = listed_properties if isinstance(listed_properties, Mapping) else {}
    bindable = {key: value for key, value in properties.items() if _bindable(key)}
    listed_required = schema.get("required")
    required = [
        key for key in (listed_required if isinstance(listed_required, list) else []) if key in bindable
    ]
    nearest = {
        "name": spec["name"] if _bindable(spec["name"]) else STAND_IN,
        "description": description,
        "input_schema": {"type": "object", "properties": bindable, "required": required},
    }
    return PlainTool(name, _rendered(_ported(nearest), name), "listing", refused, skipped)


def _bindable(name: Any) -> bool:
    """Whether the port writes a method or a parameter of that name that Python takes (not `from`, not a second
    `self`)."""
    return (
        isinstance(name, str)
        and bool(_PORTABLE.fullmatch(name))
        and not keyword.iskeyword(name)
        and name != "self"
    )


class _SkippedError(LookupError):
    """TRL's port of listed tools skipped a tool: it logs a warning and binds nothing."""


def _ported(spec: dict[str, Any]) -> Callable[..., Any]:
    """The method TRL's port of listed tools writes for `spec`, fetched from an instance as TRL's trainer fetches it.

    Raises:
        _SkippedError: The port skipped the tool (it logs a warning and binds nothing), as it does for a name, the
            tool's or a parameter's, that is no ASCII identifier.
    """
    bind = _port()
    port = type("PlainPort", (), {})
    with _quiet_port():
        bind(port, spec)
    method = port.__dict__.get(spec["name"])
    if method is None:
        raise _SkippedError(f"TRL's port of listed tools skipped tool {spec['name']!r}")
    return getattr(port(), spec["name"])


def _skip_reason(spec: dict[str, Any], published: str) -> str:
    """Why the port skipped the tool `spec` lists (published as `published`), and what that means."""
    name = spec["name"]
    if not _PORTABLE.fullmatch(name):
        what = f"its name {name!r}" if name == published else f"the name it is listed under, {name!r},"
    else:
        properties = spec["input_schema"].get("properties")
        names = list(properties) if isinstance(properties, Mapping) else []
        bad = next((key for key in names if not (isinstance(key, str) and _PORTABLE.fullmatch(key))), None)
        what = f"its parameter {bad!r}" if bad is not None else "a name in it"
    return (
        f"{SKIPPED} ({what} is no ASCII Python identifier: it logs a warning and binds nothing), so a plain TRL "
        "environment would not offer it"
    )


@contextlib.contextmanager
def _quiet_port() -> Iterator[None]:
    """The port's warning for a tool it skips stays out of the log: `PlainTool.refused` says it, per tool."""
    port_logger = logging.getLogger("trl.experimental.openreward.environment")
    level = port_logger.level
    port_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        port_logger.setLevel(level)


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


__all__ = [
    "SKIPPED",
    "PlainTool",
    "PlainView",
    "nearest_hint",
    "plain_tool",
    "plain_tools",
    "plain_view",
    "served_class",
    "unrenderable",
]
