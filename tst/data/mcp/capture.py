"""Write the tool listings of real MCP servers to `tst/data/mcp/<server>.json`, as the official `mcp` client lists
them: the test data of `tst/unit/schema/dialects_test.py`, `tst/unit/schema/listings_test.py` and
`tst/property/dialects_test.py`.

Run it again when a pinned version changes, from a folder where the servers are installed at those versions (npm's
packages in one `node_modules`; each PyPI package in its own venv `py-<package>`, as their pins conflict; the time
and git servers share `py`), with `redis-server` on PATH for the Redis server, which connects at start:

    npm install --ignore-scripts $(python -m tst.data.mcp.capture --npm)
    uv venv py && uv pip install --python py/bin/python mcp-server-time==2026.10.19 mcp-server-git==2026.10.19
    for spec in $(python -m tst.data.mcp.capture --pypi); do
        uv venv py-${spec%%==*} && uv pip install --python py-${spec%%==*}/bin/python $spec
    done
    uv pip install --python py-mcp-server-sqlite/bin/python 'mcp<2'  # it leaves mcp unpinned and fails on 2.x
    uv pip install --python py-chroma-mcp/bin/python 'pydantic<2.11'  # its mcp 1.6.0 fails to import on newer
    cd /path/to/agent_env && uv run --frozen python -m tst.data.mcp.capture /path/to/that/folder [NAME ...]

Credentials are dummies: every server here lists its tools without reaching its service. Not captured:
@heroku/mcp-server 1.2.8 (its dist imports `@modelcontextprotocol/sdk/dist/esm/server/mcp` without `.js`, which
Node refuses) and mcp-neo4j-memory 0.4.5 (it exits when no Neo4j answers).
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

HERE = Path(__file__).parent

N = "node_modules/"
D = "dummy-credential"  # no server here checks a credential before listing its tools
SERVERS = {  # file name: (package, version, command and args relative to the install folder, environment)
    "server-memory": ("@modelcontextprotocol/server-memory", "2026.8.31", ["node", N + "@modelcontextprotocol/server-memory/dist/index.js"], {}),
    "server-filesystem": ("@modelcontextprotocol/server-filesystem", "2026.8.31", ["node", N + "@modelcontextprotocol/server-filesystem/dist/index.js", "{scratch}"], {}),
    "mcp-server-time": ("mcp-server-time", "2026.10.19", ["py/bin/mcp-server-time", "--local-timezone", "UTC"], {}),
    "mcp-server-git": ("mcp-server-git", "2026.10.19", ["py/bin/mcp-server-git", "--repository", "{scratch}"], {}),
    "server-everything": ("@modelcontextprotocol/server-everything", "2026.8.31", ["node", N + "@modelcontextprotocol/server-everything/dist/index.js"], {}),
    "server-sequential-thinking": ("@modelcontextprotocol/server-sequential-thinking", "2026.8.31", ["node", N + "@modelcontextprotocol/server-sequential-thinking/dist/index.js"], {}),
    "server-puppeteer": ("@modelcontextprotocol/server-puppeteer", "2025.5.12", ["node", N + "@modelcontextprotocol/server-puppeteer/dist/index.js"], {}),
    "server-github": ("@modelcontextprotocol/server-github", "2025.4.8", ["node", N + "@modelcontextprotocol/server-github/dist/index.js"], {"GITHUB_PERSONAL_ACCESS_TOKEN": D}),
    "server-slack": ("@modelcontextprotocol/server-slack", "2025.4.25", ["node", N + "@modelcontextprotocol/server-slack/dist/index.js"], {"SLACK_BOT_TOKEN": D, "SLACK_TEAM_ID": "T0"}),
    "server-brave-search": ("@modelcontextprotocol/server-brave-search", "0.6.2", ["node", N + "@modelcontextprotocol/server-brave-search/dist/index.js"], {"BRAVE_API_KEY": D}),
    "server-google-maps": ("@modelcontextprotocol/server-google-maps", "0.6.2", ["node", N + "@modelcontextprotocol/server-google-maps/dist/index.js"], {"GOOGLE_MAPS_API_KEY": D}),
    "server-gitlab": ("@modelcontextprotocol/server-gitlab", "2025.4.25", ["node", N + "@modelcontextprotocol/server-gitlab/dist/index.js"], {"GITLAB_PERSONAL_ACCESS_TOKEN": D}),
    "server-redis": ("@modelcontextprotocol/server-redis", "2025.4.25", ["node", N + "@modelcontextprotocol/server-redis/dist/index.js", "redis://127.0.0.1:{redis}"], {}),
    "server-postgres": ("@modelcontextprotocol/server-postgres", "0.6.2", ["node", N + "@modelcontextprotocol/server-postgres/dist/index.js", "postgresql://127.0.0.1:1/none"], {}),
    "server-aws-kb-retrieval": ("@modelcontextprotocol/server-aws-kb-retrieval", "0.6.2", ["node", N + "@modelcontextprotocol/server-aws-kb-retrieval/dist/index.js"], {"AWS_ACCESS_KEY_ID": D, "AWS_SECRET_ACCESS_KEY": D, "AWS_REGION": "us-east-1"}),
    "server-everart": ("@modelcontextprotocol/server-everart", "0.6.2", ["node", N + "@modelcontextprotocol/server-everart/dist/index.js"], {"EVERART_API_KEY": D}),
    "playwright-mcp": ("@playwright/mcp", "0.0.83", ["node", N + "@playwright/mcp/cli.js"], {}),
    "context7-mcp": ("@upstash/context7-mcp", "4.1.1", ["node", N + "@upstash/context7-mcp/dist/index.js"], {}),
    "firecrawl-mcp": ("firecrawl-mcp", "3.26.0", ["node", N + "firecrawl-mcp/dist/index.js"], {"FIRECRAWL_API_KEY": "fc-" + D}),
    "notion-mcp-server": ("@notionhq/notion-mcp-server", "2.5.2", ["node", N + "@notionhq/notion-mcp-server/bin/cli.mjs"], {"NOTION_TOKEN": D}),
    "mcp-server-kubernetes": ("mcp-server-kubernetes", "4.1.7", ["node", N + "mcp-server-kubernetes/dist/index.js"], {}),
    # its `docs` feature fetches the docs' GraphQL schema from the service at listing time
    "mcp-server-supabase": ("@supabase/mcp-server-supabase", "0.13.0", ["node", N + "@supabase/mcp-server-supabase/dist/cli.js", "--access-token", D, "--features", "account,database,debugging,development,functions,branching,storage"], {}),
    "tavily-mcp": ("tavily-mcp", "0.2.22", ["node", N + "tavily-mcp/build/index.js"], {"TAVILY_API_KEY": D}),
    "exa-mcp-server": ("exa-mcp-server", "3.4.1", ["node", N + "exa-mcp-server/dist/stdio.cjs"], {"EXA_API_KEY": D}),
    "chrome-devtools-mcp": ("chrome-devtools-mcp", "1.11.0", ["node", N + "chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js"], {}),
    "desktop-commander": ("@wonderwhy-er/desktop-commander", "0.2.52", ["node", N + "@wonderwhy-er/desktop-commander/dist/index.js"], {}),
    "mongodb-mcp-server": ("mongodb-mcp-server", "3.0.4", ["node", N + "mongodb-mcp-server/dist/esm/index.js"], {}),
    "figma-developer-mcp": ("figma-developer-mcp", "0.13.2", ["node", N + "figma-developer-mcp/dist/bin.js", "--stdio"], {"FIGMA_API_KEY": D}),
    "mcp-server-fetch": ("mcp-server-fetch", "2026.10.24", ["py-mcp-server-fetch/bin/mcp-server-fetch"], {}),
    "mcp-server-sqlite": ("mcp-server-sqlite", "2025.4.25", ["py-mcp-server-sqlite/bin/mcp-server-sqlite", "--db-path", "{scratch}/db.sqlite"], {}),
    "aws-documentation-mcp-server": ("awslabs.aws-documentation-mcp-server", "1.2.3", ["py-awslabs.aws-documentation-mcp-server/bin/awslabs.aws-documentation-mcp-server"], {}),
    "mcp-atlassian": ("mcp-atlassian", "0.23.1", ["py-mcp-atlassian/bin/mcp-atlassian"], {"JIRA_URL": "http://127.0.0.1:1", "JIRA_USERNAME": "x", "JIRA_API_TOKEN": D, "CONFLUENCE_URL": "http://127.0.0.1:1/wiki", "CONFLUENCE_USERNAME": "x", "CONFLUENCE_API_TOKEN": D}),
    "duckduckgo-mcp-server": ("duckduckgo-mcp-server", "0.7.0", ["py-duckduckgo-mcp-server/bin/duckduckgo-mcp-server"], {}),
    "arxiv-mcp-server": ("arxiv-mcp-server", "0.8.2", ["py-arxiv-mcp-server/bin/arxiv-mcp-server", "--storage-path", "{scratch}"], {}),
    "mcp-clickhouse": ("mcp-clickhouse", "0.7.0", ["py-mcp-clickhouse/bin/mcp-clickhouse"], {"CLICKHOUSE_HOST": "127.0.0.1", "CLICKHOUSE_USER": "x", "CLICKHOUSE_PASSWORD": D}),
    "mcp-server-motherduck": ("mcp-server-motherduck", "1.1.0", ["py-mcp-server-motherduck/bin/mcp-server-motherduck", "--db-path", ":memory:", "--read-write"], {}),
    "mcp-neo4j-cypher": ("mcp-neo4j-cypher", "0.6.0", ["py-mcp-neo4j-cypher/bin/mcp-neo4j-cypher"], {"NEO4J_URI": "bolt://127.0.0.1:1", "NEO4J_PASSWORD": D}),
    "serena-agent": ("serena-agent", "2.1.0", ["py-serena-agent/bin/serena", "start-mcp-server", "--project", "{scratch}", "--enable-web-dashboard", "false"], {}),
    "markitdown-mcp": ("markitdown-mcp", "0.0.1a8", ["py-markitdown-mcp/bin/markitdown-mcp"], {}),
    "chroma-mcp": ("chroma-mcp", "0.2.6", ["py-chroma-mcp/bin/chroma-mcp", "--client-type", "ephemeral"], {}),
}  # fmt: skip
LEGACY = {"chroma-mcp"}
"""Servers listed with the initialize handshake alone: chroma-mcp pins mcp 1.6.0, whose server exits on the `mcp`
2.x client's first request, the `server/discover` probe (agent_env's connections send it too)."""


async def listed(
    command: list[str], environment: dict[str, str], folder: Path, legacy: bool
) -> list[dict[str, Any]]:
    """Every tool the server lists (all pages), as `name`, `description` and `inputSchema`."""
    parameters = StdioServerParameters(command=str(folder / command[0]) if "/" in command[0] else command[0],
                                       args=command[1:], cwd=folder, env=environment)  # fmt: skip
    tools: list[dict[str, Any]] = []
    async with Client(parameters, mode="legacy" if legacy else "auto") as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in page.tools
            ]
            cursor = page.next_cursor
            if cursor is None:
                return tools


@contextmanager
def redis_port(command: list[str]) -> Iterator[int | None]:
    """The port of a throwaway `redis-server` on loopback while the server runs, when its command needs one."""
    if not any("{redis}" in part for part in command):
        yield None
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    redis = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        time.sleep(1)
        yield port
    finally:
        redis.terminate()
        redis.wait()


def main(folder: Path, names: list[str]) -> None:
    for file_name, (package, pinned, command, environment) in SERVERS.items():
        if names and file_name not in names:
            continue
        with tempfile.TemporaryDirectory() as scratch, redis_port(command) as redis:
            subprocess.run(["git", "init", "-q", scratch], check=True)
            parts = [part.format(scratch=scratch, redis=redis) for part in command]
            tools = asyncio.run(
                asyncio.wait_for(listed(parts, environment, folder, file_name in LEGACY), 120)
            )
        listing = {"server": package, "version": pinned, "listed_with": f"mcp {version('mcp')} Client.list_tools",
                   "tools": tools}  # fmt: skip
        (HERE / f"{file_name}.json").write_text(json.dumps(listing, indent=2, ensure_ascii=False) + "\n")
        print(f"{file_name}: {len(tools)} tools")


def pins(registry: str) -> list[str]:
    """The pinned packages of one registry, as its installer spells them (`npm`, `pypi`; time and git left out)."""
    npm = registry == "npm"
    return sorted(
        f"{package}@{pinned}" if npm else f"{package}=={pinned}"
        for package, pinned, command, _ in SERVERS.values()
        if (command[0] == "node") == npm and not command[0].startswith("py/")
    )


if __name__ == "__main__":
    if sys.argv[1] in ("--npm", "--pypi"):
        print(" ".join(pins(sys.argv[1][2:])))
    else:
        main(Path(sys.argv[1]).resolve(), sys.argv[2:])
