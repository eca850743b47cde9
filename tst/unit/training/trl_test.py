"""The TRL factory: the classes TRL sees, the render check, the TRL version guard, pickling."""

import importlib.metadata
import inspect
import json
import logging
import pickle
import subprocess
import sys
from typing import Annotated

import pytest
import transformers.tokenization_utils_base as tokenization
from pydantic import Field
from transformers.utils import get_json_schema

from agent_env import (
    AgentEnv,
    Environment,
    LocalProvider,
    LocalSession,
    ToolArgumentError,
    ToolFailedError,
    tool,
)
from agent_env.inspection.probe import first_turn, trl_instance
from agent_env.schema import fingerprint
from agent_env.tools import Tool
from agent_env.training import EnvironmentFactory, SchemaTool, TRLEnvironment, _render_check, fidelity
from agent_env.training._render_check import (
    RenderCheckError,
    discovered_tools,
    expected_rendering,
    render_tools,
    tojson,
)
from agent_env.training.rendering import render
from agent_env.training.templates import ChatTemplate, load_template
from agent_env.training.trl import environment_class, own_paragraph
from testbed.toy import ToyDesk
from tst.data.families import Notes
from tst.data.vague import Vague, VagueServer

CURVE = {"hours": "HE07", "points": [[0, 10], [50, 30]]}


@pytest.fixture(autouse=True)
def fresh_render_check(monkeypatch):
    monkeypatch.setattr(_render_check, "_checked", set())
    fidelity.clear_cache()


@pytest.fixture
def factory():
    return EnvironmentFactory(LocalProvider(ToyDesk))


def test_each_instance_has_a_schema_tool_over_every_tool_end_turn_included(factory):
    environment = factory()
    tools = {tool.__name__: tool for tool in discovered_tools(environment)}
    assert list(tools) == sorted(ToyDesk.tools)  # TRL lists functions on the class, alphabetically
    assert all(isinstance(tools[name], SchemaTool) for name in tools)


def test_the_prompt_shows_every_published_schema(factory):
    environment = factory()
    prompt = render_tools(discovered_tools(environment), "qwen3")
    for published in ToyDesk.tools.published:
        assert tojson(expected_rendering(published)) in prompt
    # end_turn's method schema could not say that it takes no arguments; its SchemaTool does.
    assert ToyDesk.tools["end_turn"].input_schema["additionalProperties"] is False
    assert "additionalProperties" not in get_json_schema(type(environment).end_turn)["function"]["parameters"]


def test_the_class_methods_still_render_their_method_schemas(factory):
    environment_type = type(factory())
    schema = get_json_schema(environment_type.submit_offers)["function"]
    assert schema["parameters"]["properties"]["curves"] == {
        "type": "array",
        "description": "Energy offer curves, one per hour set.",
    }
    assert schema["parameters"]["required"] == ["curves"]
    assert (
        get_json_schema(environment_type.write_note)["function"]["parameters"]["properties"]["text"]["type"]
        == "string"
    )


def test_if_trl_took_tools_from_the_class_the_method_schemas_would_come_back(factory):
    # The fallback, pinned: rendering the class's functions gives TRL's lossy method schemas, not an error.
    environment_type = type(factory())
    names = [
        name
        for name, _ in inspect.getmembers(environment_type, inspect.isfunction)
        if not name.startswith("_")
    ]
    from_class = [getattr(environment_type, name) for name in names if name not in ("reset", "get_reward")]
    prompt = render_tools(from_class, "qwen3")
    assert '"curves": {"type": "array", "description": "Energy offer curves, one per hour set."}' in prompt
    assert tojson(expected_rendering(ToyDesk.tools["submit_offers"].published())) not in prompt


def test_a_call_through_a_schema_tool_is_validated_and_leaves_state_unchanged_when_bad(factory):
    environment = factory()
    environment.reset(prompt=[], task="t")
    assert environment.submit_offers(curves=[CURVE]) == "accepted 1 curves and 0 AS offers"
    with pytest.raises(ToolArgumentError, match=r"curves\[0\].points\[1\]\[0\]: expected number"):
        environment.submit_offers(curves=[{"hours": "HE07", "points": [[0, 1], ["a", 2]]}])
    assert len(environment._session.environment.book) == 1
    assert environment.end_turn() == "Turn ended."
    assert environment.get_reward() == 0.1


