"""SchemaTool: transformers renders it as the published schema, parse_response types calls from it, TRL calls it."""

import inspect
import json
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from transformers.utils import get_json_schema
from transformers.utils.chat_template_utils import DocstringParsingException

from agent_env import LocalSession, ToolArgumentError
from agent_env.training import AsyncSchemaTool, SchemaTool
from agent_env.training._render_check import render_tools, tojson
from testbed.toy import ToyDesk
from tst.support import qwen3_tokenizer

PUBLISHED = ToyDesk.tools["submit_offers"].published()
ARGUMENTS = {
    "curves": [{"hours": [7, 8], "points": [[-50, 20], [50, 40]]}],
    "as_offers": [{"product": "regup", "hours": "HE07", "mw": 10, "price": 5}],
}


def record(name, arguments):
    return {"name": name, "arguments": arguments}


def tool_block(prompt: str) -> list[dict]:
    """The tools Qwen3's template lists, read back from the prompt: one JSON object per line in <tools>."""
    block = prompt.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    return [json.loads(line) for line in block.splitlines()]


def test_it_is_a_dict_holding_the_published_schema():
    schema_tool = SchemaTool(PUBLISHED, record)
    assert dict(schema_tool) == {
        "type": "function",
        "function": {
            "name": "submit_offers",
            "description": PUBLISHED["description"],
            "parameters": PUBLISHED["inputSchema"],
        },
    }
    assert schema_tool.__name__ == "submit_offers"


def test_qwen3_renders_it_as_exactly_the_published_schema():
    prompt = qwen3_tokenizer().apply_chat_template(
        [{"role": "user", "content": "go"}], tools=[SchemaTool(PUBLISHED, record)], tokenize=False
    )
    assert tool_block(prompt) == [dict(SchemaTool(PUBLISHED, record))]
    assert tojson(dict(SchemaTool(PUBLISHED, record))) in prompt


def test_parse_response_types_arguments_from_the_published_schema():
    tokenizer = qwen3_tokenizer()
    schema_tool = SchemaTool(PUBLISHED, record)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "go"}], tools=[schema_tool], tokenize=False, add_generation_prompt=True
    )
    # The model wrote `curves` as a JSON string: the schema says array, so parsing casts it.
    call = {
        "name": "submit_offers",
        "arguments": {"curves": json.dumps(ARGUMENTS["curves"]), "as_offers": []},
    }
    response = f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>"
    ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    parsed = tokenizer.parse_response(ids, prefix=prompt, tools=[schema_tool])
    arguments = parsed["tool_calls"][0]["function"]["arguments"]
    assert arguments == {"curves": ARGUMENTS["curves"], "as_offers": []}
    untyped = tokenizer.parse_response(ids, prefix=prompt, tools=None)
    assert isinstance(untyped["tool_calls"][0]["function"]["arguments"]["curves"], str)


def test_a_parsed_call_goes_through_to_the_environment():
    session = LocalSession(ToyDesk())
    session.reset()
    schema_tool = SchemaTool(PUBLISHED, session.call_tool)
    assert schema_tool(**ARGUMENTS) == "accepted 1 curves and 1 AS offers"
    assert session.environment.offers[0].product == "regup"


def test_get_json_schema_gives_the_schema_it_carries_wherever_transformers_and_trl_call_it():
    from transformers.utils import chat_template_utils
    from transformers.utils.chat_parsing import response_parser

    schema_tool = SchemaTool(PUBLISHED, record)  # made with transformers loaded, it teaches get_json_schema
    for module in (chat_template_utils, response_parser):
        assert module.get_json_schema(schema_tool) == dict(schema_tool)
        assert (
            module.get_json_schema(schema_tool) is not schema_tool
        )  # a plain dict, as get_json_schema returns
    # Transformers' own, as this module imported it before: a SchemaTool has no docstring to guess a schema from.
    assert get_json_schema.__module__ == chat_template_utils.__name__
    with pytest.raises(DocstringParsingException, match="has no docstring"):
        get_json_schema(schema_tool)


def test_get_json_schema_still_reads_any_other_function_itself():
    SchemaTool(PUBLISHED, record)
    from transformers.utils import chat_template_utils

    def offer(mw: float) -> str:
        """Offer.

        Args:
            mw: Megawatts.
        """
        return ""

    assert chat_template_utils.get_json_schema(offer) == get_json_schema(offer)


def test_it_pickles_with_its_callable():
    restored = pickle.loads(pickle.dumps(SchemaTool(PUBLISHED, record)))
    assert restored == SchemaTool(PUBLISHED, record)
    assert restored(x=1) == {"name": "submit_offers", "arguments": {"x": 1}}


