"""Turn a tool function's signature (type hints, `Field`s, Google docstring) into its input schema and converter."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import docstring_parser
from pydantic import BaseModel, ValidationError, create_model
from pydantic.fields import FieldInfo

from agent_env.errors import ToolArgumentError, ToolDefinitionError
from agent_env.schema._validator import format_problems, json_path

_REFUSED_KINDS = {
    inspect.Parameter.VAR_POSITIONAL: "takes *{name}; a tool's arguments are named JSON properties, so declare each "
    "one as a parameter (or take one list parameter)",
    inspect.Parameter.VAR_KEYWORD: "takes **{name}; declare each argument as a named parameter, or give the tool an "
    "explicit input_schema and parameters matching its properties",
    inspect.Parameter.POSITIONAL_ONLY: "has positional-only parameter '{name}'; tools are called with keyword "
    "arguments, so remove the '/' from the signature",
}


@dataclass(frozen=True, slots=True)
class Docstring:
    """What a Google-style docstring says: the tool's description and each parameter's."""

    description: str
    parameters: dict[str, str]

    @classmethod
    def parse(cls, function: Callable[..., Any]) -> Docstring:
        parsed = docstring_parser.parse(
            inspect.getdoc(function) or "", docstring_parser.DocstringStyle.GOOGLE
        )
        text = "\n\n".join(part for part in (parsed.short_description, parsed.long_description) if part)
        return cls(
            text.strip(), {param.arg_name: (param.description or "").strip() for param in parsed.params}
        )


@dataclass(frozen=True, slots=True)
class ArgumentModel:
    """Turns validated JSON arguments into the Python values a tool function takes (pydantic models and all)."""

    model: type[BaseModel]

    def __call__(self, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            instance = self.model.model_validate(arguments)
        except ValidationError as error:  # a model's own validators: still the caller's mistake to fix
            problems = [f"{json_path(item['loc'])}: {item['msg']}" for item in error.errors()]
            raise ToolArgumentError(format_problems(tool_name, problems)) from None
        return {name: getattr(instance, name) for name in arguments}


def tool_parameters(function: Callable[..., Any], tool_name: str) -> list[inspect.Parameter]:
    """The parameters a tool method takes after `self`; refuses what cannot be a JSON argument, saying why."""
    parameters = list(inspect.signature(function).parameters.values())[1:]
    for parameter in parameters:
        if parameter.kind in _REFUSED_KINDS:
            reason = _REFUSED_KINDS[parameter.kind].format(name=parameter.name)
            raise ToolDefinitionError(f"tool '{tool_name}' {reason}")
    return parameters


def signature_schema(function: Callable[..., Any], tool_name: str) -> tuple[dict[str, Any], ArgumentModel]:
    """The raw JSON Schema of a tool method's parameters, and the model that converts arguments for it."""
    docstring = Docstring.parse(function)
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as error:
        raise ToolDefinitionError(
            f"tool '{tool_name}': its type hints cannot be resolved ({error})"
        ) from None
    fields: dict[str, Any] = {}
    for parameter in tool_parameters(function, tool_name):
        if parameter.name not in hints:
            raise ToolDefinitionError(
                f"tool '{tool_name}': parameter '{parameter.name}' has no type hint; annotate it "
                f"(for example `{parameter.name}: int`, or a pydantic model for nested arguments)"
            )
        fields[parameter.name] = _field(
            hints[parameter.name], parameter, docstring.parameters.get(parameter.name)
        )
    name = "".join(part.capitalize() for part in tool_name.split("_")) + "Arguments"
    try:
        model = create_model(name, **fields)
        schema = model.model_json_schema()
    except Exception as error:
        raise ToolDefinitionError(
            f"tool '{tool_name}': its parameters have no JSON Schema ({error})"
        ) from None
    # Unknown top-level arguments are refused by `Tool.bind`, which costs the prompt nothing.
    return schema, ArgumentModel(model)


def _field(annotation: Any, parameter: inspect.Parameter, described: str | None) -> tuple[Any, FieldInfo]:
    default = ... if parameter.default is inspect.Parameter.empty else parameter.default
    if described and not _has_description(annotation):
        return annotation, FieldInfo(default=default, description=described)
    return annotation, FieldInfo(default=default)


def _has_description(annotation: Any) -> bool:
    metadata = getattr(annotation, "__metadata__", ())
    return any(isinstance(item, FieldInfo) and item.description for item in metadata)
