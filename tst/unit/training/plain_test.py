"""`agent_env/training/plain.py`: what a plain TRL environment shows is exactly TRL's own rendering of the
environment's own tool functions, checked against TRL's code path (its discovery, then the real tokenizer's
`apply_chat_template` on the methods themselves), on the desk and on a toy with `Literal`, nested models and
`list[int]`."""

from __future__ import annotations

import contextlib
import inspect
import json
import warnings
from collections.abc import Iterator
from enum import Enum
from typing import Annotated, Any, Literal, TypedDict

import pytest
from pydantic import BaseModel, Field
from transformers.utils.chat_template_utils import DocstringParsingException, TypeHintParsingException

from agent_env import AgentEnv, Environment, tool
from agent_env.environment import class_reference, import_class
from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.schema import fingerprint
from agent_env.tools import Tool
from agent_env.training.plain import nearest_hint, plain_tool, plain_tools, plain_view, unrenderable
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


@pytest.fixture(scope="module")
def served_desk() -> Iterator[str]:
    """The desk served by `build_app` (the control API and its OpenEnv surface) on a real loopback socket."""
    from agent_env.openenv import OpenEnvSurface
    from agent_env.server.app import build_app
    from tst.unit.server.running import running

    with running(build_app(GridSimDesk, surfaces=[OpenEnvSurface()])) as url:
        yield url


def served_listing(listing: dict[str, Any]) -> Iterator[str]:
    """A server whose `GET /tools` answers `listing` (and nothing else), as another server, or another version of
    the class, would answer it."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from tst.unit.server.running import running

    async def tools(request: Any) -> JSONResponse:
        return JSONResponse(listing)

    with running(Starlette(routes=[Route("/tools", tools)])) as url:
        yield url


@pytest.mark.parametrize("surface", ["control API", "OpenEnv"])
def test_a_served_environment_whose_class_is_at_hand_shows_its_own_methods_exactly_as_in_process(
    served_desk, surface
):
    from agent_env.evaluation._arms import lossy_arm

    env = (
        AgentEnv.connect(served_desk)
        if surface == "control API"
        else AgentEnv.openenv(f"{served_desk}/openenv")
    )
    view = plain_view(env.provider)
    local = AgentEnv.local("gridsim-desk")
    in_process = plain_tools(local.provider)
    assert [tool.name for tool in view.tools] == [tool.name for tool in in_process]
    for served, own in zip(view.tools, in_process, strict=True):  # tool by tool: schema, form, refusal
        assert served == own, served.name
    withdraw = next(tool for tool in view.tools if tool.name == "withdraw_offers")
    assert withdraw.schema["function"]["parameters"]["properties"]["product"]["enum"][0] == "energy"
    assert sorted(unrenderable(view.tools)) == ["check_offers", "submit_dam_offers"]
    assert view.basis == (
        "the server's class agent_env.envs.gridsim.desk:GridSimDesk, imported here with the served tool set "
        f"({fingerprint(GridSimDesk.tools.published)}), so each tool is its own method, as in process"
    )
    arm = lossy_arm(env)  # what `agent-env eval URL --compare lossy` sends, and says it sends
    assert arm.tools == lossy_arm(local).tools
    assert arm.unrenderable == lossy_arm(local).unrenderable
    assert arm.shows.endswith(view.basis)


@pytest.mark.parametrize(
    ("served", "why"),
    [
        (None, "the server names no class to import here (it is not an agent_env server, or it serves an "
               "MCPEnvironment's tools or a class defined in __main__)"),
        ("tst_no_such_package.envs:Desk", "the server's class tst_no_such_package.envs:Desk cannot be imported "
                                          "here (ModuleNotFoundError: No module named 'tst_no_such_package')"),
        ("os:path", "the server's class os:path cannot be imported here (LookupError: 'os:path' names a module of "
                    "Python's standard library, where no environment is)"),
        ("testbed.toy:ToyDesk", "the server's class testbed.toy:ToyDesk has another tool set here "),
    ],
    ids=["no class named", "not importable here", "never imported", "another tool set"],
)  # fmt: skip
def test_a_served_environment_whose_class_cannot_be_had_shows_the_port_of_its_listing_and_says_why(
    served, why
):
    listing = {"environment": "GridSimDesk", "tools": GridSimDesk.tools.published}
    with contextlib.contextmanager(served_listing)(listing | ({"class": served} if served else {})) as url:
        view = plain_view(AgentEnv.connect(url).provider)
    assert view.basis is not None and view.basis.startswith(why)
    assert view.basis.endswith("so each tool is TRL's port of its listing as served")
    assert {tool.form for tool in view.tools} == {"listing"}
    withdraw = next(tool for tool in view.tools if tool.name == "withdraw_offers")
    assert withdraw.schema["function"]["parameters"]["properties"]["product"] == {
        "type": "string",
        "description": '"energy" or an AS product; both energy and AS when omitted.',
    }  # the port reads only the top-level type of the listing


def test_a_class_is_named_for_other_processes_only_when_they_can_import_it_by_that_name():
    assert class_reference(GridSimDesk) == "agent_env.envs.gridsim.desk:GridSimDesk"
    assert import_class("agent_env.envs.gridsim.desk:GridSimDesk") is GridSimDesk

    class Local(Environment):
        def reset(self, **row: Any) -> None:
            return None

        def reward(self) -> float:
            return 0.0

    assert class_reference(Local) is None  # defined in a function
    with pytest.raises(LookupError, match="names no Environment subclass here"):
        import_class("agent_env.envs.gridsim.desk:CurveOffer")


def trl_port_binds(spec: dict[str, Any]) -> bool:
    """Whether TRL's own port of listed tools binds a method for `spec` (it skips some, logging a warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TRL warns on any import from trl.experimental
        from trl.experimental.openreward.environment import _bind_tool_method

    port = type("Port", (), {})
    _bind_tool_method(port, spec)
    return spec["name"] in port.__dict__


