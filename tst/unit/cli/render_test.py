"""`agent-env render` (`agent_env/inspection/probe.py`, `rendering.py`): the exact first prompt, full or lossy."""

from __future__ import annotations

import logging

from agent_env import AgentEnv, Environment, tool
from agent_env.envs.gridsim.desk import GridSimDesk
from agent_env.inspection.probe import PLAIN_TURN, first_turn, trl_instance
from agent_env.tools import END_TURN
from agent_env.training._render_check import expected_rendering, tojson
from tst.support import trl_refusal_of

CURVES_AS_PLAIN_TRL = '"curves": {"type": "array", "items": {"type": "object"}, "description": "Energy offer curves, one per hour set"}'
"""`curves` in the nearest form of submit_dam_offers that TRL accepts: its TypedDict items read as bare objects."""


def test_render_shows_the_first_row_with_its_reset_observation_and_every_published_schema(invoke):
    env = AgentEnv.local("gridsim-desk")
    result = invoke("render")
    assert result.exit_code == 0, result.output
    prompt = result.stdout
    assert prompt.startswith("<|im_start|>system\n# Tools")
    assert prompt.endswith("<|im_start|>assistant\n")
    first_row = env.provider.dataset_rows("train")[0]["prompt"][-1]["content"]
    observation = "You are the day-ahead trader for one 100 MW / 200 MWh battery"
    assert first_row + observation in prompt  # TRL appends the observation as is
    for published in env.tools():
        if published["name"] != END_TURN:
            assert tojson(expected_rendering(published)) in prompt
    assert CURVES_AS_PLAIN_TRL not in prompt
    assert "# GridSimDesk under qwen3: 12 tools as published schemas (SchemaTools)" in result.stderr


def test_render_lossy_shows_what_plain_trl_renders_and_names_the_tools_it_cannot(invoke):
    result = invoke("render", "--lossy")
    assert result.exit_code == 0, result.output
    assert CURVES_AS_PLAIN_TRL in result.stdout
    assert '"prefixItems"' not in result.stdout
    # withdraw_offers' Literal reaches TRL's own rendering as an enum, and the hour lists as arrays of integers
    assert '"enum": ["energy", "regup", "regdn", "rrspfr", "rrsffr", "ecrs", "nspin"]' in result.stdout
    assert '{"type": "array", "items": {"type": "integer"}}' in result.stdout
    lines = result.stderr.splitlines()
    assert (
        lines[0]
        == "# GridSimDesk under qwen3: 12 tools as a plain TRL environment renders them (the lossy path)"
    )
    assert [line.split(":")[0] for line in lines[1:]] == ["# check_offers", "# submit_dam_offers"]
    for line, name in zip(lines[1:], ["check_offers", "submit_dam_offers"], strict=True):
        refusal = trl_refusal_of(GridSimDesk, name)  # which error depends on transformers' version
        assert refusal is not None
        assert f"TRL cannot render it as written ({refusal.partition(': ')[0]}: " in line
        assert line.endswith("so a plain TRL environment could not even start; shown in its nearest form")


def test_llama_templates_get_their_bos_token(invoke):
    for template in ("llama3", "llama3_1"):
        result = invoke("render", "--template", template)
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith("<|begin_of_text|><|start_header_id|>")
    assert '"prefixItems": [' in result.stdout  # llama3_1 writes the schemas indented, unchanged


def test_a_template_file_renders(invoke, tmp_path):
    template = tmp_path / "plain.jinja"
    template.write_text(
        "{% for t in tools %}TOOL {{ t.function.name }}\n{% endfor %}{{ messages[0].content }}"
    )
    result = invoke("render", "testbed.toy:ToyDesk", "--template", str(template))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "TOOL battery_status", "TOOL end_turn", "TOOL submit_offers", "TOOL write_note",
        "Trade.", "", "Task train-0: submit offers, then end your turn.",  # the observation: its own paragraph
    ]  # fmt: skip


def test_an_unknown_template_is_refused_with_the_shipped_names(invoke):
    result = invoke("render", "--template", "no_such_template")
    assert result.exit_code == 2
    assert "no chat template named 'no_such_template'; TRL ships: " in result.stderr
    assert "qwen3" in result.stderr


class NoDataset(Environment):
    def reset(self, **row: object) -> str:
        return "ready"

    def reward(self) -> float:
        return 0.0

    @tool
    def ping(self) -> str:
        """Answer pong."""
        return "pong"


def test_an_environment_without_a_dataset_starts_from_a_plain_user_turn():
    env = AgentEnv.local(NoDataset)
    with trl_instance(env) as instance:
        assert first_turn(env, instance) == [{"role": "user", "content": PLAIN_TURN}]


def test_render_under_gemma4_shows_the_lowered_schemas_and_stock_shows_what_the_template_drops(invoke):
    lowered = invoke("render", "--template", "gemma4")
    assert lowered.exit_code == 0, lowered.output
    assert "published schemas lowered for gemma4 (SchemaTools)" in lowered.stderr
    # the points of a curve: bounds the template drops, said in the description it shows
    assert (
        'points:{description:<|"|>[mw, price] from max charge (-MW) to max discharge. 2-10 items.<|"|>'
        in (lowered.stdout)
    )
    stock = invoke("render", "--template", "gemma4", "--stock")
    assert stock.exit_code == 0, stock.output
    assert "2-10 items." not in stock.stdout and "as published schemas (SchemaTools)" in stock.stderr


def test_render_under_gptoss_says_the_nested_offer_shape_in_words(invoke):
    result = invoke("render", "--template", "gptoss")
    assert result.exit_code == 0, result.output
    assert (
        "// Energy offer curves, one per hour set. An array of at most 24 items, each an object {hours (required;"
        in (result.stdout)
    )
    assert "curves: any[]," in result.stdout  # the type the template writes; the words carry the rest


def test_an_environment_without_a_train_split_renders_its_first_splits_first_row_and_says_so(invoke, caplog):
    with caplog.at_level(logging.WARNING, logger="agent_env"):  # a warning: stderr under the command
        result = invoke("render", "tau2-mock")
    assert result.exit_code == 0, result.output
    assert caplog.messages == [
        "agent_env: no split was named and Tau2Mock has no 'train' split: its first split, 'base', is used instead"
    ]
    first = AgentEnv.local("tau2-mock").provider.dataset_rows("base")[0]["prompt"][-1]["content"]
    assert first.startswith("I am a team member who needs to create a task")
    assert f"<|im_start|>user\n{first}<|im_end|>" in result.stdout and PLAIN_TURN not in result.stdout


def test_a_split_named_that_the_environment_lacks_is_refused(invoke):
    result = invoke("render", "tau2-mock", "--split", "train")
    assert result.exit_code == 2
    assert (
        result.stderr.strip() == "agent-env render: τ²-bench mock has no split 'train'; its splits are base"
    )
    env = AgentEnv.local(NoDataset)
    with trl_instance(env) as instance:  # no dataset at all: a named split too starts from the plain turn
        assert first_turn(env, instance, "test") == [{"role": "user", "content": PLAIN_TURN}]
