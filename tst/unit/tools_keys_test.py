"""What a tool publishes is what it enforces, for every key at every level: an unknown key is refused and the schema
says so (`additionalProperties: false`), or the schema allows it and it reaches the tool; it is never dropped.
Property names that are not Python identifiers (`from`) are published through a parameter's alias or `**kwargs`."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import AliasChoices, Field

from agent_env import Environment, LocalSession, ToolArgumentError, ToolDefinitionError, tool
from agent_env.envs import ENVIRONMENTS, load_environment
from testbed.toy import ToyDesk
from tst.data.authoring import MISSPELT_KEYS, Booking


class Episodic(Environment):
    def reset(self, **row: Any) -> None:
        return None

    def reward(self) -> float:
        return 0.0


def define(**methods: Any) -> type[Environment]:
    return type("Probe", (Episodic,), methods)


def objects(schema: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every object schema (one with `properties`) inside `schema`, with where it is."""
    found = []
    if isinstance(schema, dict):
        if "properties" in schema:
            found.append((path or "(top)", schema))
        for key, value in schema.items():
            found += objects(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += objects(value, f"{path}/{index}")
    return found


def refusal(tool_class: type[Environment], name: str, arguments: Any) -> list[str]:
    with pytest.raises(ToolArgumentError) as refused:
        tool_class.tools[name].bind(arguments)
    return str(refused.value).splitlines()[1:]


# Finding 1: unknown keys, type-hinted tools.


@pytest.mark.parametrize("environment", [ToyDesk, Booking, *map(load_environment, ENVIRONMENTS)])
def test_every_object_a_type_hinted_tool_publishes_says_whether_it_takes_other_keys(environment):
    for published in environment.tools.published:
        for where, schema in objects(published["inputSchema"]):
            assert "additionalProperties" in schema, f"{published['name']} {where}"


@pytest.mark.parametrize(("arguments", "lines"), MISSPELT_KEYS)
def test_a_misspelt_nested_key_is_refused_naming_the_path_not_dropped(arguments, lines):
    assert refusal(Booking, "book", arguments) == lines


def test_an_unknown_argument_is_refused_and_the_published_top_level_says_so():
    assert ToyDesk.tools["submit_offers"].input_schema["additionalProperties"] is False
    assert refusal(ToyDesk, "submit_offers", {"curves": [], "mw": 3}) == [
        "- mw: unknown argument; this tool takes as_offers, curves"
    ]
    assert refusal(ToyDesk, "battery_status", {"x": 1}) == [
        "- x: unknown argument; this tool takes no arguments"
    ]


def test_keys_the_schema_allows_are_passed_on():
    assert Booking.tools["tag"].input_schema["properties"]["labels"]["additionalProperties"] == {
        "type": "integer"
    }
    assert Booking.tools["tag"].input_schema["properties"]["note"]["additionalProperties"] is True
    session = LocalSession(Booking())
    session.reset()
    result = session.call_tool(
        "tag", {"labels": {"any": 1, "key": 2}, "note": {"kind": "k", "colour": "red"}}
    )
    assert result == '{"labels":{"any":1,"key":2},"extra":{"colour":"red"}}'


# Finding 1: unknown keys, explicit schemas.

CLOSED = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "box": {"type": "object", "properties": {"w": {"type": "number"}}},
    },
    "required": ["n"],
    "additionalProperties": False,
}


def test_an_explicit_schema_is_enforced_as_it_is_written_at_every_level():
    received = []

    def f(self, n, box=None):
        received.append(box)
        return ""

    probe = define(f=tool(input_schema=CLOSED)(f))
    assert probe.tools["f"].input_schema == CLOSED
    assert refusal(probe, "f", {"n": 1, "m": 2}) == ["- m: unknown argument; this tool takes box, n"]
    session = LocalSession(probe())
    session.reset()
    session.call_tool("f", {"n": 1, "box": {"w": 2, "h": 3}})  # the nested object is open: h is passed on
    assert received == [{"w": 2, "h": 3}]


def test_an_open_explicit_schema_needs_a_method_that_can_receive_what_it_allows():
    def f(self, n, box=None):
        return ""

    with pytest.raises(ToolDefinitionError) as refused:
        define(f=tool(input_schema={**CLOSED, "additionalProperties": True})(f))
    assert str(refused.value) == (
        "tool 'f': input_schema allows arguments beyond its properties, which the method cannot receive; add "
        '"additionalProperties": false to refuse them (the schema then says so), or take them with **kwargs'
    )


def test_an_open_explicit_schema_passes_other_arguments_to_kwargs():
    received = []

    def f(self, /, n, **rest):
        received.append(rest)
        return ""

    schema = {key: value for key, value in CLOSED.items() if key != "additionalProperties"}
    probe = define(f=tool(input_schema=schema)(f))
    session = LocalSession(probe())
    session.reset()
    session.call_tool("f", {"n": 1, "self": 2, "m": [3]})
    assert received == [{"self": 2, "m": [3]}]