def test_a_transformers_that_renders_tools_differently_stops_the_factory_naming_them(factory, monkeypatch):
    original = tokenization.render_jinja_template

    def lossy(
        conversations, tools=None, **kwargs
    ):  # as if transformers flattened every dict tool's parameters
        flattened = [
            {"type": "function", "function": {**t["function"], "parameters": {"type": "object"}}}
            if isinstance(t, dict) and t["function"]["parameters"].get("properties")
            else t
            for t in tools or []
        ]
        return original(conversations, tools=flattened, **kwargs)

    monkeypatch.setattr(tokenization, "render_jinja_template", lossy)
    with pytest.raises(RenderCheckError) as raised:
        factory()
    message = str(raised.value)
    submit, note = (
        line for line in message.splitlines() if line.startswith(("- submit_offers", "- write_note"))
    )
    assert submit.startswith("- submit_offers: loses") and "curves.items" in submit
    assert note.startswith("- write_note: loses") and "text.maxLength" in note
    assert "battery_status" not in message and "end_turn" not in message


@pytest.mark.parametrize("version", ["1.14.0", "1.15.0"])
def test_a_trl_older_than_the_matrix_tests_builds_with_one_warning_that_it_is_untested(
    factory, monkeypatch, caplog, version
):
    # TRL <= 1.14 lists the instance's bound methods, which bound SchemaTools are: it is no longer refused.
    real_version = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: version if name == "trl" else real_version(name)
    )
    monkeypatch.setattr("agent_env.training.trl._warned_untested", set())
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        factory()
        factory()
    warnings = [
        record.getMessage() for record in caplog.records if "tested with TRL >= 1.16" in record.getMessage()
    ]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"TRL {version} finds agent_env's tools")
    assert "Triton" in warnings[0] and "pip install 'trl>=1.16'" in warnings[0]


def test_the_render_check_runs_once_per_process_tool_set_and_template(factory, monkeypatch):
    calls = []
    real = _render_check.discovered_tools
    monkeypatch.setattr(_render_check, "discovered_tools", lambda *a: calls.append(1) or real(*a))
    factory()
    factory()
    EnvironmentFactory(LocalProvider(ToyDesk))()
    assert len(calls) == 1
    EnvironmentFactory(LocalProvider(ToyDesk), chat_template="llama3_1")()
    assert len(calls) == 2


def test_the_factory_survives_a_pickle_round_trip_and_still_works(factory):
    factory()
    restored = pickle.loads(pickle.dumps(factory))
    environment = restored()
    environment.reset()
    assert environment.submit_offers(curves=[CURVE]).startswith("accepted")
    assert isinstance(environment.submit_offers, SchemaTool)


def test_classes_are_fresh_per_tool_set_and_the_base_is_never_mutated(factory):
    class Other(Environment):
        def reset(self, **row):
            return None

        def reward(self):
            return 0.0

        @tool
        def ping(self) -> str:
            """Ping."""
            return "pong"

    toy_type, other_type = type(factory()), type(EnvironmentFactory(LocalProvider(Other))())
    assert toy_type is not other_type and toy_type.__name__ == "ToyDesk" and other_type.__name__ == "Other"
    assert not hasattr(toy_type, "ping") and not hasattr(other_type, "submit_offers")
    assert [name for name in vars(TRLEnvironment) if not name.startswith("_")] == ["reset", "get_reward"]
    assert type(EnvironmentFactory(LocalProvider(ToyDesk))()) is toy_type


def test_no_property_on_the_trl_facing_class(factory):
    environment_type = type(factory())
    for klass in environment_type.__mro__:
        assert not [name for name, value in vars(klass).items() if isinstance(value, property)], klass


