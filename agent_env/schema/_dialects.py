"""Read a schema in the JSON Schema dialect its `$schema` declares (draft-04 to 2020-12), and upgrade it to 2020-12
accepting exactly what it accepted.

MCP reads an `inputSchema` without `$schema` as 2020-12, and most servers publish one; the TypeScript SDK's servers
declare draft-07. The dialects differ in what some keywords mean, and the upgrade rewrites each to its 2020-12
spelling:

- a tuple `items: [...]` is `prefixItems`, and `additionalItems` beside it is `items` (alone, it constrains nothing);
- `dependencies` is `dependentRequired` (a list of names) or `dependentSchemas` (a schema);
- draft-04's boolean `exclusiveMinimum`/`exclusiveMaximum` make `minimum`/`maximum` exclusive: a number in 2020-12;
- draft-04's `id` is `$id`;
- up to draft-07, a `$ref` makes every keyword beside it ignored: those that would start to constrain in 2020-12 are
  dropped (annotations such as `description` and `default` stay, and so do the definitions a `$ref` points into);
- a keyword the declared dialect does not know constrains nothing there (a draft-04 `const`), so it is dropped.

One difference is kept on purpose: draft-04 reads `integer` from the JSON text (`1.0` is not one); 2020-12, like
draft-06 and later, reads the value, and so does agent_env.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_env.schema._walk import SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_VALUES

Schema = dict[str, Any]

# Keywords that constrain an instance (or apply subschemas that do) in at least one dialect. A keyword of this set
# that a dialect does not know is ignored there; left in place, 2020-12 (or jsonschema-rs) would read it.
_BASE = frozenset({
    "$ref", "additionalItems", "additionalProperties", "allOf", "anyOf", "dependencies", "enum", "format", "items",
    "maxItems", "maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum",
    "multipleOf", "not", "oneOf", "pattern", "patternProperties", "properties", "required", "type", "uniqueItems",
    "exclusiveMinimum", "exclusiveMaximum",
})  # fmt: skip
_DRAFT6 = _BASE | {"const", "contains", "propertyNames"}
_DRAFT7 = _DRAFT6 | {"if", "then", "else"}
_DRAFT2019 = (_DRAFT7 - {"dependencies"}) | {
    "dependentRequired", "dependentSchemas", "unevaluatedItems", "unevaluatedProperties", "minContains",
    "maxContains", "$recursiveRef",
}  # fmt: skip
_DRAFT2020 = (_DRAFT2019 - {"additionalItems", "$recursiveRef"}) | {"prefixItems", "$dynamicRef"}
_MEANINGFUL = _DRAFT7 | _DRAFT2019 | _DRAFT2020

# What may stay beside a `$ref` up to draft-07, where the `$ref` makes its siblings ignored: annotations (read as
# annotations in 2020-12 too) and the definitions a `$ref` points into (found by their JSON pointer, not applied).
_BESIDE_REF = frozenset({
    "$ref", "$schema", "$comment", "description", "title", "default", "examples", "deprecated", "readOnly",
    "writeOnly", "definitions", "$defs",
})  # fmt: skip


@dataclass(frozen=True)
class Dialect:
    """A JSON Schema dialect: its name, the `$schema` URI that declares it, and how its keywords read."""

    name: str
    uri: str
    keywords: frozenset[str]
    ref_hides_siblings: bool = False
    boolean_exclusive_bounds: bool = False


DRAFT_04 = Dialect(
    "draft-04",
    "http://json-schema.org/draft-04/schema#",
    _BASE,
    ref_hides_siblings=True,
    boolean_exclusive_bounds=True,
)
DRAFT_06 = Dialect("draft-06", "http://json-schema.org/draft-06/schema#", _DRAFT6, ref_hides_siblings=True)
DRAFT_07 = Dialect("draft-07", "http://json-schema.org/draft-07/schema#", _DRAFT7, ref_hides_siblings=True)
DRAFT_2019_09 = Dialect("2019-09", "https://json-schema.org/draft/2019-09/schema", _DRAFT2019)
DRAFT_2020_12 = Dialect("2020-12", "https://json-schema.org/draft/2020-12/schema", _DRAFT2020)
DIALECTS = (DRAFT_04, DRAFT_06, DRAFT_07, DRAFT_2019_09, DRAFT_2020_12)

_BY_URI = {dialect.uri.split("://", 1)[1].rstrip("#"): dialect for dialect in DIALECTS}


class UnknownDialectError(ValueError):
    """A schema's `$schema` names no dialect agent_env reads, so what its keywords mean is unknown."""

    def __init__(self, declared: Any) -> None:
        names = ", ".join(dialect.name for dialect in DIALECTS)
        super().__init__(
            f"$schema: {declared!r} is not a JSON Schema dialect agent_env reads, so what its keywords mean is "
            f"unknown; declare one of {names} (e.g. {DRAFT_07.uri!r}), or leave $schema out for 2020-12"
        )


