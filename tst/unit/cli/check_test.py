"""`agent-env check` (`agent_env/training/fidelity.py`, `inspection/tokens.py`, `views.py`): the fidelity matrix and
the token table."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv
from agent_env.training.templates import shipped_template_names

SCRIPTED = Path(__file__).resolve().parents[3] / "testbed" / "scripted_mcp.py"

EXACT = [  # every template that wrote the published JSON before lowering existed, and still must
    "qwen2_5", "qwen3", "qwen3_5_nothink", "qwen3_5_think", "qwen3_6", "qwen3_8", "qwen3_instruct_2507", "qwen3_vl",
    "llama3_1", "llama3_2", "glm4moe", "lfm2", "lfm2_v2", "lfm2_2_5", "lfm2_2_5_v2", "lfm2_2_5_vl", "muse_glimmer",
]  # fmt: skip
NO_TOOL_BLOCK = ["cohere", "deepseekv3", "gemma", "gemma3", "llama3", "phi3", "qwen2_5_vl"]
LOWERED_GEMMA4 = ["gemma4", "gemma4_v2", "gemma4_v3", "gemma4_v4", "gemma4_v5", "diffusion_gemma"]


@pytest.fixture(scope="module")
def matrix(invoke) -> dict[str, Any]:
    result = invoke("check", "--json")
    assert result.exit_code == 0, result.output  # no template was named, so the matrix alone never fails
    return json.loads(result.stdout)


def by_template(matrix: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["template"]: entry for entry in matrix["templates"]}


def test_every_desk_tool_is_exact_under_qwen3(invoke):
    result = invoke("check", "--templates", "qwen3", "--json")
    assert result.exit_code == 0, result.output
    (qwen3,) = json.loads(result.stdout)["templates"]
    assert [tool["tool"] for tool in qwen3["tools"]] == [tool["name"] for tool in AgentEnv.local().tools()]
    assert {tool["status"] for tool in qwen3["tools"]} == {"exact"}


def test_the_matrix_covers_every_shipped_template_but_the_training_variants(matrix):
    names = [entry["template"] for entry in matrix["templates"]]
    assert names == shipped_template_names()
    assert not [name for name in names if name.endswith("_training")]


def test_the_matrix_tells_exact_lossless_and_silent_templates_apart(matrix):
    templates = by_template(matrix)
    for name in EXACT:
        assert templates[name]["verdict"] == "exact", name
        assert {tool["lowering"] for tool in templates[name]["tools"]} == {None}, name
    for name in NO_TOOL_BLOCK:
        assert templates[name]["verdict"] == "no tool block", name
        assert {tool["status"] for tool in templates[name]["tools"]} == {"no tool block"}
    nemotron = templates["nemotron_3_nano"]
    assert nemotron["verdict"] == "lossless"  # rewritten, every keyword kept, with no lowering
    assert {tool["lowering"] for tool in nemotron["tools"]} == {None}
    for name, family in [*((name, "gemma4") for name in LOWERED_GEMMA4), ("gptoss", "gptoss")]:
        assert templates[name]["verdict"] == "lossless", name
        assert templates[name]["shows_every_tool"], name
        assert {tool["lowering"] for tool in templates[name]["tools"]} == {family}, name


def test_the_matrix_says_which_templates_a_trainer_cannot_read_calls_under(matrix):
    unreadable = "TRL has no response template for it, so a trainer cannot read the model's calls"
    refused = {
        entry["template"]
        for entry in matrix["templates"]
        if any(refusal.startswith(unreadable) for refusal in entry["refusals"])
    }
    assert refused == {
        "diffusion_gemma",
        "lfm2",
        "muse_glimmer",
    }  # templates with a tool block TRL cannot parse


def test_naming_a_template_a_trainer_refuses_fails_and_says_why(invoke):
    result = invoke("check", "--templates", "gemma4,diffusion_gemma")
    assert result.exit_code == 1
    assert "a trainer's factory refuses diffusion_gemma" in result.stderr
    assert "unless the tokenizer carries a `response_template`" in " ".join(result.stdout.split())


def test_a_gemma4_revision_that_drops_keyword_named_parameters_is_refused_naming_the_fix(invoke):
    result = invoke("check", "tst.data.families:Notes", "--templates", "gemma4_v2,gemma4", "--json")
    assert result.exit_code == 1
    v2, gemma4 = json.loads(result.stdout)["templates"]
    assert v2["refusals"] == [
        "note: parameter 'type' is left out of the prompt by this Gemma 4 template revision, which drops parameters "
        "named description, type, properties, required, nullable; train with a revision that keeps them (TRL's "
        "gemma4, gemma4_v4 or gemma4_v5), or rename it (a tool of an MCP server, whose names are its own: leave the "
        "tool out with tools=[...])"
    ]
    assert gemma4["refusals"] == [] and gemma4["shows_every_tool"]


def test_stock_shows_what_gemma4_and_gptoss_drop_without_lowering(invoke):
    result = invoke("check", "--templates", "gemma4,gptoss", "--stock", "--json")
    assert result.exit_code == 1  # named templates that lose keywords
    gemma4, gptoss = (
        {tool["tool"]: tool for tool in entry["tools"]} for entry in json.loads(result.stdout)["templates"]
    )
    submit = gemma4["submit_dam_offers"]
    assert submit["status"] == "transformed" and submit["lowering"] is None
    assert {"curves[].hours.anyOf", "curves[].points.minItems", "as_offers[].mw.minimum"} <= set(
        submit["lost"]
    )
    assert gemma4["price_history"]["lost"][:3] == ["additionalProperties", "days.minimum", "days.maximum"]
    assert {"curves.items", "as_offers.items"} <= set(gptoss["submit_dam_offers"]["lost"])  # any[]
    assert "days.minimum" in gptoss["price_history"]["lost"]


def test_naming_a_template_that_loses_keywords_fails_and_says_what_is_lost(invoke):
    result = invoke("check", "--templates", "qwen3,gemma4", "--stock")
    assert result.exit_code == 1
    assert "agent-env check: not every tool reaches the model whole under gemma4" in result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("gemma4 ") and "transformed" in line and "anyOf" in line for line in lines)
    assert any(line.startswith("qwen3 ") and "exact" in line for line in lines)
    assert any(line.startswith("submit_dam_offers") and "curves[].hours.anyOf" in line for line in lines)
    lowered = invoke("check", "--templates", "qwen3,gemma4,gptoss")
    assert lowered.exit_code == 0, lowered.output
    assert any(
        line.startswith("gemma4 ") and "lossless (gemma4 lowering)" in line
        for line in lowered.stdout.splitlines()
    )


def test_a_template_that_raises_fails_every_tool(invoke, tmp_path):
    template = tmp_path / "broken.jinja"
    template.write_text("{{ raise_exception('this template takes no tools') }}")
    result = invoke("check", "--templates", str(template), "--json")
    assert result.exit_code == 1
    (broken,) = json.loads(result.stdout)["templates"]
    assert broken["verdict"] == "fails"
    assert "this template takes no tools" in broken["tools"][0]["error"]


def test_the_token_table_counts_what_plain_trl_shows_against_the_published_schemas(matrix, invoke):
    tokens = {row["tool"]: row for row in matrix["tokens"]["tools"]}
    assert matrix["tokens"]["template"] == "qwen3"
    assert tokens["submit_dam_offers"]["full"] > 3 * tokens["submit_dam_offers"]["lossy"]
    # TRL's rendering of end_turn adds its return type ("return": {"type": "string"}) and drops nothing else
    assert 0 < tokens["end_turn"]["lossy"] - tokens["end_turn"]["full"] <= 12
    assert (
        matrix["tokens"]["total"]["full"]
        > matrix["tokens"]["total"]["lossy"]
        > sum(row["lossy"] for row in tokens.values()) / 2
    )
    table = invoke("check", "--templates", "qwen3").stdout
    total = matrix["tokens"]["total"]
    assert any(
        line.startswith("total (the tool block)") and f"{total['full']}" in line
        for line in table.splitlines()
    )


def test_check_lists_per_tool_what_the_published_tools_leave_the_model_to_guess(invoke):
    result = invoke("check", "tst.data.vague:Vague", "--templates", "qwen3")
    assert result.exit_code == 0, result.output  # exact: what is published reaches the model whole
    lines = result.stdout.splitlines()
    assert (
        "What Vague's tools leave the model to guess (under every template: the verdicts above judge only what is published)"
        in lines
    )
    assert any(
        " ".join(line.replace("│", " ").split())
        == "lend no description, 'isbn' undescribed, 'options' undescribed, 'options' is an open object"
        for line in lines
    )
    assert any(line.startswith("renew ") and "'loan.extras' is an open object" in line for line in lines)
    listed = json.loads(invoke("check", "tst.data.vague:Vague", "--templates", "qwen3", "--json").stdout)
    assert listed["gaps"]["renew"] == [
        "'isbn' undescribed",
        "'loan' undescribed",
        "'loan.extras' is an open object",
    ]
    assert listed["gaps"]["end_turn"] == []


def test_check_says_a_servers_tools_gaps_are_the_servers_without_docstring_advice(invoke, tmp_path):
    listed = tmp_path / "tools.json"
    listed.write_text('["echo"]')  # its `text` and `times` have no description
    server = f"{sys.executable} {SCRIPTED} --tools-from {listed}"
    result = invoke("check", "--mcp", server, "--templates", "qwen3")
    assert result.exit_code == 0, result.output
    lines = [" ".join(line.replace("│", " ").split()) for line in result.stdout.splitlines()]
    assert "echo 'text' undescribed, 'times' undescribed" in lines
    assert "the server publishes none of it: its schema lacks `description` there" in " ".join(lines)
    assert "docstring's Args" not in result.stdout and "pydantic" not in result.stdout


def test_a_python_environment_is_told_to_describe_its_tools_in_docstrings(invoke):
    result = invoke("check", "tst.data.vague:Vague", "--templates", "qwen3")
    assert "docstring's Args:" in " ".join(result.stdout.split())
    assert "the server publishes none of it" not in " ".join(result.stdout.split())


def test_a_desk_that_says_everything_gets_no_gaps_section(invoke):
    result = invoke("check", "--templates", "qwen3")
    assert result.exit_code == 0, result.output
    assert "leave the model to guess" not in result.stdout


def test_the_qwen3_token_table_is_left_out_when_no_qwen3_template_was_asked(invoke):
    result = invoke("check", "--templates", "gemma4", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tokens"] is None
    shown = invoke("check", "--templates", "gemma4").stdout
    assert "tokens" not in shown.lower() and "total (the tool block)" not in shown
    assert "Prompt tokens under qwen3" in invoke("check", "--templates", "gemma4,qwen3").stdout


def test_the_docs_token_table_is_what_check_counts(matrix):
    tokens = {row["tool"]: row for row in matrix["tokens"]["tools"]}
    table = (Path(__file__).resolve().parents[3] / "docs" / "templates.md").read_text()
    total = matrix["tokens"]["total"]
    for row, counted in [
        ("`submit_dam_offers`", tokens["submit_dam_offers"]),
        ("`check_offers`", tokens["check_offers"]),
        ("the whole tool block (12 tools)", total),
    ]:
        assert f"| {row} | {counted['lossy']:,} | {counted['full']:,} |" in table
