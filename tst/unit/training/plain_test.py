"""`agent_env/training/plain.py`: what a plain TRL environment shows is exactly TRL's own rendering of the
environment's own tool functions, checked against TRL's code path (its discovery, then the real tokenizer's
`apply_chat_template` on the methods themselves), on the desk and on a toy with `Literal`, nested models and
`list[int]`."""

from __future__ import annotations

import inspect
import json
import warnings
from enum import Enum
from typing import Annotated, Any, Literal, TypedDict

import pytest
from pydantic import BaseModel, Field
from transformers.utils.chat_template_utils import DocstringParsingException, TypeHintParsingException

from agent_env import AgentEnv, Environment, tool
from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.tools import Tool
from agent_env.training.plain import nearest_hint, plain_tool, plain_tools, unrenderable
from tst.support import qwen3_tokenizer, trl_refusal_of

PROBE = [{"role": "user", "content": "Begin."}]


class Box(BaseModel):
    """A box."""

    width: int = Field(ge=1)
    label: Literal["a", "b"]


class Mode(Enum):
    FAST = "fast"
    SLOW = "slow"


class Shapes(Environment):
    """Tools whose hints TRL reads (a Literal, list[int], an Enum) and one whose nested models it cannot."""

    def reset(self, **row: Any) -> str:
        return "Go."

    def reward(self) -> float:
        return 0.0

    @tool
    def count(
        self, numbers: list[int], color: Literal["red", "green"] = "red", mode: Mode = Mode.FAST
    ) -> int:
        """Count numbers.

        Args:
            numbers: The numbers.
            color: Which color to count in.
            mode: How fast.
        """
        return len(numbers)

    @tool
    def pack(self, box: Box, spares: list[Box] | None = None, sizes: list[int] | None = None) -> str:
        """Pack boxes.

        Args:
            box: The box to pack.
            spares: More boxes.
            sizes: Their sizes.
        """
        return "packed"

    @tool(name="weigh_it")
    def weigh(self, grams: Annotated[float, Field(ge=0, description="Grams of it.")]) -> str:
        """Weigh something; the docstring says nothing of its argument."""
        return "ok"


def trl_discovered(environment: type[Environment]) -> dict[str, Any]:
    """The methods TRL's GRPOTrainer finds on a plain TRL environment made of `environment`'s own tool functions:
    listed with `inspect.getmembers` on the class, fetched from an instance, as trl/trainer/grpo_trainer.py does."""
    namespace = {tool.name: tool.function for tool in environment.tools.values()}
    namespace |= {"reset": lambda self, **row: None, "get_reward": lambda self: 0.0}
    instance = type(f"Plain{environment.__name__}", (), namespace)()
    return {
        name: getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name in environment.tools
    }


def rendered(tools: list[Any]) -> str:
    """The prompt TRL builds, through the real Qwen3 tokenizer's `apply_chat_template` (what TRL calls)."""
    text: str = qwen3_tokenizer().apply_chat_template(PROBE, tools=tools, tokenize=False)
    return text


@pytest.mark.parametrize("environment", [GridSimDesk, Shapes])
def test_each_tool_is_shown_exactly_as_trl_renders_the_environments_own_method(environment):
    shown = {tool.name: tool for tool in plain_tools(AgentEnv.local(environment).provider)}
    methods = trl_discovered(environment)
    assert list(shown) == sorted(environment.tools)  # TRL's order: getmembers lists by name
    for name, method in methods.items():
        try:
            trl_prompt = rendered([method])
        except Exception as error:  # TRL cannot start with this tool at all
            said = " ".join(str(error).split()).partition(". ")
            assert shown[name].refused == f"{type(error).__name__}: {said[0]}{said[1].strip()}", name
            continue
        assert shown[name].refused is None, name
        assert rendered([shown[name].schema]) == trl_prompt, name
        assert shown[name].form == "method"


def test_the_desk_loses_in_trls_own_rendering_only_what_trl_itself_drops():
    shown = {tool.name: tool for tool in plain_tools(AgentEnv.local("gridsim-desk").provider)}
    withdraw = shown["withdraw_offers"].schema["function"]["parameters"]["properties"]
    assert withdraw["product"]["enum"] == ["energy", "regup", "regdn", "rrspfr", "rrsffr", "ecrs", "nspin"]
    assert withdraw["hours"]["anyOf"] == [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]
    refused = unrenderable(list(shown.values()))
    assert sorted(refused) == [
        "check_offers",
        "submit_dam_offers",
    ]  # their TypedDict hints: TRL raises on them
    for name, why in refused.items():  # a TypedDict hint (transformers >= 5.23), or else the docstring's gap
        refusal = trl_refusal_of(GridSimDesk, name)
        assert refusal is not None and refusal.startswith(why)
        assert "CurveOffer" in why or "'curves'" in why