def test_kwargs_under_an_open_schema_need_a_positional_only_receiver():
    def f(self, n, **rest):
        return ""

    schema = {key: value for key, value in CLOSED.items() if key != "additionalProperties"}
    with pytest.raises(
        ToolDefinitionError,
        match=r"a call could send .self., which Python cannot pass in \*\*rest \(it names the receiver\); "
        r"make the receiver positional-only: def f\(self, /, \.\.\.\)",
    ):
        define(f=tool(input_schema=schema)(f))


# Finding 2: property names that are not identifiers.


def test_an_aliased_parameter_is_published_under_its_alias_and_receives_it():
    received = []

    def route(self, from_: Annotated[str, Field(alias="from")], to: str) -> str:
        """Route.

        Args:
            from_: Where from.
        """
        received.append((from_, to))
        return ""

    probe = define(route=tool(route))
    schema = probe.tools["route"].input_schema
    assert schema["properties"]["from"] == {"type": "string", "description": "Where from."}
    assert schema["required"] == ["from", "to"]
    session = LocalSession(probe())
    session.reset()
    session.call_tool("route", {"from": "OSL", "to": "BGO"})
    assert received == [("OSL", "BGO")]
    assert refusal(probe, "route", {"from_": "OSL", "to": "BGO"}) == [
        "- (arguments): missing required property 'from'",
        "- from_: unknown argument; this tool takes from, to",
    ]


def test_an_explicit_schema_maps_a_property_to_an_aliased_parameter_or_to_kwargs():
    schema = {
        "type": "object",
        "properties": {"from": {"type": "string"}, "max-results": {"type": "integer"}},
        "required": ["from"],
        "additionalProperties": False,
    }
    received = []

    def aliased(
        self,
        from_: Annotated[str, Field(alias="from")],
        limit: Annotated[int, Field(alias="max-results")] = 5,
    ):
        received.append((from_, limit))
        return ""

    def collected(self, **arguments):
        received.append(arguments)
        return ""

    probe = define(aliased=tool(input_schema=schema)(aliased), collected=tool(input_schema=schema)(collected))
    session = LocalSession(probe())
    session.reset()
    session.call_tool("aliased", {"from": "OSL", "max-results": 2})
    session.call_tool("aliased", {"from": "OSL"})
    session.call_tool("collected", {"from": "OSL", "max-results": 2})
    assert received == [("OSL", 2), ("OSL", 5), {"from": "OSL", "max-results": 2}]


def route_twice(self, a: Annotated[str, Field(alias="b")], b: str) -> str: ...
def route_choices(self, a: Annotated[str, Field(validation_alias=AliasChoices("x", "y"))]) -> str: ...
def route_kwargs(self, a: str, **rest: str) -> str: ...


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (route_twice, r"tool 'f': parameters 'a' and 'b' are both published as 'b'; give each its own name"),
        (
            route_choices,
            r"tool 'f': parameter 'a' has an alias that is not a string; publish it under one name, "
            r"Field\(alias=\"\.\.\.\"\)",
        ),
        (
            route_kwargs,
            r"tool 'f' takes \*\*rest; declare each argument as a named parameter \(a name that is not "
            r"an identifier: Annotated\[str, Field\(alias=\"from\"\)\]\), or give the tool an explicit "
            r"input_schema",
        ),
    ],
)
def test_names_that_cannot_work_are_refused_saying_what_to_do(function, expected):
    with pytest.raises(ToolDefinitionError, match=expected):
        define(f=tool(name="f")(function))


def test_a_docstring_may_describe_an_aliased_parameter_by_either_name():
    def by_python_name(self, from_: Annotated[str, Field(alias="from")]) -> str:
        """Route.

        Args:
            from_: Where from.
        """
        return ""

    def by_published_name(self, from_: Annotated[str, Field(alias="from")]) -> str:
        """Route.

        Args:
            from: Where from.
        """
        return ""

    probe = define(a=tool(name="a")(by_python_name), b=tool(name="b")(by_published_name))
    for name in ("a", "b"):
        assert probe.tools[name].input_schema["properties"]["from"]["description"] == "Where from."


def test_a_docstring_that_describes_no_parameter_is_refused_not_dropped():
    def misspelt(self, to: str) -> str:
        """Route.

        Args:
            too: Where to.
        """
        return ""

    with pytest.raises(
        ToolDefinitionError,
        match=r"tool 'f': its docstring describes 'too', which it does not take \(it takes to\); name each "
        r"parameter as it is declared or published",
    ):
        define(f=tool(name="f")(misspelt))


def test_an_explicit_schema_that_requires_a_key_it_cannot_take_is_refused():
    schema = {
        "type": "object",
        "properties": {"to": {"type": "string"}},
        "required": ["to", "from"],
        "additionalProperties": False,
    }

    def route(self, /, **arguments):
        return ""

    with pytest.raises(
        ToolDefinitionError,
        match=r"tool 'f': input_schema requires 'from' but takes no key beyond its properties, which do not list "
        r"it, so no call could pass; add it to properties",
    ):
        define(f=tool(name="f", input_schema=schema)(route))