ANY = {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}


@pytest.mark.parametrize(
    ("published", "listed_name", "schema", "why"),
    [
        ("café", None, ANY, "its name 'café'"),  # a Python identifier, not an ASCII one
        (
            "get_sum",
            "get-sum",
            ANY,
            "the name it is listed under, 'get-sum',",
        ),  # an MCP tool agent_env renamed
        (
            "fetch",
            None,
            {"type": "object", "properties": {"url": {"type": "string"}, "max-depth": {"type": "integer"}}},
            "its parameter 'max-depth'",
        ),
    ],
    ids=["non-ASCII name", "renamed tool", "parameter"],
)
def test_a_listed_tool_trls_port_skips_is_marked_as_one_a_plain_trl_environment_would_not_offer(
    published, listed_name, schema, why
):
    assert not trl_port_binds({"name": listed_name or published, "description": "", "input_schema": schema})
    tool_ = Tool.from_schema(
        published, "Do it.", schema, lambda environment, **a: "", listed_name=listed_name
    )
    shown = plain_tool(tool_, Environment)
    assert shown.skipped
    assert shown.refused == (
        f"TRL's port of listed tools skips it ({why} is no ASCII Python identifier: it logs a warning and binds "
        "nothing), so a plain TRL environment would not offer it"
    )
    assert shown.schema["function"]["name"] == published  # its nearest form, under the name calls are held to
    kept = set(schema["properties"]) - {"max-depth"}  # what a Python parameter can be called
    assert set(shown.schema["function"]["parameters"]["properties"]) == kept
    rendered([shown.schema])


def test_a_listed_parameter_named_self_cannot_be_ported_and_is_left_out_of_the_nearest_form():
    listed = {"type": "object", "properties": {"self": {"type": "string"}, "to": {"type": "string"}}}
    with pytest.raises(SyntaxError):  # TRL's port writes `def whoami(self, self: str = None, ...)`
        trl_port_binds({"name": "whoami", "description": "", "input_schema": listed})
    shown = plain_tool(Tool.from_schema("whoami", "Who.", listed, lambda environment, **a: ""), Environment)
    assert not shown.skipped and shown.refused is not None and shown.refused.startswith("SyntaxError")
    assert list(shown.schema["function"]["parameters"]["properties"]) == ["to"]