def test_an_async_tool_returns_its_result_when_called_synchronously_on_311():
    # Python 3.11's inspect.iscoroutinefunction is false for callable objects, so TRL calls it synchronously.
    if sys.version_info >= (3, 12):
        pytest.skip("this is the Python 3.11 path")
    session = LocalSession(ToyDesk())
    session.reset()
    note = AsyncSchemaTool(ToyDesk.tools["write_note"].published(), session.acall_tool)
    assert not inspect.iscoroutinefunction(note)
    assert note(text="hello") == "1 notes"


def test_the_factorys_async_tool_on_311_is_the_sessions_synchronous_call(monkeypatch):
    # TRL on 3.11 calls every tool synchronously: the factory gives an async tool a SchemaTool over the session's
    # call_tool, which makes the one hop an async tool needs under the call's deadline, not acall_tool run from a
    # thread (a second task on the loop for the deadline).
    if sys.version_info >= (3, 12):
        pytest.skip("this is the Python 3.11 path")
    from agent_env import AgentEnv

    instance = AgentEnv.local(ToyDesk).factory()
    instance.reset()
    awaited: list[str] = []
    acall = LocalSession.acall_tool

    async def spy(self, name, arguments):  # type: ignore[no-untyped-def]
        awaited.append(name)
        return await acall(self, name, arguments)

    monkeypatch.setattr(LocalSession, "acall_tool", spy)
    assert type(instance.write_note) is SchemaTool
    assert instance.write_note(text="hello") == "1 notes"
    assert awaited == []
    with pytest.raises(ToolArgumentError, match="text"):
        instance.write_note(text="x" * 201)


def interpreter(version: str) -> str | None:
    """A working interpreter for `version` (pyenv shims exist for versions that are not selected, and fail)."""
    candidates = [
        shutil.which(f"python{version}"),
        *map(str, Path.home().glob(f".pyenv/versions/{version}*/bin/python")),
    ]
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "--version"], capture_output=True).returncode == 0:
            return candidate
    return None


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_an_async_tool_is_a_coroutine_function_on_312_and_later(version):
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} interpreter on this machine")
    # SchemaTool's module needs only the standard library, agent_env._loop and agent_env.errors: load them from
    # their files.
    root = Path(__file__).parents[3]
    script = textwrap.dedent(
        f"""
        import asyncio, importlib.util, inspect, sys, types
        sys.modules["agent_env"] = types.ModuleType("agent_env")
        for name, path in [
            ("agent_env._loop", "agent_env/_loop.py"),
            ("agent_env.errors", "agent_env/errors.py"),
            ("tools", "agent_env/training/_tools.py"),
        ]:
            spec = importlib.util.spec_from_file_location(name, "{root}/" + path)
            module = importlib.util.module_from_spec(spec); sys.modules[name] = module; spec.loader.exec_module(module)
        async def call(name, arguments):
            return name + ":" + arguments["text"]
        published = {{"name": "note", "description": "", "inputSchema": {{}}}}
        tool = module.AsyncSchemaTool(published, call)
        print(inspect.iscoroutinefunction(tool), asyncio.run(tool(text="hi")))
        # Bound to an instance, as the factory binds it: TRL reads it through its `__func__`, which must be a
        # coroutine function too (TRL <= 1.14 lists it as a bound method: inspect.getmembers(..., ismethod)).
        class Environment:
            async def note(self, /, **arguments): ...
            def __init__(self):
                self.note = module.AsyncSchemaTool(published, call, bound=(self, Environment.note))
        instance = Environment()
        found = dict(inspect.getmembers(instance, predicate=inspect.ismethod))["note"]
        print(found is instance.note, inspect.iscoroutinefunction(found), asyncio.run(found(text="ho")))
        try:
            module.AsyncSchemaTool(published, call, bound=(instance, lambda self: None))
        except TypeError as error:
            print("refused:", "is not a coroutine function" in str(error))
        """
    )
    result = subprocess.run([python, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.split("\n")[:3] == ["True note:hi", "True True note:ho", "refused: True"]


def test_render_tools_uses_the_real_apply_chat_template():
    prompt = render_tools([SchemaTool(PUBLISHED, record)], "qwen3")
    assert prompt.startswith("<|im_start|>system\n# Tools") and prompt.endswith("<|im_start|>assistant\n")


def test_a_failed_call_reads_as_written_inside_trls_error_dict():
    def refuse(name: str, arguments: dict) -> str:
        raise ToolArgumentError(
            "Invalid arguments for tool 'offer'; fix these and call it again:\n- x: expected number"
        )

    with pytest.raises(ToolArgumentError) as raised:
        SchemaTool(PUBLISHED, refuse)(x="a")
    # TRL's tool loop: content = str({"error": str(error)}), and the call counts as failed.
    assert str({"error": str(raised.value)}) == (
        "{'error': Invalid arguments for tool 'offer'; fix these and call it again:\n- x: expected number}"
    )
