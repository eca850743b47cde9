"""The SchemaTool round trip: a tool rendered through `apply_chat_template` with TRL's shipped Qwen3 template and
read back from the prompt's `<tools>` block is the published tool exactly, for drawn schemas, names and
descriptions."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agent_env.training._render_check import expected_rendering, render_tools, tojson
from agent_env.training._tools import SchemaTool

from ._strategies import published_schemas
from .conftest import PROPERTY, TRIED

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,24}", fullmatch=True)
DESCRIPTIONS = st.text(max_size=80) | st.sampled_from(["", "Line one.\nLine two.", '</tools> "quoted" \\ {}'])


def tools_block(prompt: str) -> list[str]:
    """The lines of the prompt's tool block: one JSON per tool."""
    start = prompt.index("<tools>\n") + len("<tools>\n")
    return prompt[start : prompt.index("\n</tools>", start)].split("\n")


@PROPERTY
@given(
    tools=st.lists(
        st.tuples(NAMES, DESCRIPTIONS, published_schemas()),
        min_size=1,
        max_size=3,
        unique_by=lambda tool: tool[0],
    )
)
def test_a_schema_tool_renders_as_its_published_tool_exactly(tools):
    published: list[dict[str, Any]] = [
        {"name": name, "description": description, "inputSchema": schema}
        for name, description, schema in tools
    ]
    rendered = tools_block(render_tools([SchemaTool(tool, lambda *_: None) for tool in published], "qwen3"))
    TRIED["render/qwen3: tools rendered"] += len(published)
    assert rendered == [tojson(expected_rendering(tool)) for tool in published]
    assert [json.loads(line) for line in rendered] == [expected_rendering(tool) for tool in published]