@pytest.mark.parametrize(
    "template", ["qwen3", "llama3_1", "gemma4", "gptoss", "glm4moe", "nemotron_3_nano", "lfm2", "phi3_5"]
)
def test_the_reset_observation_reads_as_its_own_paragraph_in_the_first_prompt(template):
    env = AgentEnv.local(ToyDesk)
    with trl_instance(env) as instance:
        conversation = first_turn(env, instance)  # the prompt with reset's observation appended, as TRL does
        prompt = render(conversation, None, template)
    assert conversation[-1]["content"] == "Trade.\n\nTask train-0: submit offers, then end your turn."
    assert "Trade.\n\nTask train-0: submit offers, then end your turn." in prompt


@pytest.mark.parametrize(
    ("prompt", "observation", "appended"),
    [
        ([{"role": "user", "content": "Trade."}], "Go.", "\n\nGo."),
        ([{"role": "user", "content": "Trade.\n"}], "Go.", "\nGo."),  # breaks already there count
        ([{"role": "user", "content": "Trade.\n\n"}], "Go.", "Go."),
        ([{"role": "user", "content": "Trade."}], "\n\nGo.", "\n\nGo."),
        (
            [{"role": "user", "content": [{"type": "text", "text": "Trade."}]}],
            "Go.",
            "\n\nGo.",
        ),  # one more part
        ([{"role": "user", "content": ""}], "Go.", "Go."),  # TRL's stand-in for a row without a prompt
        (None, "Go.", "Go."),
        ([{"role": "user", "content": "Trade."}], None, None),
        ([{"role": "user", "content": "Trade."}], "", ""),
    ],
)
def test_an_observation_is_set_apart_from_the_prompt_only_where_text_comes_before_it(
    prompt, observation, appended
):
    row = {"task": "t1"} if prompt is None else {"prompt": prompt, "task": "t1"}
    assert own_paragraph(observation, row) == appended


def test_a_tool_that_raises_reads_as_the_one_text_in_trls_error_dict(factory):
    environment = factory()
    environment.reset(down=["battery"])
    with pytest.raises(ToolFailedError) as raised:
        environment.battery_status()
    # TRL's tool loop: content = str({"error": str(error)}); the same text served and on Ray (tst/contract)
    assert str({"error": str(raised.value)}) == (
        "{'error': tool 'battery_status' failed: ConnectionError: the battery's telemetry is down}"
    )


def test_instances_have_their_own_episode(factory):
    first, second = factory(), factory()
    first.reset()
    second.reset()
    first.submit_offers(curves=[CURVE])
    assert first.get_reward() == 0.1 and second.get_reward() == 0.0


@pytest.mark.parametrize(
    "template", ["qwen3", "qwen2_5", "llama3_1", "llama3_2", "glm4moe", "lfm2", "muse_glimmer"]
)
def test_templates_that_write_the_schema_unchanged_pass_the_render_check(template):
    environment = EnvironmentFactory(LocalProvider(ToyDesk), chat_template=template)()
    assert isinstance(environment.submit_offers, SchemaTool)


@pytest.mark.parametrize("template", ["gemma4", "gemma4_v2", "gemma4_v5", "gptoss", "nemotron_3_nano"])
def test_templates_that_rewrite_the_schema_build_with_schema_tools_that_lose_nothing(template, caplog):
    with caplog.at_level("INFO", logger="agent_env"):
        environment = EnvironmentFactory(LocalProvider(ToyDesk), chat_template=template)()
    assert isinstance(environment.submit_offers, SchemaTool)
    assert f"checked under {template}: lossless" in caplog.text
    environment.reset()
    with pytest.raises(ToolArgumentError, match=r"curves\[0\]\.points: \[\] has less than 2 items"):
        environment.submit_offers(curves=[{"hours": "HE07", "points": []}])  # held to the published schema


