"""The `tool` decorator and the registry that turns an environment's tool methods into published, validated tools."""

from __future__ import annotations

import inspect
import keyword
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from agent_env.errors import ToolArgumentError, ToolDefinitionError, UnknownToolError
from agent_env.schema import (
    ArgumentValidator,
    Docstring,
    SchemaNormalizationError,
    check_schema,
    fingerprint,
    normalize,
    signature_schema,
    validator_for,
)
from agent_env.schema._describe import got, short, takes
from agent_env.schema._parameters import ExplicitArguments, Parameters
from agent_env.schema._validator import format_problems

END_TURN = "end_turn"
"""The tool that ends the model's turn; every environment has it (an override keeps its description)."""

RESERVED_NAMES = frozenset({"reset", "get_reward", "reward", "close"})
_MARK = "__agent_env_tool__"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class ToolOptions:
    """What the `tool` decorator was told; anything left `None` comes from the function."""

    name: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    hidden: bool = False


@overload
def tool(function: F, /) -> F: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    hidden: bool = False,
) -> Callable[[F], F]: ...
def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    hidden: bool = False,
) -> Any:
    """Mark an environment method as a tool the model can call.

    Args:
        function: The method, when used bare as `@tool`.
        name: The published name; defaults to the method's name.
        description: The published description; defaults to the docstring (without its Args section).
        input_schema: An explicit JSON Schema for the arguments, published (normalized) and enforced as written
            instead of the type hints. The method must be able to receive every argument it allows: a parameter
            per property (`Annotated[..., Field(alias="from")]` for a name that is no Python identifier), or
            `**kwargs` for the rest; so its top level says `"additionalProperties": false`, or the method takes
            `**kwargs`. Values reach the method as plain JSON.
        hidden: Not published, so never offered to a model (nor listed, nor in the tool set's fingerprint), but
            called by name like any tool, with the same validation, by a session in process, served or on Ray (an
            OpenEnv client knows only `agent_env.users.ASIDE`): how a harness tells the environment what no tool call
            of the model's carries.
    """
    options = ToolOptions(name, description, input_schema, hidden)

    def mark(method: F) -> F:
        setattr(method, _MARK, options)
        return method

    return mark(function) if function is not None else mark


Converter = Callable[[str, dict[str, Any]], dict[str, Any]]
"""Turns a call's validated arguments (by published name) into the keyword arguments its method takes."""


