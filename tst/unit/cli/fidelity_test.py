"""The pieces of the fidelity check (`agent_env/inspection/fidelity.py`, `keywords.py`), on hand-made prompts."""

from __future__ import annotations

import json
from typing import Any

from agent_env.inspection.keywords import Occurrence, lost_keywords, occurrences
from agent_env.training.rendering import json_values, shows_exactly

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "hours": {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer", "minimum": 1}}]
        },
        "mw": {"type": "number", "minimum": 0},
    },
    "required": ["hours"],
}
TOOL = {"name": "offer", "description": "Offer.", "inputSchema": SCHEMA}


def test_exact_means_the_schema_as_json_in_any_layout_with_name_and_description():
    wrapped = {
        "type": "function",
        "function": {"name": "offer", "description": "Offer.", "parameters": SCHEMA},
    }
    assert shows_exactly("Tools:\n" + json.dumps(wrapped) + "\nGo.", TOOL)
    assert shows_exactly("Tools:\n" + json.dumps(wrapped, indent=4, sort_keys=True), TOOL)
    dropped = json.loads(json.dumps(wrapped))
    del dropped["function"]["parameters"]["properties"]["mw"]["minimum"]
    assert not shows_exactly(json.dumps(dropped), TOOL)
    assert not shows_exactly(json.dumps(SCHEMA), TOOL)  # no name, no description
    quoted = {**TOOL, "description": 'Offer "hours".'}
    assert shows_exactly(json.dumps({**wrapped["function"], "description": quoted["description"]}), quoted)


def test_json_values_skips_text_that_only_looks_like_json():
    text = 'Respond as {"name": function name}. {"a": {"b": 1}} and {broken'
    assert list(json_values(text)) == [{"a": {"b": 1}}]


def test_occurrences_walk_every_subschema_depth_first_and_skip_the_implied_root_type():
    labels = [occurrence.label() for occurrence in occurrences(SCHEMA)]
    # A keyword comes before what lies under it, so what lies under a lost keyword can be skipped.
    assert labels == [
        "properties", "required", "hours.anyOf", "hours.anyOf[0].type", "hours.anyOf[1].type",
        "hours.anyOf[1].items", "hours.anyOf[1][].type", "hours.anyOf[1][].minimum", "mw.type", "mw.minimum",
    ]  # fmt: skip
    assert Occurrence("maxItems", ("properties", "items", "items")).label() == "items[].maxItems"


def test_a_keyword_is_lost_when_removing_it_leaves_the_prompt_unchanged():
    def typescript_like(schema: dict[str, Any]) -> str:  # shows types and minimums of plain properties only
        return ", ".join(
            f"{name}: {prop.get('type', 'any')} >= {prop.get('minimum', '-')}"
            for name, prop in schema.get("properties", {}).items()
        )

    lost, tested = lost_keywords(SCHEMA, typescript_like)
    # What lies under a lost anyOf is lost with it, and not tested again.
    assert [occurrence.label() for occurrence in lost] == ["required", "hours.anyOf"]
    assert tested == 5