def test_a_template_that_loses_keywords_even_lowered_is_refused_naming_tool_and_keyword(tmp_path):
    template = tmp_path / "no_bounds.jinja"  # writes each property's name and type, nothing else
    template.write_text(
        "{% for t in tools %}{{ t.function.name }}: {{ t.function.description }}"
        "{% for n, p in t.function.parameters.properties.items() %} {{ n }}={{ p.type }}{% endfor %}\n"
        "{% endfor %}{{ messages[0].content }}"
    )
    with pytest.raises(RenderCheckError) as raised:
        EnvironmentFactory(LocalProvider(ToyDesk), chat_template=str(template))()
    message = str(raised.value)
    assert f"under chat template '{template}'" in message
    lines = {line.split(":")[0]: line for line in message.splitlines() if line.startswith("- ")}
    assert "curves.items" in lines["- submit_offers"] and "as_offers.anyOf" in lines["- submit_offers"]
    assert "text.maxLength" in lines["- write_note"]
    # A tool without arguments loses only that it refuses them.
    assert lines["- battery_status"] == lines["- end_turn"].replace("end_turn", "battery_status")
    assert lines["- end_turn"] == "- end_turn: loses additionalProperties"


@pytest.mark.parametrize("template", ["gemma4_v2", "gemma4_v3"])
def test_gemma4_revisions_that_drop_keyword_named_parameters_are_refused_with_the_fix_alone(template):
    with pytest.raises(RenderCheckError) as raised:
        EnvironmentFactory(LocalProvider(Notes), chat_template=template)()
    # issue 20, item 18: one line, the one naming the fix; not also "loses type.type, type.description"
    assert [line for line in str(raised.value).splitlines() if line.startswith("- ")] == [
        "- note: parameter 'type' is left out of the prompt by this Gemma 4 template revision, which drops "
        "parameters named description, type, properties, required, nullable; train with a revision that keeps them "
        "(TRL's gemma4, gemma4_v4 or gemma4_v5), or rename it (a tool of an MCP server, whose names are its own: "
        "leave the tool out with tools=[...])"
    ]
    EnvironmentFactory(LocalProvider(Notes), chat_template="gemma4_v5")()  # a revision that keeps them


def test_a_template_without_a_tool_block_is_refused_for_every_tool():
    with pytest.raises(RuntimeError) as raised:
        EnvironmentFactory(LocalProvider(ToyDesk), chat_template="phi3")()
    assert all(name in str(raised.value) for name in ToyDesk.tools)


def test_chat_template_takes_a_tokenizer_and_the_factory_pickles_it_as_its_template():
    from transformers import AutoTokenizer

    from tst.support import qwen3_tokenizer_folder

    tokenizer = AutoTokenizer.from_pretrained(qwen3_tokenizer_folder())
    tokenizer.chat_template = load_template("gemma4")
    factory = EnvironmentFactory(LocalProvider(ToyDesk), chat_template=tokenizer)
    shown = dict(factory().submit_offers)["function"]["parameters"]
    assert "anyOf" not in json.dumps(shown)  # lowered for the tokenizer's (Gemma 4) template
    restored = pickle.loads(pickle.dumps(factory))
    assert (
        isinstance(restored.chat_template, ChatTemplate) and restored.chat_template.processing_class is None
    )
    assert restored.chat_template.text == tokenizer.chat_template
    assert dict(restored().submit_offers)["function"]["parameters"] == shown


def test_outside_a_trainer_with_trl_loaded_the_default_check_warns_once_naming_how_to_pass_the_template(
    monkeypatch, caplog
):
    monkeypatch.setitem(sys.modules, "trl", sys.modules.get("trl") or object())
    factory = EnvironmentFactory(LocalProvider(ToyDesk))
    with caplog.at_level("WARNING", logger="agent_env"):
        factory()
        factory()
    warnings = [record.getMessage() for record in caplog.records if "the default" in record.getMessage()]
    assert len(warnings) == 1
    assert "under chat template 'qwen3', the default" in warnings[0]
    assert "chat_template=tokenizer" in warnings[0]
    with caplog.at_level("WARNING", logger="agent_env"):
        EnvironmentFactory(LocalProvider(ToyDesk), chat_template="qwen3")()  # told: no warning
    assert len([r for r in caplog.records if "the default" in r.getMessage()]) == 1


