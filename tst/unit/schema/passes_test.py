"""The normalization passes, each alone, and the pipeline that runs them."""

import pytest

from agent_env.schema import SchemaNormalizationError, normalize
from agent_env.schema._passes import close_objects, drop_noise, inline_refs, order_keywords


def test_inline_refs_replaces_every_ref_and_drops_defs():
    schema = {
        "$defs": {
            "Point": {"type": "array", "items": {"$ref": "#/$defs/Number"}},
            "Number": {"type": "number"},
        },
        "type": "object",
        "properties": {"points": {"type": "array", "items": {"$ref": "#/$defs/Point"}}},
    }
    assert inline_refs(schema) == {
        "type": "object",
        "properties": {"points": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}},
    }


def test_inline_refs_keeps_the_referring_description_over_the_definitions():
    schema = {
        "$defs": {"Curve": {"type": "object", "description": "A curve."}},
        "properties": {"curve": {"$ref": "#/$defs/Curve", "description": "Today's curve."}},
    }
    assert inline_refs(schema)["properties"]["curve"] == {"type": "object", "description": "Today's curve."}


def test_inline_refs_keeps_both_constraints_when_a_sibling_constrains_the_same_keyword():
    schema = {"$defs": {"Small": {"type": "integer", "maximum": 5}}, "$ref": "#/$defs/Small", "maximum": 3}
    assert inline_refs(schema) == {"allOf": [{"type": "integer", "maximum": 5}], "maximum": 3}


def test_inline_refs_refuses_a_recursive_type_naming_it():
    schema = {
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node",
    }
    with pytest.raises(SchemaNormalizationError, match="'Node' refers to itself"):
        inline_refs(schema)


def test_inline_refs_refuses_a_remote_ref():
    with pytest.raises(SchemaNormalizationError, match="not local"):
        inline_refs({"$ref": "https://example.com/schema.json"})


def test_inline_refs_follows_a_pointer_to_another_property_as_zod_to_json_schema_writes_a_reused_type():
    schema = {
        "type": "object",
        "properties": {
            "done": {"type": "boolean", "description": "Done."},
            "revision": {"$ref": "#/properties/done", "description": "A revision."},
            "more": {"$ref": "#/properties/revision"},
            "first": {"$ref": "#/properties/list/prefixItems/0"},
            "list": {"type": "array", "prefixItems": [{"type": "integer", "minimum": 1}]},
        },
    }
    properties = inline_refs(schema)["properties"]
    assert properties["revision"] == {"type": "boolean", "description": "A revision."}
    assert properties["more"] == {"type": "boolean", "description": "A revision."}
    assert properties["first"] == {"type": "integer", "minimum": 1}


