"""Turn a tool function's signature (type hints, `Field`s, Google docstring) into its input schema and converter."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import docstring_parser
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from agent_env.errors import ToolArgumentError, ToolDefinitionError
from agent_env.schema._parameters import Parameters, no_self
from agent_env.schema._passes import close_objects
from agent_env.schema._validator import format_problems, json_path


@dataclass(frozen=True, slots=True)
class Docstring:
    """What a Google-style docstring says: the tool's description and each parameter's."""

    description: str
    parameters: dict[str, str]

    @classmethod
    def parse(cls, function: Callable[..., Any], tool_name: str | None = None) -> Docstring:
        """What `function`'s docstring says; `ToolDefinitionError` naming tool `tool_name` (by default the function's
        name) and how to lay the sections out, when it cannot be read as a Google-style docstring."""
        try:
            parsed = docstring_parser.parse(
                inspect.getdoc(function) or "", docstring_parser.DocstringStyle.GOOGLE
            )
        except docstring_parser.ParseError as error:
            raise ToolDefinitionError(
                f"tool '{tool_name or function.__name__}': its docstring cannot be read as a Google-style docstring "
                f"({error}): indent each entry one level deeper than its section's heading, one entry per line, "
                "each `name: description` (a description that goes on for more lines indents further), e.g.\n"
                "Args:\n    isbn: The book's ISBN."
            ) from None
        text = "\n\n".join(part for part in (parsed.short_description, parsed.long_description) if part)
        return cls(
            text.strip(), {param.arg_name: (param.description or "").strip() for param in parsed.params}
        )


@dataclass(frozen=True, slots=True)
class ArgumentModel:
    """Turns validated JSON arguments into the Python values a tool function takes (pydantic models and all)."""

    model: type[BaseModel]
    python_names: dict[str, str]
    """Each parameter's Python name, by the name it is published under."""

    def __call__(self, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            instance = self.model.model_validate(arguments)
        except ValidationError as error:  # a model's own validators: still the caller's mistake to fix
            problems = [f"{json_path(item['loc'])}: {item['msg']}" for item in error.errors()]
            raise ToolArgumentError(format_problems(tool_name, problems)) from None
        return {self.python_names[name]: getattr(instance, self.python_names[name]) for name in arguments}


def signature_schema(
    function: Callable[..., Any], tool_name: str, docstring: Docstring | None = None
) -> tuple[dict[str, Any], ArgumentModel]:
    """The raw JSON Schema of a tool method's parameters, and the model that converts arguments for it.

    Every object in it that lists properties says `"additionalProperties": false` unless its type says otherwise
    (`extra="allow"`, a `dict`): an unknown key is refused, and the schema shows it, at every level. Parameters are
    described from `docstring` (by default, the function's own).
    """
    docstring = docstring or Docstring.parse(function, tool_name)
    parameters = Parameters.of(function, tool_name)
    if parameters.rest is not None:
        raise ToolDefinitionError(
            f"tool '{tool_name}' takes **{parameters.rest}; declare each argument as a named parameter (a name that "
            'is not an identifier: Annotated[str, Field(alias="from")]), or give the tool an explicit input_schema '
            "whose other properties **" + parameters.rest + " receives"
        )
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as error:
        raise ToolDefinitionError(
            f"tool '{tool_name}': its type hints cannot be resolved ({error})"
        ) from None
    _check_documented(docstring, parameters)
    fields: dict[str, Any] = {}
    for published, parameter in parameters.named.items():
        if parameter.name not in hints:
            raise ToolDefinitionError(
                f"tool '{tool_name}': parameter '{parameter.name}' has no type hint; annotate it "
                f"(for example `{parameter.name}: int`, or a pydantic model for nested arguments)"
            )
        described = docstring.parameters.get(parameter.name, docstring.parameters.get(published))
        fields[parameter.name] = _field(hints[parameter.name], parameter, described)
    name = "".join(part.capitalize() for part in tool_name.split("_")) + "Arguments"
    try:
        model = create_model(name, __config__=ConfigDict(extra="forbid"), **fields)
        schema = model.model_json_schema()
    except Exception as error:
        raise ToolDefinitionError(
            f"tool '{tool_name}': its parameters have no JSON Schema ({error})"
        ) from None
    return close_objects(schema), ArgumentModel(model, parameters.python_names())


def _check_documented(docstring: Docstring, parameters: Parameters) -> None:
    """Refuse a docstring that describes a parameter the tool does not have: its words would reach no one."""
    names = {*parameters.named, *(parameter.name for parameter in parameters.named.values())}
    stray = [name for name in docstring.parameters if name not in names]
    if parameters.receiver.name in stray:  # `def lookup(isbn)`: the described parameter became the receiver
        raise no_self(parameters.tool_name, [parameters.receiver, *parameters.named.values()])
    if stray:
        takes = ", ".join(parameters.named) or "no arguments"
        raise ToolDefinitionError(
            f"tool '{parameters.tool_name}': its docstring describes {', '.join(map(repr, stray))}, which it does "
            f"not take (it takes {takes}); name each parameter as it is declared or published"
        )


def _field(annotation: Any, parameter: inspect.Parameter, described: str | None) -> tuple[Any, FieldInfo]:
    default = ... if parameter.default is inspect.Parameter.empty else parameter.default
    if described and not _has_description(annotation):
        return annotation, FieldInfo(default=default, description=described)
    return annotation, FieldInfo(default=default)


def _has_description(annotation: Any) -> bool:
    metadata = getattr(annotation, "__metadata__", ())
    return any(isinstance(item, FieldInfo) and item.description for item in metadata)
