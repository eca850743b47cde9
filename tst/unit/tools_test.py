"""Authoring: what a tool publishes, and what is refused when the environment class is defined."""

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from agent_env import Environment, Tool, ToolArgumentError, ToolDefinitionError, UnknownToolError, tool
from testbed.toy import ToyDesk


def define(**methods: Any) -> type[Environment]:
    return type("Probe", (Environment,), methods)


def test_published_schema_carries_nested_fields_enums_bounds_and_descriptions():
    schema = ToyDesk.tools["submit_offers"].input_schema
    curve = schema["properties"]["curves"]["items"]
    offer = schema["properties"]["as_offers"]["anyOf"][0]["items"]
    assert schema["required"] == ["curves"]
    assert schema["properties"]["curves"]["description"] == "Energy offer curves, one per hour set."
    assert curve["required"] == ["hours", "points"]
    assert curve["properties"]["points"]["minItems"] == 2 and curve["properties"]["points"]["maxItems"] == 10
    assert offer["properties"]["product"]["enum"] == ["regup", "regdn", "rrspfr", "rrsffr", "ecrs", "nspin"]
    assert offer["properties"]["mw"] == {"type": "number", "minimum": 0}
    assert ToyDesk.tools["submit_offers"].description == (
        "Submit energy offer curves and AS offers; a rejected submission changes nothing."
    )


def test_tools_are_published_in_definition_order_with_end_turn_last():
    assert list(ToyDesk.tools) == ["submit_offers", "battery_status", "write_note", "end_turn"]
    assert [t["name"] for t in ToyDesk.tools.published] == list(ToyDesk.tools)


def test_field_description_wins_over_the_docstring():
    def pick(self, kind: Annotated[Literal["a", "b"], Field(description="from Field")]) -> str:
        """Pick one.

        Args:
            kind: from the docstring
        """
        return kind

    schema = define(pick=tool(pick)).tools["pick"].input_schema
    assert schema["properties"]["kind"] == {"type": "string", "description": "from Field", "enum": ["a", "b"]}


def test_an_explicit_input_schema_is_published_as_given_after_normalization():
    explicit = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1, "title": "N"}},
        "required": ["n"],
        "additionalProperties": False,
    }

    def count(self, n):
        return n

    published = define(count=tool(input_schema=explicit)(count)).tools["count"].input_schema
    assert published == {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}},
        "required": ["n"],
        "additionalProperties": False,
    }


def test_tool_arguments_are_converted_to_the_declared_pydantic_types():
    class Point(BaseModel):
        mw: float

    received = []

    def place(self, points: list[Point]) -> str:
        received.extend(points)
        return "ok"

    probe = define(place=tool(place))
    kwargs = probe.tools["place"].bind({"points": [{"mw": 3}]})
    assert kwargs == {"points": [Point(mw=3.0)]}


def test_unknown_arguments_are_refused_naming_what_the_tool_takes():
    with pytest.raises(ToolArgumentError, match="mw: unknown argument; this tool takes as_offers, curves"):
        ToyDesk.tools["submit_offers"].bind({"curves": [], "mw": 3})


def star_args(self, *values: int) -> str: ...
def star_kwargs(self, **extra: int) -> str: ...
def positional_only(self, n: int, /) -> str: ...
def unannotated(self, n) -> str: ...


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (star_args, r"tool 'f' takes \*values; .* declare each one as a parameter"),
        (star_kwargs, r"tool 'f' takes \*\*extra; declare each argument as a named parameter"),
        (
            positional_only,
            r"tool 'f' has positional-only parameter 'n'; .* move the '/' to just after the receiver",
        ),
        (unannotated, r"tool 'f': parameter 'n' has no type hint; annotate it"),
    ],
)
def test_unrepresentable_signatures_are_refused_at_class_definition(function, expected):
    with pytest.raises(ToolDefinitionError, match=expected):
        define(f=tool(name="f")(function))


@pytest.mark.parametrize("name", ["reset", "get_reward", "_hidden", "not-an-identifier", "class"])
def test_reserved_and_invalid_names_are_refused(name):
    def f(self) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match=repr(name)):
        define(f=tool(name=name)(f))


