"""Schemas in the dialect their `$schema` declares (draft-04 to 2020-12): checked against that dialect's metaschema,
upgraded to 2020-12 accepting what they accepted, and an unknown dialect refused naming the ones read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft6Validator, Draft202012Validator, validators

from agent_env import Tool, ToolArgumentError, ToolDefinitionError
from agent_env.schema import SchemaCheckError, SchemaNormalizationError, check_schema, dialect_of, normalize
from agent_env.schema._dialects import upgrade
from tst.data.dialects import DECLARED, DRAFT_04, DRAFT_07, SPELLINGS, UNKNOWN, Declared
from tst.data.mcp import outcomes
from tst.data.mcp.capture import SERVERS

LISTINGS = sorted((Path(__file__).parents[2] / "data" / "mcp").glob("*.json"))


def own_validator(schema: dict[str, Any]) -> Any:
    """The reference validator of the dialect `schema` declares; for draft-04 with draft-06's reading of `integer`
    (by value: `1.0` is one), which agent_env keeps on purpose (see `agent_env.schema._dialects`)."""
    cls = validators.validator_for(schema)
    if cls.META_SCHEMA.get("$schema") == DRAFT_04:
        cls = validators.extend(cls, type_checker=Draft6Validator.TYPE_CHECKER)
    return cls(schema)


def listed_tools() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{listing.stem}/{tool['name']}", tool)
        for listing in LISTINGS
        for tool in json.loads(listing.read_text())["tools"]
    ]


@pytest.mark.parametrize("case", DECLARED, ids=[case.label for case in DECLARED])
def test_a_declared_schema_normalizes_to_its_2020_12_form(case: Declared):
    check_schema(case.schema)
    normalized = normalize(case.schema)
    assert normalized == case.normalized
    check_schema(normalized)


@pytest.mark.parametrize("case", DECLARED, ids=[case.label for case in DECLARED])
def test_the_normalized_schema_accepts_what_its_own_dialect_accepts(case: Declared):
    original = own_validator(case.schema)
    normalized = Tool.from_schema("f", "", case.schema, lambda **arguments: arguments)
    for arguments in case.accepted:
        assert original.is_valid(arguments), arguments  # the test data says what the dialect says
        normalized.bind(arguments)
        assert Draft202012Validator(normalized.input_schema).is_valid(arguments)
    for arguments in case.refused:
        assert not original.is_valid(arguments), arguments
        with pytest.raises(ToolArgumentError):
            normalized.bind(arguments)
        assert not Draft202012Validator(normalized.input_schema).is_valid(arguments)


def test_a_draft_07_tuple_is_published_and_calls_are_held_to_it():
    schema = DECLARED[0].schema
    published = Tool.from_schema("plot", "Plot a point.", schema, lambda **arguments: arguments)
    assert published.input_schema["properties"]["point"]["prefixItems"] == [
        {"type": "number"},
        {"type": "string"},
    ]
    with pytest.raises(ToolArgumentError) as refused:
        published.bind({"point": [1, "a", 2]})
    assert "point" in str(refused.value)


def test_a_tuple_items_without_a_dialect_is_refused_as_2020_12_reads_it():
    schema = {"type": "object", "properties": {"point": {"type": "array", "items": [{"type": "number"}]}}}
    with pytest.raises(
        SchemaCheckError, match=r"^not a valid JSON Schema \(2020-12\) at properties\.point\.items: "
    ):
        check_schema(schema)


def test_a_schema_is_checked_against_the_metaschema_of_its_own_dialect():
    draft_04 = {
        "$schema": DRAFT_04,
        "type": "object",
        "properties": {"n": {"type": "number", "exclusiveMinimum": 5}},
    }
    with pytest.raises(ToolDefinitionError) as refused:
        Tool.from_schema("f", "", draft_04, lambda **arguments: arguments)
    assert str(refused.value).splitlines() == [
        "tool 'f': not a valid JSON Schema (draft-04); fix these:",
        "- properties.n: missing required property 'minimum'",
        "- properties.n.exclusiveMinimum: expected boolean; got integer 5",
    ]
    check_schema({**draft_04, "$schema": DRAFT_07})  # a number, as draft-06 and later spell it


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_the_ways_servers_write_a_dialect_all_name_it(spelling: str):
    assert dialect_of({"$schema": spelling}).name == "draft-07"
    tuple_schema = {
        "$schema": spelling,
        "type": "object",
        "properties": {"p": {"type": "array", "items": [{}]}},
    }
    assert normalize(tuple_schema)["properties"]["p"] == {"type": "array", "prefixItems": [{}]}


@pytest.mark.parametrize("declared", UNKNOWN)
def test_an_unknown_dialect_is_refused_naming_it_and_the_dialects_read(declared: str):
    schema = {"$schema": declared, "type": "object", "properties": {}}
    expected = (
        f"$schema: {declared!r} is not a JSON Schema dialect agent_env reads, so what its keywords mean is unknown; "
        "declare one of draft-04, draft-06, draft-07, 2019-09, 2020-12 (e.g. 'http://json-schema.org/draft-07/schema#'), "
        "or leave $schema out for 2020-12"
    )
    with pytest.raises(ToolDefinitionError) as refused:
        Tool.from_schema("f", "", schema, lambda **arguments: arguments)
    assert str(refused.value) == f"tool 'f': {expected}"
    with pytest.raises(SchemaNormalizationError, match="is not a JSON Schema dialect agent_env reads"):
        normalize(schema)


def test_a_2020_12_schema_is_not_rewritten():
    schema = {"type": "object", "properties": {"p": {"type": "array", "prefixItems": [{}]}}}
    assert upgrade(schema) is schema
    assert upgrade({"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}) == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
    }


def test_draft_04_integers_are_read_by_value_as_every_later_dialect_reads_them():
    schema = {"$schema": DRAFT_04, "type": "object", "properties": {"n": {"type": "integer"}}}
    Tool.from_schema("f", "", schema, lambda **arguments: arguments).bind({"n": 1.0})


def test_a_recursive_reference_of_2019_09_is_refused_as_a_recursive_type():
    schema = {
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "type": "object",
        "properties": {"tree": {"$recursiveRef": "#"}},
    }
    with pytest.raises(
        SchemaNormalizationError, match=r"^properties\.tree: \$recursiveRef refers to a type that"
    ):
        normalize(schema)


@pytest.mark.parametrize(("label", "tool"), listed_tools(), ids=[label for label, _ in listed_tools()])
def test_every_tool_a_real_server_lists_is_published_in_2020_12(label: str, tool: dict[str, Any]):
    published = outcomes.published(tool)
    assert "$schema" not in published.input_schema
    check_schema(published.input_schema)


def test_the_real_listings_record_the_server_and_version_they_were_captured_from():
    listings = {path.stem: json.loads(path.read_text()) for path in LISTINGS}
    assert {name: (listing["server"], listing["version"]) for name, listing in listings.items()} == {
        name: (package, pinned) for name, (package, pinned, _, _) in SERVERS.items()
    }


def test_the_real_listings_declare_draft_07_or_nothing_which_is_2020_12():
    declared: dict[str, list[str]] = {}
    for path in LISTINGS:
        dialects = {dialect_of(tool["inputSchema"]).name for tool in json.loads(path.read_text())["tools"]}
        assert len(dialects) == 1, (path.stem, dialects)  # a server declares one dialect for all its tools
        declared.setdefault(dialects.pop(), []).append(path.stem)
    assert declared == {
        "draft-07": [
            "desktop-commander", "exa-mcp-server", "figma-developer-mcp", "firecrawl-mcp", "mcp-server-supabase",
            "server-everything", "server-filesystem", "server-github", "server-gitlab", "server-memory",
            "server-sequential-thinking",
        ],
        "2020-12": [
            "arxiv-mcp-server", "aws-documentation-mcp-server", "chroma-mcp", "chrome-devtools-mcp", "context7-mcp",
            "duckduckgo-mcp-server", "markitdown-mcp", "mcp-atlassian", "mcp-clickhouse", "mcp-neo4j-cypher",
            "mcp-server-fetch", "mcp-server-git", "mcp-server-kubernetes", "mcp-server-motherduck", "mcp-server-sqlite",
            "mcp-server-time", "mongodb-mcp-server", "notion-mcp-server", "playwright-mcp", "serena-agent",
            "server-aws-kb-retrieval", "server-brave-search", "server-everart", "server-google-maps", "server-postgres",
            "server-puppeteer", "server-redis", "server-slack", "tavily-mcp",
        ],
    }  # fmt: skip