def dialect_of(schema: Any) -> Dialect:
    """The dialect `schema` declares with `$schema` (2020-12, MCP's default, when it declares none).

    `http` and `https`, and a trailing `#`, name the same dialect.

    Raises:
        UnknownDialectError: `$schema` names a dialect not in `DIALECTS` (draft-03, a custom metaschema, ...).
    """
    if not isinstance(schema, dict) or "$schema" not in schema:
        return DRAFT_2020_12
    declared = schema["$schema"]
    if isinstance(declared, str):
        scheme, _, rest = declared.strip().partition("://")
        found = _BY_URI.get(rest.rstrip("#")) if scheme in ("http", "https") else None
        if found is not None:
            return found
    raise UnknownDialectError(declared)


def upgrade(schema: Schema) -> Schema:
    """`schema` in 2020-12, from the dialect its `$schema` declares, accepting exactly the instances it accepted.

    A 2020-12 schema is returned as it is; any other loses its `$schema` (2020-12 is the default) and has each
    keyword respelled as the module docstring lists.

    Raises:
        UnknownDialectError: `$schema` names a dialect agent_env does not read.
    """
    dialect = dialect_of(schema)
    if dialect is DRAFT_2020_12:
        return schema
    upgraded = _Upgrade(dialect).schema(schema)
    upgraded.pop("$schema", None)
    return upgraded


# Where each dialect holds subschemas (a keyword it does not know is dropped before these are walked): the places the
# normalizer walks (`_walk`), but for `items` and `prefixItems`, which the upgrade reads by dialect itself.
_SUBSCHEMA_MAPS = SCHEMA_MAPS
_SUBSCHEMA_LISTS = tuple(keyword for keyword in SCHEMA_LISTS if keyword != "prefixItems")
_SUBSCHEMAS = tuple(keyword for keyword in SCHEMA_VALUES if keyword != "items")


class _Upgrade:
    """One upgrade from `dialect`: a walk over the places that dialect reads as schemas."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def schema(self, schema: Any) -> Any:
        """A schema of the dialect in 2020-12."""
        if not isinstance(schema, dict):
            return schema  # a boolean schema means the same in every dialect that allows one
        if self.dialect.ref_hides_siblings and "$ref" in schema:
            schema = {keyword: value for keyword, value in schema.items() if keyword in _BESIDE_REF}
        upgraded: Schema = {}
        for keyword, value in schema.items():
            if (
                keyword not in _MEANINGFUL or keyword in self.dialect.keywords
            ):  # else it constrains nothing there
                upgraded.update(self.keyword(schema, keyword, value))
        return upgraded

    def keyword(self, schema: Schema, keyword: str, value: Any) -> Schema:
        """One keyword of `schema` in its 2020-12 spelling: none, one, or (a tuple `items`) two keywords."""
        if keyword in _SUBSCHEMA_MAPS:
            return {keyword: self.named(value)}
        if keyword in _SUBSCHEMA_LISTS:
            return {keyword: self.each(value)}
        if keyword in _SUBSCHEMAS:
            return {keyword: self.schema(value)}
        if keyword == "items":
            return self.items(schema, value)
        if keyword == "additionalItems":
            return {}  # said with a tuple `items`; beside one schema, or alone, it constrains nothing
        if keyword == "dependencies":
            return self.dependencies(value)
        if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            return self.bound(schema, keyword)
        if keyword == "id" and self.dialect is DRAFT_04 and isinstance(value, str):
            return {"$id": value}
        return {keyword: value}

    def each(self, schemas: Any) -> Any:
        return [self.schema(item) for item in schemas] if isinstance(schemas, list) else schemas

    def named(self, schemas: Any) -> Any:
        if not isinstance(schemas, dict):
            return schemas
        return {name: self.schema(item) for name, item in schemas.items()}

    def items(self, schema: Schema, value: Any) -> Schema:
        """`items`: one schema for every item, or (a list) a tuple, with `additionalItems` for the items after it."""
        if not isinstance(value, list):
            return {"items": self.schema(value)}
        tuple_items: Schema = {"prefixItems": self.each(value)}
        if "additionalItems" in schema:
            tuple_items["items"] = self.schema(schema["additionalItems"])
        return tuple_items

    def dependencies(self, value: Any) -> Schema:
        """`dependencies`, split: lists of names are `dependentRequired`, schemas `dependentSchemas`."""
        if not isinstance(value, dict):
            return {}
        required = {name: names for name, names in value.items() if isinstance(names, list)}
        schemas = {name: self.schema(sub) for name, sub in value.items() if not isinstance(sub, list)}
        return {
            **({"dependentRequired": required} if required else {}),
            **({"dependentSchemas": schemas} if schemas else {}),
        }

    def bound(self, schema: Schema, keyword: str) -> Schema:
        """A bound; in draft-04, `minimum` beside `"exclusiveMinimum": true` is 2020-12's `exclusiveMinimum`, and the
        boolean itself says nothing more (or, false or alone, nothing at all)."""
        if not self.dialect.boolean_exclusive_bounds:
            return {keyword: schema[keyword]}
        if keyword.startswith("exclusive"):
            return {} if isinstance(schema[keyword], bool) else {keyword: schema[keyword]}
        exclusive = "exclusive" + keyword[0].upper() + keyword[1:]
        return {exclusive if schema.get(exclusive) is True else keyword: schema[keyword]}
