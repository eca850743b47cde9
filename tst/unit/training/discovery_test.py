"""Both ways TRL has found an environment's tools find the factory's SchemaTools, driven here line for line as TRL's
code runs them.

- TRL >= 1.15 lists the functions of the instance's class and fetches each from the instance (TRL 1.16.0,
  `trl/trainer/grpo_trainer.py`, below).
- TRL <= 1.14, and TRL's main as of July 2026 (huggingface/trl f2cd577, 1.10.0.dev0), list the instance's bound
  methods (TRL 1.14.2 and f2cd577, `trl/trainer/grpo_trainer.py`, below).

Each rule is run twice, as GRPOTrainer runs it: on the probe instance at `__init__` (the tools rendered into every
prompt) and on each pooled instance per batch (the tool dicts TRL calls, split sync/async).
"""

from __future__ import annotations

import inspect
import pickle
import sys

import pytest

from agent_env import AgentEnv, ToolArgumentError
from agent_env.training import SchemaTool, _render_check, fidelity
from agent_env.training._render_check import RenderCheckError, render_check, render_tools, tojson
from agent_env.training.fidelity import entry
from agent_env.training.templates import resolve_template
from testbed.toy import ToyDesk

CURVE = {"hours": "HE07", "points": [[0, 10], [50, 30]]}


def probe_116(instance):
    """TRL 1.16.0 `grpo_trainer.py` lines 689-697 (`GRPOTrainer.__init__`), as written there:

    methods = []
    # List on the class: getmembers on the instance evaluates properties
    for member_name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction):
        if member_name == "reset":
            has_reset = True
        elif member_name == "get_reward":
            has_reward = True
        elif not member_name.startswith("_"):
            methods.append(getattr(instance, member_name))
    """
    has_reset = has_reward = False
    methods = []
    for member_name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction):
        if member_name == "reset":
            has_reset = True
        elif member_name == "get_reward":
            has_reward = True
        elif not member_name.startswith("_"):
            methods.append(getattr(instance, member_name))
    return has_reset, has_reward, methods


def rollout_116(environment):
    """TRL 1.16.0 `grpo_trainer.py` lines 2371-2381 (`_generate_and_score_completions`):

    methods = [
        getattr(environment, member_name)
        for member_name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if member_name not in ("reset", "get_reward") and not member_name.startswith("_")
    ]
    sync_tool_dict, async_tool_dict = {}, {}
    for tool in self._standalone_tools + methods:
        if inspect.iscoroutinefunction(tool):
            async_tool_dict[tool.__name__] = tool
        else:
            sync_tool_dict[tool.__name__] = tool
    """
    methods = [
        getattr(environment, member_name)
        for member_name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if member_name not in ("reset", "get_reward") and not member_name.startswith("_")
    ]
    return split(methods)


def probe_bound_methods(instance):
    """TRL 1.14.2 `grpo_trainer.py` lines 671-678, and huggingface/trl f2cd577 lines 644-651 (`__init__`):

    methods = []
    for member_name, member in inspect.getmembers(instance, predicate=inspect.ismethod):
        if member_name == "reset":
            has_reset = True
        elif member_name == "get_reward":
            has_reward = True
        elif not member_name.startswith("_"):
            methods.append(member)
    """
    has_reset = has_reward = False
    methods = []
    for member_name, member in inspect.getmembers(instance, predicate=inspect.ismethod):
        if member_name == "reset":
            has_reset = True
        elif member_name == "get_reward":
            has_reward = True
        elif not member_name.startswith("_"):
            methods.append(member)
    return has_reset, has_reward, methods


def rollout_bound_methods(environment):
    """TRL 1.14.2 `grpo_trainer.py` lines 2433-2443, and f2cd577 lines 2306-2316:

    methods = [
        member
        for member_name, member in inspect.getmembers(self.environments[i], predicate=inspect.ismethod)
        if member_name not in ("reset", "get_reward") and not member_name.startswith("_")
    ]
    sync_tool_dict, async_tool_dict = {}, {}
    for tool in self._standalone_tools + methods:
        if inspect.iscoroutinefunction(tool):
            async_tool_dict[tool.__name__] = tool
        else:
            sync_tool_dict[tool.__name__] = tool
    """
    methods = [
        member
        for member_name, member in inspect.getmembers(environment, predicate=inspect.ismethod)
        if member_name not in ("reset", "get_reward") and not member_name.startswith("_")
    ]
    return split(methods)


def split(methods):
    sync_tool_dict, async_tool_dict = {}, {}
    for tool in methods:
        if inspect.iscoroutinefunction(tool):
            async_tool_dict[tool.__name__] = tool
        else:
            sync_tool_dict[tool.__name__] = tool
    return sync_tool_dict, async_tool_dict


RULES = {
    "trl-1.16": (probe_116, rollout_116),
    "trl-1.14-and-july-main": (probe_bound_methods, rollout_bound_methods),
}