def test_a_tool_trl_cannot_render_is_shown_in_its_nearest_form_and_said_to_be_refused():
    shown = {tool.name: tool for tool in plain_tools(AgentEnv.local(Shapes).provider)}
    pack = shown["pack"]
    # transformers >= 5.23 refuses its pydantic hints, and the nearest form is shown; before, it renders them as
    # bare objects itself: the same schema either way
    refusal = trl_refusal_of(Shapes, "pack")
    assert (pack.refused is None) == (refusal is None)
    assert refusal is None or (
        refusal.startswith(pack.refused or "") and "Couldn't convert the type hint" in refusal
    )
    assert pack.schema["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "box": {"type": "object", "description": "The box to pack."},
            "spares": {
                "type": "array",
                "items": {"type": "object"},
                "nullable": True,
                "description": "More boxes.",
            },
            "sizes": {
                "type": "array",
                "items": {"type": "integer"},
                "nullable": True,
                "description": "Their sizes.",
            },
        },
        "required": ["box"],
    }
    rendered([pack.schema])  # the nearest form is one TRL's template takes
    count = shown["count"].schema["function"]["parameters"]["properties"]
    assert count["color"] == {
        "type": "string",
        "enum": ["red", "green"],
        "description": "Which color to count in.",
    }
    assert count["numbers"] == {"type": "array", "items": {"type": "integer"}, "description": "The numbers."}


def test_a_parameter_the_docstring_leaves_out_is_described_by_its_published_description_in_the_nearest_form():
    weigh = next(tool for tool in plain_tools(AgentEnv.local(Shapes).provider) if tool.name == "weigh_it")
    assert weigh.refused is not None
    assert weigh.refused.startswith("DocstringParsingException: ") and "'grams'" in weigh.refused
    assert weigh.schema["function"]["name"] == "weigh_it"  # the published name, which calls are held to
    assert weigh.schema["function"]["parameters"]["properties"] == {
        "grams": {"type": "number", "description": "Grams of it."}
    }


def test_a_listed_tool_is_shown_as_trls_own_port_of_listed_tools_renders_its_listing_as_the_server_sent_it():
    from transformers.utils import get_json_schema

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TRL warns on any import from trl.experimental
        from trl.experimental.openreward.environment import _bind_tool_method

    listed = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to find."},
            "limit": {"type": ["integer", "null"], "default": 5},
            "filter": {"$ref": "#/$defs/Filter"},
        },
        "required": ["query"],
        "$defs": {"Filter": {"type": "object", "properties": {"tag": {"type": "string"}}}},
    }
    published = Tool.from_schema("search", "Search the notes.", listed, lambda environment, **arguments: "")
    shown = plain_tool(published, Environment)
    port = type("Port", (), {})
    _bind_tool_method(port, {"name": "search", "description": "Search the notes.", "input_schema": listed})
    assert shown.schema == get_json_schema(port().search)
    assert (shown.form, shown.refused) == ("listing", None)
    # the port reads the server's own listing: a $ref it does not follow becomes a string, as TRL would show it
    assert shown.schema["function"]["parameters"]["properties"]["filter"]["type"] == "string"


def test_a_listed_parameter_no_python_parameter_can_be_called_is_left_out_of_the_nearest_form():
    listed = {
        "type": "object",
        "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
        "required": ["from", "to"],
    }
    shown = plain_tool(
        Tool.from_schema("route", "Plan a route.", listed, lambda environment, **a: ""), Environment
    )
    assert shown.refused is not None and shown.refused.startswith("SyntaxError")
    assert shown.schema["function"]["parameters"] == {
        "type": "object",
        "properties": {"to": {"type": "string", "description": "to"}},
        "required": ["to"],
    }


class Row(TypedDict):
    name: str


@pytest.mark.parametrize(
    ("hint", "nearest"),
    [
        (int, int),
        (list[int], list[int]),
        (Row, dict),
        (list[Row], list[dict]),
        (Box | None, dict | None),
        (tuple[int], list[int]),
        (tuple[int, ...], list[int]),
        (tuple[int, str], tuple[int, str]),
        (dict[str, Row], dict[str, dict]),
        (set[str], list[str]),
        (Literal["a", 1], Literal["a", 1]),
        (Annotated[list[Row], Field(max_length=3)], list[dict]),
        (Mode, Mode),
        (object, Any),
    ],
)
def test_nearest_hint_keeps_what_trl_reads_and_reads_the_rest_as_the_nearest_basic_type(hint, nearest):
    assert nearest_hint(hint) == nearest


def test_every_desk_tool_renders_in_one_prompt_in_the_lossy_arm():
    # A plain TRL environment with the desk's methods cannot build this prompt; the nearest forms can.
    tools = [tool.schema for tool in plain_tools(AgentEnv.local("gridsim-desk").provider)]
    prompt = rendered(tools)
    assert all(json.dumps(tool, ensure_ascii=False) in prompt for tool in tools)
    with pytest.raises(
        (TypeHintParsingException, DocstringParsingException)
    ):  # which, by transformers' version
        rendered(list(trl_discovered(GridSimDesk).values()))
