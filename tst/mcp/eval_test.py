"""`agent-env eval` on an MCP server: the model's calls reach the real server-memory through the same session as in
training, refused ones never do, and the reward is read off the server (the eval tier's scripted OpenAI-compatible
server stands in for the model, as there)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agent_env import AgentEnv
from agent_env.cli import app
from agent_env.evaluation import Endpoint, evaluate
from agent_env.evaluation._arms import lossy_arm
from agent_env.mcp import MCPEnvironment, StdioServer
from testbed.scripted import Answer, call, completion, scripted, tool_results
from tst.mcp.conftest import EXAMPLES, NODE, node_server, servers_left, wait_until
from tst.mcp.conftest import scripted as scripted_server

sys.path.insert(0, str(EXAMPLES))
import knowledge_graph

PROMPT = [{"role": "user", "content": "Count, then stop."}]


def builder(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """A model that first sends people without their type (refused), then the graph its prompt asks for."""
    prompt = body["messages"][0]["content"]
    team = next(team for team in knowledge_graph.TEAMS if all(name in prompt for name in team["people"]))
    results = tool_results(body)
    if not results:
        return Answer(completion(tool_calls=[call("create_entities", {"entities": [{"name": "x"}]})]))
    if len(results) == 1:
        people = [
            {"name": name, "entityType": "person", "observations": [role]}
            for name, role in team["people"].items()
        ]
        relations = [{"from": a, "to": b, "relationType": "works_with"} for a, b in team["works_with"]]
        return Answer(
            completion(
                tool_calls=[
                    call("create_entities", {"entities": people}),
                    call("create_relations", {"relations": relations}),
                ]
            )
        )
    if len(results) == 3:
        return Answer(completion(tool_calls=[call("end_turn", {})]))
    return Answer(completion("Done."))


def test_an_evaluation_plays_and_scores_episodes_on_the_server(tmp_path: Path) -> None:
    env = AgentEnv.local(knowledge_graph.environment)
    try:
        with scripted(builder) as server:
            report = evaluate(env, Endpoint(server.url), split="test", out=tmp_path / "run.jsonl")
            refused = tool_results(server.requests[1][0])[0]
    finally:
        env.close()
    assert [episode.reward for episode in report.episodes] == [
        1.0,
        1.0,
    ]  # the server's graphs match the tasks
    assert refused.startswith(
        "{'error': Invalid arguments for tool 'create_entities'; fix these and call it again:"
    )
    assert "- entities[0]: missing required property 'entityType'" in refused
    verdicts = [
        call["verdict"]
        for line in (tmp_path / "run.jsonl").read_text().splitlines()[1:-1]  # between settings and summary
        for call in json.loads(line)["calls"]
    ]
    assert verdicts == ["invalid_arguments", "accepted", "accepted", "accepted"] * 2
    assert wait_until(lambda: not servers_left())


def test_an_episode_whose_server_dies_ends_as_an_error_unscored_and_the_run_goes_on(tmp_path: Path) -> None:
    command = scripted_server()
    environment = MCPEnvironment(
        StdioServer(command[0], command[1:]), reward="score", rows={"test": [{"prompt": PROMPT}] * 2}
    )

    def crasher(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        return Answer(completion(tool_calls=[call("count", {}), call("exit", {})]))

    env = AgentEnv.local(environment)
    try:
        with scripted(crasher) as server:
            report = evaluate(env, Endpoint(server.url), out=tmp_path / "run.jsonl")
    finally:
        env.close()
    assert [(episode.ended_by, episode.reward) for episode in report.episodes] == [("error", None)] * 2
    assert "died or closed the connection" in report.episodes[0].error
    assert wait_until(lambda: not servers_left())


def test_an_episode_whose_reward_function_raises_ends_as_an_error_unscored_and_counted(
    tmp_path: Path,
) -> None:
    def reward(episode: Any) -> float:
        raise KeyError("expected")

    command = scripted_server()
    environment = MCPEnvironment(
        StdioServer(command[0], command[1:]),
        reward=reward,
        rows={"test": [{"prompt": PROMPT}] * 2},
        name="count",
    )
    env = AgentEnv.local(environment)
    try:
        with scripted(lambda body, headers: Answer(completion("Nothing to do."))) as server:
            report = evaluate(env, Endpoint(server.url), out=tmp_path / "run.jsonl")
    finally:
        env.close()
    assert [(episode.ended_by, episode.reward) for episode in report.episodes] == [("error", None)] * 2
    said = "count could not score it: its reward function raised KeyError: 'expected' in MCP episode "
    assert all(episode.error.startswith(said) for episode in report.episodes)  # type: ignore[union-attr]
    (summary,) = report.summaries
    assert (summary.failed, summary.faults) == (2, {"environment_error": 2})
    assert wait_until(lambda: not servers_left())


def test_the_lossy_arm_of_an_mcp_environment_is_trls_own_port_of_the_servers_listing() -> None:
    env = AgentEnv.local(knowledge_graph.environment)
    try:
        arm = lossy_arm(env)
        listed = {tool.name: tool.listed_schema for tool in env.provider.environment.tools.values()}
    finally:
        env.close()
    assert arm.shows == (
        "TRL's own rendering of the environment's tool methods (get_json_schema); TRL's own port of each listed "
        "tool (trl.experimental.openreward), rendered by get_json_schema"
    )  # end_turn is agent_env's own method; the rest are the server's listing
    sent = {tool["function"]["name"]: tool["function"] for tool in arm.tools}
    entities = sent["create_entities"]["parameters"]["properties"]["entities"]
    assert entities == {
        "type": "array",
        "description": "entities",
    }  # no items: the port reads top-level types
    assert listed["create_entities"]["properties"]["entities"]["items"]["required"] == [
        "name", "entityType", "observations",
    ]  # fmt: skip
    assert arm.unrenderable == {}  # every tool of server-memory binds: a plain TRL port could start with it
    assert wait_until(lambda: not servers_left())


def test_the_eval_command_takes_an_mcp_environment_by_name(tmp_path: Path) -> None:
    with scripted(builder) as server:
        result = CliRunner().invoke(
            app,
            [
                "eval",
                "knowledge_graph:environment",
                "--base-url",
                server.url,
                "--out",
                str(tmp_path / "run.jsonl"),
            ],
            env={"COLUMNS": "200"},
        )
    assert result.exit_code == 0, result.output
    lines = (tmp_path / "run.jsonl").read_text().splitlines()[1:-1]  # between settings and summary
    assert [json.loads(line)["reward"] for line in lines] == [1.0, 1.0]
    assert wait_until(lambda: not servers_left())


def test_the_eval_command_on_a_bare_server_says_where_rows_come_from(tmp_path: Path) -> None:
    command = [
        "eval",
        "--mcp",
        f"{NODE} {node_server('server-memory')}",
        "--out",
        str(tmp_path / "run.jsonl"),
    ]
    with scripted(builder) as server:
        result = CliRunner().invoke(app, [*command, "--base-url", server.url])
    assert result.exit_code == 2
    assert (
        "has no dataset split 'test': it was given no rows: give them with MCPEnvironment(..., rows=...) (in a "
        "module, named as module:name), or to agent-env eval with --rows FILE (JSON lines, a row with its prompt "
        "a line)"
    ) in " ".join(result.output.split())
    assert wait_until(lambda: not servers_left())


def test_the_eval_command_plays_a_bare_server_on_rows_given_in_a_file(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in knowledge_graph.ROWS[:2]))
    out = tmp_path / "run.jsonl"
    command = [
        "eval",
        "--mcp",
        f"{NODE} {node_server('server-memory')}",
        "--rows",
        str(rows),
        "--out",
        str(out),
    ]
    with scripted(builder) as server:
        result = CliRunner().invoke(app, [*command, "--base-url", server.url], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    episodes = [
        json.loads(line) for line in out.read_text().splitlines()[1:-1]
    ]  # between settings and summary
    assert sorted(line["episode"] for line in episodes) == ["team-0", "team-1"]  # written as each finished
    assert [[call["verdict"] for call in line["calls"]] for line in episodes] == [
        ["invalid_arguments", "accepted", "accepted", "accepted"]
    ] * 2  # the server's own tools, validated and sent; the server has no reward of its own, so each scores 0
    assert [line["reward"] for line in episodes] == [0.0, 0.0]
    assert wait_until(lambda: not servers_left())