@dataclass(frozen=True, slots=True)
class Tool:
    """One published tool: its name, description and input schema, and how to validate and run a call of it.

    `published_elsewhere` says its description and schema are another server's (`from_schema`: an MCP server's
    listing), not this package's docstrings and types, so what they leave unsaid is not fixed by editing either;
    `listed_schema` is then that schema as the server listed it, before agent_env normalized it, and `listed_name`
    the name it listed the tool under (`get-sum`, published as `get_sum`): what a port of the server's tools without
    agent_env would read.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    function: Callable[..., Any]
    validator: ArgumentValidator
    convert: Converter
    is_async: bool
    published_elsewhere: bool = False
    listed_schema: Any = None
    hidden: bool = False
    """Not published: `ToolSet.resolve` finds it, nothing that lists tools does (`tool(hidden=True)`)."""
    listed_name: str | None = None

    def published(self) -> dict[str, Any]:
        """The tool as MCP lists it: `name`, `description`, `inputSchema`."""
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}

    def bind(self, arguments: Any) -> dict[str, Any]:
        """Validate a call's arguments against the published schema; return the keyword arguments to call with.

        Raises:
            ToolArgumentError: `arguments` is not a mapping of names to values, or breaks the published schema.
        """
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(format_problems(self.name, [self._not_an_object(arguments)]))
        arguments = dict(arguments)
        self.validator.validate(self.name, arguments)
        return self.convert(self.name, arguments)

    def _not_an_object(self, arguments: Any) -> str:
        what = takes(self.input_schema, "arguments")
        what += ": send {}" if what == "takes no arguments" else ""
        return f"(arguments): expected an object of named arguments (this tool {what}); got {got(arguments)}"

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        input_schema: Any,
        function: Callable[..., Any],
        *,
        listed_name: str | None = None,
    ) -> Tool:
        """A tool published elsewhere (a remote server's listing), held to its schema here: the schema is checked
        against the metaschema of the dialect it declares (an MCP server's draft-07, or 2020-12 when it declares
        none), normalized to 2020-12 with its meaning kept, and checked again, as an explicit one is; calls are
        validated before `function` runs them with the arguments as sent (awaited, when it is a coroutine
        function). `listed_name` is the name the server lists it under, when it is published under another.

        Raises:
            ToolDefinitionError: The name or the schema cannot be published; the message says which and why.
        """
        _check_name(name)
        must_be_object = f'tool \'{name}\': its input schema must be a JSON object with "type": "object"'
        if not isinstance(input_schema, dict):
            raise ToolDefinitionError(must_be_object)
        try:
            check_schema(input_schema)  # before anything walks it: a remote schema is input like any other
            schema = normalize(input_schema)
            check_schema(schema)
            validator = validator_for(schema)
        except SchemaNormalizationError as error:  # what only its author can change is theirs to say
            raise ToolDefinitionError(f"tool '{name}': {error.problem}") from None
        except ValueError as error:
            raise ToolDefinitionError(f"tool '{name}': {error}") from None
        # Read once upgraded: up to draft-07, a `type` beside a `$ref` says nothing, and the `$ref` may say it.
        if schema.get("type") != "object":
            raise ToolDefinitionError(must_be_object)
        return cls(
            name,
            description,
            schema,
            function,
            validator,
            _as_sent,
            is_async=inspect.iscoroutinefunction(function),
            published_elsewhere=True,
            listed_schema=input_schema,
            listed_name=listed_name if listed_name is not None else name,
        )

    @classmethod
    def from_function(
        cls, function: Callable[..., Any], options: ToolOptions, documented: Callable[..., Any] | None = None
    ) -> Tool:
        """Build a tool from a method and its decorator options; raise `ToolDefinitionError` saying what is wrong.

        `documented` is the function whose docstring describes the tool when `function` has none (an override
        keeps the description of the method it overrides).
        """
        name = options.name or function.__name__
        _check_name(name)
        docstring = Docstring.parse(documented or function, name)
        raw_schema, convert = _schema_and_converter(function, name, options.input_schema, docstring)
        try:
            schema = normalize(raw_schema)
            check_schema(schema)
            validator = validator_for(schema)
        except (SchemaNormalizationError, ValueError) as error:
            raise ToolDefinitionError(f"tool '{name}': {error}") from None
        return cls(
            name=name,
            description=options.description or docstring.description,
            input_schema=schema,
            function=function,
            validator=validator,
            convert=convert,
            is_async=inspect.iscoroutinefunction(function),
            hidden=options.hidden,
        )


def _as_sent(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The converter of a tool run elsewhere: its validated arguments go as they were sent."""
    return arguments


def _schema_and_converter(
    function: Callable[..., Any], name: str, explicit: Any, docstring: Docstring
) -> tuple[dict[str, Any], Converter]:
    """The raw schema a tool publishes and its converter: from the type hints, or from an explicit schema, which is
    checked (JSON values, depth, the metaschema) before anything walks it, then held to the method's parameters."""
    if explicit is None:
        return signature_schema(function, name, docstring)
    if not isinstance(explicit, dict):
        raise ToolDefinitionError(
            f"tool '{name}': input_schema must be a JSON Schema object (a dict), not {type(explicit).__name__}"
        )
    try:
        check_schema(explicit)
    except ValueError as error:
        raise ToolDefinitionError(f"tool '{name}': {error}") from None
    if explicit.get("type") != "object":
        raise ToolDefinitionError(f'tool \'{name}\': an input_schema must have "type": "object"')
    parameters = Parameters.of(function, name)
    parameters.check_explicit(explicit)
    return explicit, ExplicitArguments(parameters.python_names())


_NOT_IDENTIFIER = re.compile(r"\W", re.ASCII)


def python_identifier(name: str) -> str:
    """The name a tool listed by another server (MCP, ORS) is published under when its own cannot be a Python
    identifier, which TRL's call parsers need under every template: every character that cannot be in one made `_`
    (`get-sum` -> `get_sum`), a `tool_` before a digit (`3d-print` -> `tool_3d_print`), and a `_` after a keyword
    (`import` -> `import_`), which cannot name a function either. An identifier comes back as it is."""
    safe = name if name.isidentifier() else _NOT_IDENTIFIER.sub("_", name)
    if safe[:1].isdigit():
        safe = f"tool_{safe}"
    return f"{safe}_" if keyword.iskeyword(safe) else safe


def _check_name(name: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ToolDefinitionError(
            f"tool name {name!r} is not a Python identifier; use letters, digits and '_'"
        )
    if name.startswith("_"):
        raise ToolDefinitionError(f"tool name {name!r} starts with '_', which TRL skips; rename the tool")
    if name in RESERVED_NAMES:
        raise ToolDefinitionError(
            f"tool name {name!r} is reserved for the episode's control; rename the tool"
        )


class ToolSet(Mapping[str, Tool]):
    """The published tools of one environment class, by name, in definition order; its hidden ones
    (`tool(hidden=True)`) only `resolve` finds."""

    def __init__(self, tools: list[Tool]) -> None:
        self._tools = {tool.name: tool for tool in tools if not tool.hidden}
        self._hidden = {tool.name: tool for tool in tools if tool.hidden}
        self.published: list[dict[str, Any]] = [tool.published() for tool in self._tools.values()]
        self.fingerprint = fingerprint(self.published)

    @classmethod
    def collect(cls, environment: type) -> ToolSet:
        """Every tool of a class and its bases; an override of a tool stays a tool even without the decorator."""
        options: dict[str, ToolOptions] = {}
        for base in reversed(environment.__mro__):
            for attribute, value in vars(base).items():
                marked = getattr(value, _MARK, None)
                if marked is not None:
                    options[attribute] = marked
        options = {name: options[name] for name in sorted(options, key=lambda name: name == END_TURN)}
        tools: list[Tool] = []
        for attribute, tool_options in options.items():
            function = getattr(environment, attribute)
            if not inspect.isfunction(function):
                raise ToolDefinitionError(
                    f"tool '{attribute}' must be a plain method, not {type(function).__name__}"
                )
            tools.append(Tool.from_function(function, tool_options, _documented(environment, attribute)))
        names = [tool.name for tool in tools]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ToolDefinitionError(f"{environment.__name__} publishes tool names twice: {duplicates}")
        return cls(tools)

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def resolve(self, name: str) -> Tool:
        """The tool called `name`, hidden ones too, or `UnknownToolError` listing the published tools."""
        found = self._tools.get(name) or self._hidden.get(name)
        if found is None:
            raise UnknownToolError(f"unknown tool {short(name)}; the tools are: {', '.join(self._tools)}")
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)


def _documented(environment: type, attribute: str) -> Callable[..., Any] | None:
    """The nearest definition of a tool method, in `environment` or its bases, that has a docstring."""
    for base in environment.__mro__:
        function = vars(base).get(attribute)
        if inspect.isfunction(function) and function.__doc__:
            return function
    return None
