"""Match a tool method's parameters to the properties of its input schema: the name each one is published under
(its own, or a `Field(alias=...)`), the `**kwargs` that receives the rest, and what cannot work, refused."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic.fields import FieldInfo

from agent_env.errors import ToolDefinitionError

_REFUSED_KINDS = {
    inspect.Parameter.VAR_POSITIONAL: "takes *{name}; a tool's arguments are named JSON properties, so declare each "
    "one as a parameter (or take one list parameter)",
    inspect.Parameter.POSITIONAL_ONLY: "has positional-only parameter '{name}'; tools are called with keyword "
    "arguments, so move the '/' to just after the receiver",
}
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(frozen=True, slots=True)
class Parameters:
    """A tool method's parameters after its receiver, by the property name each is published under."""

    tool_name: str
    receiver: inspect.Parameter
    named: dict[str, inspect.Parameter]
    """Each named parameter by its published name: its alias, or its own name."""
    rest: str | None
    """The name of the `**kwargs` parameter, if the method takes one."""

    @classmethod
    def of(cls, function: Callable[..., Any], tool_name: str) -> Parameters:
        """The parameters of `function`; refuses what cannot take a JSON argument, and names published twice."""
        parameters = list(inspect.signature(function).parameters.values())
        if not parameters or parameters[0].kind not in _POSITIONAL:
            raise ToolDefinitionError(
                f"tool '{tool_name}' must take the environment first (def {tool_name}(self, ...))"
            )
        receiver = parameters[0]
        # A receiver has no default; an annotated first parameter is an argument, unless it is `self` (`self: Self`).
        if receiver.default is not inspect.Parameter.empty or (
            receiver.annotation is not inspect.Parameter.empty and receiver.name != "self"
        ):
            raise no_self(tool_name, parameters)
        named: dict[str, inspect.Parameter] = {}
        rest = None
        aliases = _aliases(function, tool_name)
        for parameter in parameters[1:]:
            if parameter.kind in _REFUSED_KINDS:
                raise ToolDefinitionError(
                    f"tool '{tool_name}' {_REFUSED_KINDS[parameter.kind].format(name=parameter.name)}"
                )
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                rest = parameter.name
                continue
            published = aliases.get(parameter.name, parameter.name)
            if published in named:
                raise ToolDefinitionError(
                    f"tool '{tool_name}': parameters '{named[published].name}' and '{parameter.name}' are both "
                    f"published as '{published}'; give each its own name"
                )
            named[published] = parameter
        return cls(tool_name, parameters[0], named, rest)

    def python_names(self) -> dict[str, str]:
        """Each named parameter's Python name, by its published name."""
        return {published: parameter.name for published, parameter in self.named.items()}

    def check_explicit(self, schema: Mapping[str, Any]) -> None:
        """Refuse an explicit schema whose arguments the method cannot all receive, saying how to fix it."""
        if self.rest is None and self.receiver.name in schema.get("properties", {}):
            raise no_self(self.tool_name, [self.receiver, *self.named.values()])
        self._check_properties(schema)
        required = set(schema.get("required", []))
        for published, parameter in self.named.items():
            if parameter.default is inspect.Parameter.empty and published not in required:
                raise ToolDefinitionError(
                    f"tool '{self.tool_name}': parameter '{parameter.name}' has no default, so input_schema must "
                    f"list '{published}' in 'required' (or give the parameter a default)"
                )
        closed = schema.get("additionalProperties") is False and not schema.get("patternProperties")
        unlisted = [name for name in schema.get("required", []) if name not in schema.get("properties", {})]
        if closed and unlisted:
            raise ToolDefinitionError(
                f"tool '{self.tool_name}': input_schema requires {', '.join(map(repr, unlisted))} but takes no key "
                "beyond its properties, which do not list it, so no call could pass; add it to properties"
            )
        if not closed and self.rest is None:
            raise ToolDefinitionError(
                f"tool '{self.tool_name}': input_schema allows arguments beyond its properties, which the method "
                'cannot receive; add "additionalProperties": false to refuse them (the schema then says so), or take '
                "them with **kwargs"
            )
        self._check_rest(set(schema.get("properties", {})) - self.named.keys(), closed)

    def _check_properties(self, schema: Mapping[str, Any]) -> None:
        properties = set(schema.get("properties", {}))
        if self.rest is None and properties != self.named.keys():
            raise ToolDefinitionError(
                f"tool '{self.tool_name}': input_schema properties {sorted(properties)} must match the method's "
                f"parameters {sorted(self.named)} (published names; a property that is no Python name takes "
                'Annotated[..., Field(alias="...")], or **kwargs)'
            )
        if self.rest is not None and not self.named.keys() <= properties:
            raise ToolDefinitionError(
                f"tool '{self.tool_name}': parameters {sorted(self.named.keys() - properties)} are not properties of "
                "input_schema; add them, or remove the parameters"
            )

    def _check_rest(self, to_rest: set[str], closed: bool) -> None:
        """Refuse names that would go to **kwargs but that Python binds to one of the method's own parameters."""
        taken = {
            name: parameter for name, parameter in self._python_bound().items() if name not in self.named
        }
        for name in sorted(to_rest & taken.keys()) if closed else sorted(taken):
            if taken[name] is self.receiver:
                reason = "it names the receiver"
                how = f"make the receiver positional-only: def {self.tool_name}({name}, /, ...)"
            else:
                published = next(key for key, parameter in self.named.items() if parameter.name == name)
                reason = f"it names the parameter published as '{published}'"
                how = f"rename the parameter '{name}'"
            sent = f"input_schema lists '{name}'" if closed else f"a call could send '{name}'"
            raise ToolDefinitionError(
                f"tool '{self.tool_name}': {sent}, which Python cannot pass in **{self.rest} ({reason}); {how}"
            )

    def _python_bound(self) -> dict[str, inspect.Parameter]:
        """The parameters a keyword argument of the same name would bind to, by that name."""
        bound = {parameter.name: parameter for parameter in self.named.values()}
        if self.receiver.kind is not inspect.Parameter.POSITIONAL_ONLY:
            bound[self.receiver.name] = self.receiver
        return bound


