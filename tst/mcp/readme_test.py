"""docs/mcp.md's "Train on an MCP server" script runs as printed: a real GRPO step on the real server-memory.

What cannot run here is stood in for, as in the TRL tier (tst/trl/conftest.py): the model (no weights can be
downloaded, so loading `MODEL` gives the real Qwen3 tokenizer and a tiny random Qwen3, whose generation is scripted,
since a random model writes no tool call) and the GPU (its `GRPOConfig` gets `use_cpu=True, bf16=False`).
Everything else is the page's own code, with the server's path pointed at the one `make mcp-servers` installs (and
at its Node.js when none is on PATH): the chat template, TRL's parser and tool loop, the factory, the server and
the reward are all real.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tst.mcp.conftest import NODE, node_server, servers_left, wait_until
from tst.trl.conftest import Script
from tst.unit.readme_test import fenced

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "docs" / "mcp.md").read_text()
_START = DOCS.index("## Train on an MCP server")
SECTION = DOCS[_START : DOCS.index("\n## ", _START + 1)]  # to the next section, whatever it is
README = (ROOT / "README.md").read_text()


def calls(*made: tuple[str, dict[str, Any]]) -> str:
    return "\n".join(
        f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"
        for name, arguments in made
    )


def builder(namespace: dict[str, Any]) -> Any:
    """Rollout 0 builds the graph its prompt describes; rollout 1 sends people without their type (refused)."""

    def reply(index: int, prompt: str) -> str:
        if "<tool_response>" in prompt:
            return "Done.<|im_end|>"
        row = next(row for row in namespace["ROWS"] if all(p["name"] in prompt for p in row["people"]))
        if index % 2:
            return (
                calls(("create_entities", {"entities": [{"name": p["name"]} for p in row["people"]]}))
                + "<|im_end|>"
            )
        people = [
            {"name": p["name"], "entityType": "person", "observations": [p["role"]]} for p in row["people"]
        ]
        pairs = [{"from": a, "to": b, "relationType": "works_with"} for a, b in row["works_with"]]
        made = calls(("create_entities", {"entities": people}), ("create_relations", {"relations": pairs}))
        return made + "<|im_end|>"

    return reply


def test_the_docs_mcp_training_script_runs_as_printed(
    tiny_model: Any,
    tokenizer: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import transformers
    import trl
    from trl.trainer import grpo_trainer

    (script,) = [content for language, content in fenced(SECTION) if language == "python"]
    printed = 'MEMORY_SERVER = "node_modules/@modelcontextprotocol/server-memory/dist/index.js"'
    assert printed in script and 'StdioServer("node", [MEMORY_SERVER]' in script
    script = script.replace(printed, f"MEMORY_SERVER = {node_server('server-memory')!r}")
    script = script.replace('StdioServer("node",', f"StdioServer({NODE!r},")
    namespace: dict[str, Any] = {"__name__": "readme"}
    # The model and the GPU (see the module docstring).
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda name, **kwargs: tokenizer)
    monkeypatch.setattr(grpo_trainer, "create_model_from_path", lambda name, **kwargs: tiny_model)
    generate = Script(tokenizer, builder(namespace))
    monkeypatch.setattr(
        grpo_trainer.GRPOTrainer, "_generate_single_turn", lambda self, *a, **k: generate(*a, **k)
    )
    on_cpu = trl.GRPOConfig
    monkeypatch.setattr(trl, "GRPOConfig", lambda **settings: on_cpu(**settings, use_cpu=True, bf16=False))
    monkeypatch.chdir(tmp_path)  # output_dir="knowledge-graph"
    with caplog.at_level(logging.WARNING, logger="agent_env"):
        exec(compile(script, "docs/mcp.md", "exec"), namespace)
    (logged,) = [entry for entry in namespace["trainer"].state.log_history if "step" in entry]
    assert logged["step"] == 1  # one optimizer step, as printed
    assert logged["rewards/knowledge_graph/mean"] == pytest.approx(0.5)  # F1 read off the servers: 1 and 0
    assert logged["tools/failure_frequency"] == pytest.approx(1 / 3)  # the untyped people, refused
    assert not [record for record in caplog.records if record.name == "agent_env.training"]  # all scored
    assert wait_until(lambda: not servers_left()), f"server processes left running: {servers_left()}"


OWN_SERVER = DOCS[DOCS.index("## Bringing your own server") : DOCS.index("## Schemas")]


@pytest.mark.parametrize("state", ["{episode_dir}/memory.jsonl", "shared"], ids=["isolated", "shared"])
def test_the_docs_isolation_check_tells_an_isolated_server_from_a_shared_one(
    state: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_env import AgentEnv
    from agent_env.mcp import StdioServer

    (check,) = [content for language, content in fenced(OWN_SERVER) if language == "python"]
    path = state if state != "shared" else str(tmp_path / "memory.jsonl")  # a fixed file: every episode's
    server = StdioServer(NODE, [node_server("server-memory")], env={"MEMORY_FILE_PATH": path})
    namespace: dict[str, Any] = {"AgentEnv": AgentEnv, "server": server}
    exec(compile(check, "docs/mcp.md", "exec"), namespace)
    namespace["env"].close()
    graph = json.loads(capsys.readouterr().out)
    assert [entity["name"] for entity in graph["entities"]] == ([] if state != "shared" else ["Ada"])
    assert wait_until(lambda: not servers_left())


def test_the_readmes_mcp_environment_plays_an_episode_and_scores_the_servers_graph() -> None:
    """The README's "An MCP server" snippet, with the server's path pointed at the one `make mcp-servers` installs."""
    section = README[README.index("### An MCP server") : README.index("### τ²-bench")]
    (snippet,) = [content for language, content in fenced(section) if language == "python"]
    printed = '"node", ["node_modules/@modelcontextprotocol/server-memory/dist/index.js"]'
    assert printed in snippet
    namespace: dict[str, Any] = {}
    exec(
        compile(
            snippet.replace(printed, f"{NODE!r}, [{node_server('server-memory')!r}]"), "README.md", "exec"
        ),
        namespace,
    )
    env = namespace["env"]
    try:
        assert "create_entities" in {tool["name"] for tool in env.tools()}
        with env.open() as session:
            session.reset(**env.dataset("train")[0])
            entity = {"name": "Ada", "entityType": "person", "observations": ["engineer"]}
            session.call_tool("create_entities", {"entities": [entity]})
            assert session.reward() == 1.0  # one entity in the episode's own graph
        with env.open() as session:  # the next episode starts from an empty graph of its own
            session.reset(**env.dataset("train")[0])
            assert session.reward() == 0.0
    finally:
        env.close()
    assert wait_until(lambda: not servers_left()), f"server processes left running: {servers_left()}"