@pytest.fixture(autouse=True)
def fresh_render_check(monkeypatch):
    monkeypatch.setattr(_render_check, "_checked", set())
    fidelity.clear_cache()


@pytest.fixture
def env():
    environment = AgentEnv.local(ToyDesk)
    yield environment
    environment.close()


@pytest.mark.parametrize("rule", list(RULES))
def test_each_rule_finds_every_schema_tool_and_the_prompt_shows_every_published_schema(env, rule):
    probe, _ = RULES[rule]
    instance = env.factory()
    has_reset, has_reward, methods = probe(instance)
    assert has_reset and has_reward
    assert [tool.__name__ for tool in methods] == sorted(ToyDesk.tools)  # end_turn included
    assert all(type(tool) is SchemaTool or type(tool).__name__ == "AsyncSchemaTool" for tool in methods)
    assert all(tool is getattr(instance, tool.__name__) for tool in methods)
    prompt = render_tools(
        methods, "qwen3"
    )  # transformers' apply_chat_template, as TRL renders the probe's tools
    for published in ToyDesk.tools.published:
        assert tojson(entry(published)) in prompt


@pytest.mark.parametrize("rule", list(RULES))
def test_each_rule_calls_the_schema_tools_which_validate_and_reach_the_episode(env, rule):
    _, rollout = RULES[rule]
    environment = env.factory()
    environment.reset(prompt=[], task="t")
    sync_tool_dict, async_tool_dict = rollout(environment)
    # write_note is an async tool: on 3.11 TRL calls it synchronously, on 3.12+ it awaits it (the subprocess test
    # in tools_test.py runs that side).
    assert ("write_note" in async_tool_dict) == (sys.version_info >= (3, 12))
    assert sync_tool_dict["submit_offers"](curves=[CURVE]) == "accepted 1 curves and 0 AS offers"
    with pytest.raises(ToolArgumentError, match=r"points\[1\]\[0\]: expected number"):
        sync_tool_dict["submit_offers"](curves=[{"hours": "HE07", "points": [[0, 1], ["a", 2]]}])
    assert len(environment._session.environment.book) == 1  # the refused call changed nothing
    if sys.version_info < (3, 12):
        assert sync_tool_dict["write_note"](text="hi") == "1 notes"
    assert sync_tool_dict["end_turn"]() == "Turn ended."
    assert environment.get_reward() == 0.1


def test_the_quoted_rule_is_the_one_the_installed_trl_runs():
    # A TRL that changes how it finds tools fails here first, naming the line it no longer has.
    from trl.experimental.async_grpo import async_rollout_worker
    from trl.trainer import grpo_trainer

    class_rule = "inspect.getmembers(type(instance), predicate=inspect.isfunction)"
    rollout_rule = "inspect.getmembers(type(environment), predicate=inspect.isfunction)"
    for module in (grpo_trainer, async_rollout_worker):
        source = inspect.getsource(module)
        assert class_rule in source, f"{module.__name__} no longer lists tools with {class_rule}"
        assert rollout_rule in source, f"{module.__name__} no longer lists tools with {rollout_rule}"
        assert "predicate=inspect.ismethod" not in source


def test_a_bound_schema_tool_is_a_dict_to_transformers_and_a_bound_method_to_inspect(env):
    instance = env.factory()
    tool = instance.submit_offers
    assert isinstance(tool, dict) and type(tool) is SchemaTool
    assert inspect.ismethod(tool) and tool.__self__ is instance
    assert tool.__func__ is type(instance).__dict__["submit_offers"]
    assert not inspect.iscoroutinefunction(tool)
    assert list(inspect.signature(tool).parameters) == [
        "curves",
        "as_offers",
    ]  # the receiver bound, as a method's


def test_a_bound_schema_tool_refuses_to_pickle_naming_what_does(env):
    with pytest.raises(TypeError, match=r"pickle the factory \(env.factory\)"):
        pickle.dumps(env.factory().submit_offers)


def test_the_render_check_refuses_schema_tools_the_bound_method_rule_cannot_find(env):
    # What the factory built before: SchemaTools that are not bound, which TRL <= 1.14 drops without a word.
    from agent_env.training.templates import DEFAULT_TEMPLATE

    instance = env.factory()
    for published in ToyDesk.tools.published:
        setattr(instance, published["name"], SchemaTool(published, instance._session.call_tool))
    template = resolve_template(DEFAULT_TEMPLATE)
    plans = _render_check.plan_tools(template, ToyDesk.tools.published, None)
    with pytest.raises(RenderCheckError) as raised:
        render_check(instance, plans, "unbound", template, None)
    for name in ToyDesk.tools:
        assert f"- {name}: not found under TRL <= 1.14, which lists the instance's bound methods" in str(
            raised.value
        )