def test_inline_refs_follows_a_pointer_into_a_definition():
    schema = {
        "$defs": {"Pair": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "properties": {"a": {"$ref": "#/$defs/Pair/properties/a"}},
    }
    assert inline_refs(schema) == {"properties": {"a": {"type": "string"}}}


def test_inline_refs_refuses_a_pointer_to_nothing_naming_the_step_not_found():
    schema = {"properties": {"a": {"type": "string"}, "b": {"$ref": "#/properties/c"}}}
    with pytest.raises(SchemaNormalizationError) as refused:
        inline_refs(schema)
    assert (
        str(refused.value) == "properties.b: $ref '#/properties/c' points to nothing in this schema (no 'c')"
    )
    draft_07_tuple = {  # `items/0` is `prefixItems/0` once upgraded: refused, never read as the `items` after it
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {
            "pair": {"type": "array", "items": [{"type": "integer"}], "additionalItems": {"type": "string"}},
            "first": {"$ref": "#/properties/pair/items/0"},
        },
    }
    with pytest.raises(SchemaNormalizationError, match=r"^properties\.first: .* \(no '0'\)$"):
        normalize(draft_07_tuple)


def test_inline_refs_refuses_a_pointer_to_a_schema_that_holds_it_as_a_recursive_type():
    tree = {"properties": {"tree": {"type": "array", "items": {"$ref": "#/properties/tree"}}}}
    with pytest.raises(SchemaNormalizationError, match=r"type '#/properties/tree' refers to itself"):
        inline_refs(tree)
    with pytest.raises(SchemaNormalizationError, match=r"type '#' refers to itself"):
        inline_refs({"properties": {"again": {"$ref": "#"}}})


def test_drop_noise_removes_titles_but_keeps_a_property_named_title():
    schema = {
        "title": "Args",
        "type": "object",
        "properties": {"title": {"title": "Title", "type": "string"}},
        "discriminator": {"propertyName": "kind"},
    }
    assert drop_noise(schema) == {"type": "object", "properties": {"title": {"type": "string"}}}


def test_order_keywords_puts_type_first_and_default_last_and_keeps_property_order():
    schema = {"default": 1, "properties": {"zeta": {}, "alpha": {}}, "description": "d", "type": "object"}
    ordered = order_keywords(schema)
    assert list(ordered) == ["type", "description", "properties", "default"]
    assert list(ordered["properties"]) == ["zeta", "alpha"]


def test_normalize_of_a_pydantic_schema_is_self_contained_and_keeps_meaning_keywords():
    from typing import Literal

    from pydantic import BaseModel, Field

    class Offer(BaseModel):
        product: Literal["regup", "regdn"] = Field(description="Which product")
        mw: float = Field(ge=0, le=100, default=5)
        tag: str = Field(pattern="^[a-z]+$", min_length=1, max_length=8)

    class Args(BaseModel):
        offers: list[Offer] = Field(min_length=1)

    normalized = normalize(Args.model_json_schema())
    offer = normalized["properties"]["offers"]["items"]
    assert "$defs" not in normalized and "title" not in repr(normalized)
    assert offer["properties"]["product"] == {
        "type": "string",
        "description": "Which product",
        "enum": ["regup", "regdn"],
    }
    assert offer["properties"]["mw"] == {"type": "number", "minimum": 0, "maximum": 100, "default": 5}
    assert offer["properties"]["tag"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 8,
        "pattern": "^[a-z]+$",
    }
    assert offer["required"] == ["product", "tag"]
    assert normalized["properties"]["offers"]["minItems"] == 1


def test_inline_refs_reads_boolean_definitions_as_the_schemas_they_are():
    schema = {
        "$defs": {"Any": True, "None": False},
        "properties": {
            "a": {"$ref": "#/$defs/Any", "description": "Anything."},
            "b": {"$ref": "#/$defs/None"},
        },
    }
    assert inline_refs(schema)["properties"] == {"a": {"description": "Anything."}, "b": {"not": {}}}


def test_close_objects_closes_what_lists_properties_and_leaves_what_says_otherwise():
    schema = {
        "type": "object",
        "properties": {
            "model": {"type": "object", "properties": {"x": {}}},
            "open": {"type": "object", "properties": {"x": {}}, "additionalProperties": True},
            "mapping": {"type": "object", "additionalProperties": {"type": "integer"}},
            "patterned": {"type": "object", "patternProperties": {"^a": {}}},
            "anything": {"type": "object"},
        },
        "$defs": {"D": {"type": "object", "properties": {}}},
    }
    closed = close_objects(schema)
    assert closed["additionalProperties"] is False
    assert closed["$defs"]["D"]["additionalProperties"] is False
    properties = closed["properties"]
    assert properties["model"]["additionalProperties"] is False
    assert properties["patterned"]["additionalProperties"] is False
    assert properties["open"]["additionalProperties"] is True
    assert properties["mapping"]["additionalProperties"] == {"type": "integer"}
    assert "additionalProperties" not in properties["anything"]


def test_inline_refs_refuses_a_definition_that_is_no_schema_naming_the_ref():
    with pytest.raises(
        SchemaNormalizationError, match=r"^properties.a: \$ref '#/definitions/A' points to 5, not a schema"
    ):
        inline_refs({"definitions": {"A": 5}, "properties": {"a": {"$ref": "#/definitions/A"}}})
