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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1, help="GRPO steps (about 20 s each on 2 CPU cores)")
    parser.add_argument("--model", help="a local model folder; default: a tiny random Qwen3")
    options = parser.parse_args()

    from agent_env import AgentEnv
    from agent_env.inspection.grpo import train

    env = AgentEnv.local(environment)
    print(f"{len(env.tools())} tools from server-memory: {', '.join(tool['name'] for tool in env.tools())}")
    for entry in train(env, model=options.model, steps=options.steps, max_completion_length=64):
        reward = entry.get("rewards/knowledge_graph/mean", 0.0)
        calls = entry.get("tools/call_frequency", 0.0)
        print(
            f"step {entry['step']}: loss {entry['loss']:.4f}, reward {reward:.3f}, tool calls per rollout {calls:.2f}"
        )
    env.close()


if __name__ == "__main__":
    main()
