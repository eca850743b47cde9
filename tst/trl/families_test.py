"""Real GRPOTrainer steps under Gemma 4's and gpt-oss's own chat templates, with those families' special tokens.

No Gemma or gpt-oss weights (or tokenizers) can be downloaded here, so each tokenizer is the real Qwen3 vocabulary
with the family's special tokens added and TRL's shipped template set, and generation is scripted in the family's
own call syntax (for gpt-oss, both places the recipient can go). Everything else is real: the factory learns the
template from the trainer, TRL renders the prompt, parses the calls with its response template, calls the tools
and scores with the environment's reward.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.training.families import family_of
from agent_env.training.fidelity import tool_part
from agent_env.training.templates import from_processing_class
from testbed.toy import MALFORMED, VALID, ToyDesk
from tst.trl.conftest import Script, family_tokenizer, grpo_config


def gemma4_value(value: Any) -> str:
    """A value the way Gemma 4 writes call arguments: unquoted keys, strings between `<|"|>`."""
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>'
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{gemma4_value(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(gemma4_value(item) for item in value) + "]"
    return json.dumps(value)


def gemma4_call(arguments: dict[str, Any]) -> str:
    return f"<|tool_call>call:submit_offers{gemma4_value(arguments)}<tool_call|><|tool_response>"


def gptoss_channel_call(arguments: dict[str, Any]) -> str:  # harmony's form, what gpt-oss-20b writes
    return f"<|channel|>commentary to=functions.submit_offers <|constrain|>json<|message|>{json.dumps(arguments)}<|call|>"


def gptoss_role_call(arguments: dict[str, Any]) -> str:  # the form TRL's gpt-oss template renders
    return f" to=functions.submit_offers<|channel|>commentary json<|message|>{json.dumps(arguments)}<|call|>"


FAMILIES = {
    "gemma4": ("gemma4", gemma4_call, "response:submit_offers", "Done.<turn|>"),
    "gptoss-channel-form": ("gptoss", gptoss_channel_call, "functions.submit_offers to=assistant", None),
    "gptoss-role-form": ("gptoss", gptoss_role_call, "functions.submit_offers to=assistant", None),
}
GPTOSS_DONE = "<|channel|>final<|message|>Done.<|return|>"


def script_for(call: Callable[[dict[str, Any]], str], responded: str, done: str) -> Callable[[int, str], str]:
    def reply(index: int, prompt: str) -> str:
        if responded in prompt:
            return done
        return call(VALID if index % 2 == 0 else MALFORMED)

    return reply


@pytest.mark.parametrize("case", list(FAMILIES))
def test_a_grpo_step_under_the_familys_own_template_shows_lowered_schemas_and_reaches_the_environment(
    case, tmp_path
):
    from trl import GRPOTrainer

    from agent_env.inspection.grpo import tiny_qwen3

    template_name, call, responded, done = FAMILIES[case]
    tokenizer = family_tokenizer(template_name)
    env = AgentEnv.local(ToyDesk)  # no chat_template: the factory reads the trainer's
    trainer = GRPOTrainer(
        model=tiny_qwen3(tokenizer),
        processing_class=tokenizer,
        args=grpo_config(tmp_path),
        train_dataset=env.dataset("train"),
        environment_factory=env.factory,
    )
    script = Script(tokenizer, script_for(call, responded, done or GPTOSS_DONE))
    trainer._generate_single_turn = script
    trainer.train()

    template = from_processing_class(tokenizer)
    family = family_of(template.text)
    assert family is not None and family.name == template_name
    published = ToyDesk.tools["submit_offers"].published()
    lowered = family.lower(published)
    first_prompt = script.prompts[0]
    assert tool_part(template, lowered) in first_prompt  # the lowered schema is what the model reads
    said = first_prompt.lower()
    assert "2-10 items" in said and "at least 0" in said  # what the stock template drops, said in words

    books = [len(environment._session.environment.book) for environment in trainer.environments]
    assert books == [3, 0]  # the valid nested call reached its environment; the malformed one changed nothing
    assert trainer.environments[0]._session.environment.offers[0].product == "regup"
    logged = trainer.state.log_history[0]
    assert logged["rewards/ToyDesk/mean"] == pytest.approx(0.15)  # the environment's reward: (3/10 + 0) / 2
    assert logged["tools/call_frequency"] > 0
    malformed = next(text for text in script.prompts if "Invalid arguments" in text)
    assert "curves[0].points[1]: [100] has less than 2 items" in malformed  # the JSON path, as in process


def test_a_factory_checked_under_the_default_template_is_checked_again_under_the_trainers(tmp_path, caplog):
    from trl import GRPOTrainer

    from agent_env.inspection.grpo import tiny_qwen3

    env = AgentEnv.local(ToyDesk)
    script_instance = env.factory()  # a script builds it first: checked under qwen3, the default
    assert "lowered" not in json.dumps(dict(script_instance.submit_offers))
    tokenizer = family_tokenizer("gemma4")
    with caplog.at_level("INFO", logger="agent_env"):
        trainer = GRPOTrainer(
            model=tiny_qwen3(tokenizer),
            processing_class=tokenizer,
            args=grpo_config(tmp_path),
            train_dataset=env.dataset("train"),
            environment_factory=env.factory,
        )
    probe = trainer._environment_pool[None][0]
    shown = dict(probe.submit_offers)["function"]["parameters"]
    assert "anyOf" not in json.dumps(shown)  # the trainer's instance carries the Gemma 4 lowering
    assert any("GRPOTrainer's chat template" in record.getMessage() for record in caplog.records)
    assert any("gemma4 lowering" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("template_name", ["gemma4", "gptoss"])
def test_asyncgrpos_rollout_worker_checks_under_its_own_template_from_a_pickled_factory(template_name):
    from tst.trl.conftest import async_rollout_loop

    tokenizer = family_tokenizer(template_name)
    loop = async_rollout_loop(AgentEnv.local(ToyDesk), tokenizer)  # no chat_template given: qwen3 otherwise
    tools = {tool.__name__: tool for tool in loop._env_tools[None]}
    shown = dict(tools["submit_offers"])["function"]
    family = family_of(from_processing_class(tokenizer).text)
    assert family is not None
    assert shown["parameters"] == family.lower(ToyDesk.tools["submit_offers"].published())["inputSchema"]
    if template_name == "gptoss":  # AsyncGRPO set TRL's gpt-oss template before calling the factory: replaced
        assert "constrain" in tokenizer.response_template["fields"]["tool_calls"]["open_pattern"]


GPTOSS_FORMS = {
    "harmony: recipient after the channel, constrained": gptoss_channel_call,
    "recipient after the channel, no constrain": lambda a: gptoss_channel_call(a).replace(
        " <|constrain|>", " "
    ),
    "HF template: recipient before the channel": gptoss_role_call,
    "recipient before the channel, constrained": lambda a: gptoss_role_call(a).replace(
        " json", " <|constrain|>json"
    ),
    "after an analysis message": lambda a: (
        "<|channel|>analysis<|message|>Plan.<|end|><|start|>assistant" + gptoss_channel_call(a)
    ),
}


@pytest.mark.parametrize("form", list(GPTOSS_FORMS))
def test_the_gptoss_response_template_reads_every_call_form_with_nested_arguments(form):
    from transformers.utils.chat_parsing.response_parser import parse_response
    from trl.chat_template_utils import gptoss_template

    from agent_env.training.families.gptoss import response_template

    text = GPTOSS_FORMS[form](VALID)
    prefix = "<|start|>user<|message|>Trade.<|end|><|start|>assistant"
    parsed = parse_response(text, response_template(gptoss_template), prefix=prefix)
    assert parsed["tool_calls"] == [
        {"type": "function", "function": {"name": "submit_offers", "arguments": VALID}}
    ]
    if form.startswith(
        ("harmony", "recipient after")
    ):  # the gap this closes: TRL's own template misses these
        assert "tool_calls" not in parse_response(text, gptoss_template, prefix=prefix)


def test_a_template_trl_cannot_parse_is_refused_before_the_trainer_starts_naming_the_fix(tmp_path):
    from trl import GRPOTrainer
    from trl.chat_template_utils import gemma4_template

    from agent_env.inspection.grpo import tiny_qwen3
    from agent_env.training._parsing import ToolCallParsingError

    tokenizer = family_tokenizer(
        "diffusion_gemma"
    )  # renders like Gemma 4; TRL ships no response template for it
    env = AgentEnv.local(ToyDesk)

    def trainer() -> Any:
        return GRPOTrainer(
            model=tiny_qwen3(tokenizer),
            processing_class=tokenizer,
            args=grpo_config(tmp_path),
            train_dataset=env.dataset("train"),
            environment_factory=env.factory,
        )

    with pytest.raises(
        ToolCallParsingError, match=r"TRL has no response template .* `tokenizer\.response_template`"
    ):
        trainer()
    tokenizer.response_template = gemma4_template  # the fix the message names
    assert trainer()._env_tools[None]


def test_the_documented_one_liner_gives_a_tokenizer_the_response_template_that_reads_every_form():
    from transformers.utils.chat_parsing.response_parser import parse_response

    from agent_env.training import gptoss_response_template

    tokenizer = family_tokenizer("gptoss")
    tokenizer.response_template = gptoss_response_template()
    text = gptoss_channel_call(VALID)
    prefix = "<|start|>user<|message|>Trade.<|end|><|start|>assistant"
    assert (
        parse_response(text, tokenizer.response_template, prefix=prefix)["tool_calls"][0]["function"][
            "arguments"
        ]
        == VALID
    )


def test_every_trainer_a_factory_serves_reads_every_gptoss_call_form_not_only_the_first(tmp_path, caplog):
    from transformers.utils.chat_parsing.response_parser import parse_response
    from trl import GRPOTrainer

    from agent_env.inspection.grpo import tiny_qwen3

    env = AgentEnv.local(ToyDesk)
    prefix = "<|start|>user<|message|>Trade.<|end|><|start|>assistant"
    for run in range(2):  # a sweep, or a notebook cell run again: one factory, a fresh tokenizer each time
        tokenizer = family_tokenizer("gptoss")
        with caplog.at_level("WARNING", logger="agent_env"):  # what Python shows with logging unconfigured
            GRPOTrainer(
                model=tiny_qwen3(tokenizer),
                processing_class=tokenizer,
                args=grpo_config(tmp_path / str(run)),
                train_dataset=env.dataset("train"),
                environment_factory=env.factory,
            )
        parsed = parse_response(gptoss_channel_call(VALID), tokenizer.response_template, prefix=prefix)
        assert parsed.get("tool_calls"), f"trainer {run + 1} misses harmony-form calls"
    patched = [
        record for record in caplog.records if "response template now reads tool calls" in record.getMessage()
    ]
    assert len(patched) == 2  # said once per tokenizer it changed, where a plain script shows it


def test_the_templates_agent_env_check_says_trl_parses_are_the_ones_the_installed_trl_parses():
    from agent_env.training._parsing import TRL_PARSES, _trl_knows
    from agent_env.training.templates import load_template, shipped_template_names

    parsed = {
        name
        for name in shipped_template_names()
        if _trl_knows(SimpleNamespace(chat_template=load_template(name)))
    }
    assert parsed == TRL_PARSES