def test_two_tools_with_one_name_are_refused():
    def a(self) -> str:
        return ""

    def b(self) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match=r"publishes tool names twice: \['same'\]"):
        define(a=tool(name="same")(a), b=tool(name="same")(b))


def test_a_schema_that_breaks_the_metaschema_fails_with_the_tool_name_and_place():
    def f(self, n: int) -> str:
        return ""

    bad = {"type": "object", "properties": {"n": {"type": "int"}}, "required": ["n"]}
    with pytest.raises(
        ToolDefinitionError, match=r"tool 'f': not a valid JSON Schema \(2020-12\) at properties.n.type"
    ):
        define(f=tool(input_schema=bad)(f))


def test_an_explicit_schema_must_match_the_parameters():
    def f(self, n: int) -> str:
        return ""

    with pytest.raises(
        ToolDefinitionError, match=r"properties \['m'\] must match the method's parameters \['n'\]"
    ):
        define(f=tool(input_schema={"type": "object", "properties": {"m": {}}})(f))


def test_a_recursive_type_is_refused_with_a_way_out():
    class Node(BaseModel):
        children: list["Node"] = []

    def f(self, tree: Node) -> str:
        return ""

    with pytest.raises(
        ToolDefinitionError,
        match=r"tool 'f': properties.tree.properties.children.items: type 'Node' refers to itself.*explicit input_schema",
    ):
        define(f=tool(f))


