"""docs/eval.md is true: the messages it quotes are the ones an evaluation gives the model, its
sample-size table is `pairs_needed`, and the options it shows exist."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_env import AgentEnv
from agent_env.cli import app
from agent_env.evaluation import ToolCall, pairs_needed, run_call

SECTION = (Path(__file__).parents[3] / "docs" / "eval.md").read_text()


def test_the_quoted_messages_are_what_the_model_reads():
    desk = AgentEnv.local("gridsim-desk")
    schemas = {tool["name"]: tool["inputSchema"] for tool in desk.tools()}
    cut = '{"curves": [{"hours": "HE19", "points": [[0, 40], [50, 41]]}'  # a reply cut off in its arguments
    with desk.open() as session:
        session.reset(**desk.provider.dataset_rows("test")[0])
        for call in (ToolCall("1", "function", "submit_dam_offers", cut), ToolCall("2", "function", "submit_offers", "{}"),
                     ToolCall("3", "custom", "submit_dam_offers", "{}")):  # fmt: skip
            text = asyncio.run(run_call(session, call, schemas)).content
            written = text.replace("\n", "\\n")  # the page writes the message's newline as \n
            assert f"`{written}`" in SECTION


def test_the_sample_size_table_is_pairs_needed():
    rows = re.findall(r"^\| (0\.\d\d) \| (.+) \|$", SECTION, flags=re.MULTILINE)
    header = re.search(r"^\| s \| (.+) \|$", SECTION, flags=re.MULTILINE)
    assert header is not None and len(rows) == 3
    differences = [float(cell.strip().removeprefix("D = ")) for cell in header.group(1).split("|")]
    for sd, cells in rows:
        shown = [int(cell.strip().replace(",", "")) for cell in cells.split("|")]
        assert shown == [pairs_needed(float(sd), difference) for difference in differences]


@pytest.mark.parametrize(
    "option",
    ["--episodes", "--concurrency", "--temperature", "--max-tokens", "--out", "--compare", "--plot", "--resume",
     "--max-turns", "--seed", "--api-key-env", "--base-url", "--model", "--timeout", "--max-retries", "--extra-body",
     "--call-timeout", "--episode-budget", "--capacity-wait"],
)  # fmt: skip
def test_the_options_it_names_exist(option):
    assert f"`{option}" in SECTION or f" {option}" in SECTION
    assert option in CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "240"}).stdout


def test_the_command_line_page_shows_every_command():
    section = (Path(__file__).parents[3] / "docs" / "cli.md").read_text()
    commands = {command.name or command.callback.__name__ for command in app.registered_commands}
    assert commands >= {"eval", "serve", "check"}
    assert all(f"agent-env {command} " in section for command in commands)