def no_self(tool_name: str, parameters: list[inspect.Parameter]) -> ToolDefinitionError:
    """The error of a tool method written without `self`: its first parameter would receive the environment."""
    written = ", ".join(parameter_text(parameter) for parameter in parameters)
    return ToolDefinitionError(
        f"tool '{tool_name}' does not take self: its first parameter, '{parameters[0].name}', would receive the "
        f"environment, not the model's argument; take self first: def {tool_name}(self, {written})"
    )


def parameter_text(parameter: inspect.Parameter) -> str:
    """A parameter as its `def` line writes it (`days: int = 7`), its annotation as written."""
    annotation = parameter.annotation
    if annotation is not inspect.Parameter.empty and not isinstance(annotation, str):
        annotation = inspect.formatannotation(annotation)
    return str(parameter.replace(annotation=annotation)).replace(f": '{annotation}'", f": {annotation}")


@dataclass(frozen=True, slots=True)
class ExplicitArguments:
    """Turns the validated arguments of an explicit-schema tool into keyword arguments: each published name to its
    parameter's Python name, the rest (to `**kwargs`) as they are; values stay plain JSON."""

    python_names: dict[str, str]

    def __call__(self, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {self.python_names.get(name, name): value for name, value in arguments.items()}


def _aliases(function: Callable[..., Any], tool_name: str) -> dict[str, str]:
    """Each parameter's alias, from `Annotated[..., Field(alias="from")]` (or a string `validation_alias`)."""
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception:  # an explicit-schema tool needs none; a hinted one fails later, saying why
        hints = {}
    aliases = {}
    for name, hint in hints.items():
        for item in getattr(hint, "__metadata__", ()):
            if not isinstance(item, FieldInfo):
                continue
            alias = item.validation_alias if item.validation_alias is not None else item.alias
            if alias is not None and not isinstance(alias, str):
                raise ToolDefinitionError(
                    f"tool '{tool_name}': parameter '{name}' has an alias that is not a string; publish it under one "
                    'name, Field(alias="...")'
                )
            if alias is not None:
                aliases[name] = alias
    return aliases
