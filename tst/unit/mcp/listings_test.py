"""Every tool that the real MCP servers of `tst/data/mcp/` list is published, and shown by each template family, as
`tst/data/mcp/outcomes.tsv` says: a tool that stops publishing, a template that starts losing part of one, or a
refusal whose reason changes fails here, naming the tool (`python -m tst.data.mcp.outcomes` writes the table again)."""

from __future__ import annotations

from collections import Counter

import pytest

from tst.data.mcp.outcomes import TEMPLATES, listings, outcomes, read_table


@pytest.fixture(scope="module")
def found() -> dict[str, dict[str, str]]:
    return {row["tool"]: row for row in outcomes()}


def test_every_listed_tool_has_the_outcome_the_table_says(found):
    expected = {row["tool"]: row for row in read_table()}
    assert sorted(found) == sorted(expected)
    changed = {
        tool: {"expected": expected[tool], "found": row}
        for tool, row in found.items()
        if row != expected[tool]
    }
    assert changed == {}


def test_the_table_covers_every_tool_of_every_listing_once(found):
    listed = [f"{listing.name}/{tool['name']}" for listing in listings() for tool in listing.tools]
    assert len(listed) == len(set(listed)) == len(found) >= 490


def test_every_real_tool_is_published_and_no_template_loses_part_of_one_without_a_refusal(found):
    assert [tool for tool, row in found.items() if not row["published as"]] == []
    counts = {name: Counter(row[name] for row in found.values()) for name in TEMPLATES}
    assert counts["qwen3"] == {"exact": len(found)}
    assert counts["gemma4"] == counts["gptoss"] == {"lowered": len(found)}
    assert set(counts["gemma4_v2"]) == {"lowered", "refused"}


def test_a_servers_tools_keep_distinct_names_once_made_identifiers(found):
    by_server = Counter((tool.split("/")[0], row["published as"]) for tool, row in found.items())
    assert [name for name, count in by_server.items() if count > 1] == []


def test_a_refusal_under_a_template_says_why_and_how_to_fix_it(found):
    refused = [row for row in found.values() if "refused" in (row[name] for name in TEMPLATES)]
    assert refused
    for row in refused:
        assert row["why"].startswith("gemma4_v2: parameter '"), row
        assert "train with a revision that keeps them" in row["why"], row