def test_without_trl_loaded_the_default_check_does_not_warn_about_the_template(monkeypatch, caplog):
    monkeypatch.delitem(sys.modules, "trl", raising=False)
    with caplog.at_level("WARNING", logger="agent_env"):
        EnvironmentFactory(LocalProvider(ToyDesk))()
    assert not [record for record in caplog.records if "the default" in record.getMessage()]


PLAIN_SCRIPT = """
from agent_env import LocalProvider
from agent_env.training import EnvironmentFactory
from testbed.toy import ToyDesk

factory = EnvironmentFactory(LocalProvider(ToyDesk), chat_template={template!r})
factory()
factory()
"""


def test_a_plain_script_shows_once_the_tool_set_and_the_lowering_that_changed_the_prompt():
    # logging left unconfigured, as most training scripts leave it: Python shows WARNING and above
    script = PLAIN_SCRIPT.format(template="gemma4")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    tool_set = fingerprint(ToyDesk.tools.published)
    assert result.stderr.splitlines() == [
        f"agent_env: ToyDesk, 4 tools, tool set {tool_set}, checked under gemma4: lossless (gemma4 lowering: what "
        "the template drops is restated in the tools' descriptions)"
    ]


def test_the_factory_logs_once_what_the_tools_leave_the_model_to_guess(caplog):
    factory = EnvironmentFactory(LocalProvider(Vague), chat_template="qwen3")
    with caplog.at_level("WARNING", logger="agent_env"):
        factory()
        factory()
        EnvironmentFactory(LocalProvider(ToyDesk), chat_template="qwen3")()  # says everything: no such line
    noted = [record for record in caplog.records if "leave the model to guess" in record.getMessage()]
    assert [record.levelname for record in noted] == ["WARNING"]
    assert noted[0].getMessage() == (
        "agent_env: Vague's tools leave the model to guess (agent-env check lists the same): lend: no description, "
        "'isbn' undescribed, 'options' undescribed, 'options' is an open object; renew: 'isbn' undescribed, 'loan' undescribed, 'loan.extras' is an "
        "open object. "
        "Describe each tool and parameter in its docstring's Args:, and type an open object with a pydantic model."
    )


def test_the_factory_says_a_servers_tools_gaps_are_the_servers_without_docstring_advice(caplog):
    with caplog.at_level("WARNING", logger="agent_env"):
        EnvironmentFactory(LocalProvider(VagueServer), chat_template="qwen3")()
    noted = [
        record.getMessage() for record in caplog.records if "leave the model to guess" in record.getMessage()
    ]
    assert noted == [
        "agent_env: VagueServer's tools leave the model to guess (agent-env check lists the same): lookup: no "
        "description, 'q' undescribed. The server publishes none of it: its schema lacks `description` there, or an "
        "open object's keys; no docstring here can add them."
    ]


class Routes(Environment):
    def reset(self, **row):
        return "Route something."

    def reward(self):
        return 0.0

    @tool
    def route(self, from_: Annotated[str, Field(alias="from")], to: str) -> str:
        """Route a trip.

        Args:
            from_: Where from.
            to: Where to.
        """
        return f"{from_} -> {to}"


def test_a_property_that_is_no_python_name_is_shown_and_taken_by_the_factory():
    environment = EnvironmentFactory(LocalProvider(Routes))()  # the render check included
    environment.reset()
    assert environment.route(**{"from": "OSL", "to": "BGO"}) == "OSL -> BGO"
    assert "from" in Routes.tools["route"].input_schema["required"]
    with pytest.raises(ToolArgumentError, match="missing required property 'from'"):
        environment.route(to="BGO")
    # The fallback method schema (what a TRL that took tools from the class would show) leaves out what no
    # Python parameter can be called, and the method still takes it.
    method = type(environment).route
    assert list(get_json_schema(method)["function"]["parameters"]["properties"]) == ["to"]


class Receivers(Environment):
    """A listed tool (as an MCP server's is) whose parameters are named as a method's receivers and a keyword."""

    def reset(self, **row):
        return None

    def reward(self):
        return 0.0


def _whoami(environment, /, **arguments):
    return json.dumps(arguments, sort_keys=True)


