"""Schemas as hypothesis-jsonschema reads them: it knows draft 7, and the published schemas are 2020-12."""

from __future__ import annotations

from typing import Any


def generation_schema(schema: Any) -> Any:
    """`schema` as draft 7 says it: 2020-12's `prefixItems` (and the `items` after them) as an `items` array and
    `additionalItems`, and a `$ref` with keywords beside it as an `allOf` of the two, which 2020-12 reads the same."""
    if isinstance(schema, list):
        return [generation_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    rewritten = {key: generation_schema(value) for key, value in schema.items()}
    if (
        "$ref" in rewritten and len(rewritten) > 1
    ):  # the same, in 2020-12; hypothesis-jsonschema merges siblings
        rewritten = {"allOf": [{"$ref": rewritten.pop("$ref")}], **rewritten}
    if "prefixItems" in rewritten:
        rewritten["additionalItems"] = rewritten.pop("items", True)
        rewritten["items"] = rewritten.pop("prefixItems")
    return rewritten