def test_a_recursive_listed_schema_is_refused_without_the_advice_only_a_tools_author_can_take():
    listed = {"type": "object", "properties": {"tree": {"$ref": "#/$defs/Node"}},
              "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}  # fmt: skip
    with pytest.raises(ToolDefinitionError) as refused:
        Tool.from_schema("tree", "A tree.", listed, lambda environment, **arguments: "")
    assert str(refused.value) == (
        "tool 'tree': properties.tree.properties.children.items: type 'Node' refers to itself, and a recursive type "
        "cannot be inlined into a self-contained schema"
    )


def test_an_override_of_a_tool_stays_a_tool():
    class Closing(ToyDesk):
        def end_turn(self) -> str:
            """Close the book."""
            return "closed"

    assert Closing.tools["end_turn"].description == "Close the book."


def test_an_override_without_a_docstring_keeps_the_description_it_overrides():
    class Quiet(ToyDesk):
        def end_turn(self) -> str:
            return "done"

    class Quieter(Quiet):
        @tool
        def battery_status(self) -> dict[str, float]:
            return {}

    assert Quiet.tools["end_turn"].description == Environment.tools["end_turn"].description != ""
    assert Quieter.tools["end_turn"].description == Environment.tools["end_turn"].description
    assert Quieter.tools["battery_status"].description == ToyDesk.tools["battery_status"].description != ""
    assert Quieter().end_turn() == "done"


CONTRADICTION = {"type": "boolean", "enum": ["True", "False", "dontcare"]}  # issue 20, item 15
NAMES_BOTH = (
    'tool \'f\': properties.x: its enum ["True", "False", "dontcare"] holds no value of its type "boolean", so '
    'no value is valid; give it "type": "string" (the type of its values), or enum values of type "boolean"'
)


def test_an_explicit_schema_whose_enum_contradicts_its_type_is_refused_naming_both():
    def f(self, x: Any) -> str:
        return ""

    schema = {
        "type": "object",
        "properties": {"x": CONTRADICTION},
        "required": ["x"],
        "additionalProperties": False,
    }
    with pytest.raises(ToolDefinitionError) as refused:
        define(f=tool(input_schema=schema)(f))
    assert str(refused.value) == NAMES_BOTH


def test_a_remote_schema_whose_enum_contradicts_its_type_is_refused_naming_both():
    schema = {"type": "object", "properties": {"x": CONTRADICTION}}
    with pytest.raises(ToolDefinitionError) as refused:
        Tool.from_schema("f", "", schema, lambda **arguments: arguments)
    assert str(refused.value) == NAMES_BOTH


def test_a_count_beside_an_item_type_it_cannot_apply_to_is_not_published():
    def f(self, xs: Any = None) -> str:
        return ""

    items = {"type": "integer", "minItems": 5, "maxItems": 100}  # issue 20, item 16
    schema = {
        "type": "object",
        "properties": {"xs": {"type": "array", "items": items}},
        "additionalProperties": False,
    }
    published = define(f=tool(input_schema=schema)(f)).tools["f"]
    assert published.input_schema["properties"]["xs"] == {"type": "array", "items": {"type": "integer"}}
    published.bind({"xs": [1, 2]})  # as before: no count ever applied to the array


def args_not_indented(self, isbn: str, days: int) -> str:
    """Lend a book.

    Args:
    isbn: The book's ISBN.
    days: How long.
    """
    return ""


def args_without_colon(self, isbn: str) -> str:
    """Lend a book.

    Args:
        isbn The book's ISBN.
    """
    return ""


@pytest.mark.parametrize(
    ("function", "parser_says"),
    [(args_not_indented, 'No specification for "Args": ""'), (args_without_colon, "Expected a colon in")],
)
def test_a_docstring_the_parser_cannot_read_is_refused_naming_the_tool_and_what_to_indent(
    function, parser_says
):
    with pytest.raises(ToolDefinitionError) as raised:
        define(lend=tool(name="lend")(function))
    message = str(raised.value)
    assert message.startswith("tool 'lend': its docstring cannot be read as a Google-style docstring")
    assert parser_says in message
    assert "indent each entry one level deeper than its section's heading" in message
    assert "    isbn: The book's ISBN." in message


def no_self(isbn: str) -> str:
    """Look a book up.

    Args:
        isbn: The book's ISBN.
    """
    return isbn


def no_self_undocumented(isbn: str, days: int = 7) -> str:
    return isbn


def no_self_explicit(isbn):
    return isbn


@pytest.mark.parametrize("function", [no_self, no_self_undocumented])
def test_a_tool_without_self_is_refused_saying_its_first_parameter_would_get_the_environment(function):
    with pytest.raises(ToolDefinitionError) as raised:
        define(lookup=tool(name="lookup")(function))
    assert str(raised.value).startswith(
        "tool 'lookup' does not take self: its first parameter, 'isbn', would receive the environment, not the "
        "model's argument; take self first: def lookup(self, isbn"
    )


def test_an_explicit_schema_tool_without_self_is_refused_the_same_way():
    schema = {"type": "object", "properties": {"isbn": {"type": "string"}}, "additionalProperties": False}
    with pytest.raises(
        ToolDefinitionError, match=r"^tool 'lookup' does not take self: its first parameter, 'isbn'"
    ):
        define(lookup=tool(name="lookup", input_schema=schema)(no_self_explicit))


def test_a_receiver_annotated_as_self_is_the_receiver():
    from typing import Self

    def lookup(self: Self, isbn: str) -> str:
        """Look a book up.

        Args:
            isbn: The book's ISBN.
        """
        return isbn

    published = define(lookup=tool(lookup)).tools["lookup"]
    assert list(published.input_schema["properties"]) == ["isbn"]


def test_a_hidden_tool_is_not_published_listed_nor_fingerprinted_but_resolves_and_validates_by_name():
    class Noted(Environment):
        @tool
        def look(self) -> str:
            """Look around."""
            return "a room"

        @tool(hidden=True)
        def note(self, text: Annotated[str, Field(min_length=1)]) -> str:
            """Keep a note.

            Args:
                text: The note.
            """
            return text

    class Plain(Environment):
        @tool
        def look(self) -> str:
            """Look around."""
            return "a room"

    assert [published["name"] for published in Noted.tools.published] == ["look", "end_turn"]
    assert list(Noted.tools) == ["look", "end_turn"] and "note" not in Noted.tools
    assert Noted.tools.fingerprint == Plain.tools.fingerprint
    hidden = Noted.tools.resolve("note")
    assert hidden.hidden and hidden.bind({"text": "seen"}) == {"text": "seen"}
    with pytest.raises(ToolArgumentError, match="text"):
        hidden.bind({"text": ""})
    with pytest.raises(UnknownToolError, match=r"the tools are: look, end_turn$"):
        Noted.tools.resolve("nothing")