_RECEIVERS_SCHEMA = {
    "type": "object",
    "properties": {"self": {"type": "string"}, "cls": {"type": "string"}, "from": {"type": "string"}},
    "required": ["self"],
}
Receivers.tools = type(Receivers.tools)(
    [Tool.from_schema("whoami", "Say who.", _RECEIVERS_SCHEMA, _whoami), Environment.tools["end_turn"]]
)


def test_a_tool_with_parameters_named_self_cls_and_from_gets_a_method_that_takes_each_of_them():
    environment = EnvironmentFactory(LocalProvider(Receivers))()  # built, not refused
    environment.reset()
    told = {"self": "Ada", "cls": "person", "from": "London"}
    assert json.loads(environment.whoami(**told)) == told  # the SchemaTool TRL calls
    assert json.loads(type(environment).whoami(environment, **told)) == told  # the class's own method
    # Where both receiver names are the tool's own, the method's signature leaves `self` to **arguments, as `from`
    assert list(inspect.signature(type(environment).whoami).parameters) == ["self", "cls"]
    shown = get_json_schema(type(environment).whoami)
    assert list(shown["function"]["parameters"]["properties"]) == ["cls"]


class OwnSession(LocalSession):
    """A session of the user's own making that hands on whatever its environment's reset returned, unchecked."""

    def reset(self, **row):
        return self.environment.reset(**row) or 42


class Quiet(Environment):
    def reset(self, **row):
        return None

    def reward(self):
        return 1.0


def test_a_reset_observation_trl_cannot_take_is_the_environments_failure_scored_0_with_one_warning(caplog):
    published = Quiet.tools.published
    environment = environment_class("Quiet", published, fingerprint(published))(OwnSession(Quiet()))
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        assert (
            environment.reset(task_id="t9") is None
        )  # nothing for TRL to append, and no TypeError in its step
        assert environment.get_reward() == 0.0
    (warning,) = [record for record in caplog.records if record.name == "agent_env.training"]
    assert warning.getMessage().startswith(
        'agent_env: Quiet could not start the episode of task_id="t9" (in its OwnSession): its reset returned 42 '
        "(an int), not an observation TRL can append to the prompt"
    )


class Parts(Environment):
    """A reward with parts, counting how often it is computed."""

    rewards_read = 0

    def reset(self, **row):
        self.broken = row.get("broken")
        return None

    def reward(self):
        type(self).rewards_read += 1
        if self.broken == "reward":
            raise ValueError("no reward today")
        return 0.5

    def reward_breakdown(self):
        if self.broken == "breakdown":
            raise KeyError("parts")
        return {"parts": {"A": 1.0, "B": 0.5}}


@pytest.fixture
def parts():
    Parts.rewards_read = 0
    return EnvironmentFactory(LocalProvider(Parts))


def test_a_reward_function_reads_the_breakdown_and_the_episode_is_scored_once(parts):
    from agent_env.training import episode_score

    environment = parts()
    environment.reset(task_id="t1")
    score = episode_score(environment)  # a reward function of the user's, before TRL reads get_reward
    assert (score.reward, score.breakdown) == (0.5, {"parts": {"A": 1.0, "B": 0.5}})
    assert environment.get_reward() == 0.5 and episode_score(environment) == score
    assert Parts.rewards_read == 1
    environment.reset(task_id="t2")  # the next episode is scored afresh
    assert environment.get_reward() == 0.5 and Parts.rewards_read == 2


@pytest.mark.parametrize(
    ("broken", "why"), [("reward", "its reward() raised"), ("breakdown", "its reward_breakdown() raised")]
)
def test_an_episode_whose_reward_or_breakdown_raises_has_no_score_and_scores_0_with_one_warning(
    parts, caplog, broken, why
):
    from agent_env.training import episode_score

    environment = parts()
    environment.reset(task_id="t3", broken=broken)
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        assert episode_score(environment) is None
        assert environment.get_reward() == 0.0
    (warning,) = [record for record in caplog.records if record.name == "agent_env.training"]
    assert why in warning.getMessage() and 'task_id="t3"' in warning.getMessage()
