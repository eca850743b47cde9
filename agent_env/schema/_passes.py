"""Normalize a JSON Schema into the compact, self-contained form that tools publish, as a list of pure passes."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any
from urllib.parse import unquote

from agent_env.schema._applicable import drop_what_cannot_apply
from agent_env.schema._check import MAX_SCHEMA_DEPTH, schema_place, too_deep
from agent_env.schema._describe import short
from agent_env.schema._dialects import UnknownDialectError, upgrade
from agent_env.schema._errors import SchemaNormalizationError
from agent_env.schema._walk import Schema, Steps, map_subschemas, map_subschemas_at

MAX_SCHEMA_NODES = 10_000
"""The most subschemas a schema may have once its refs are inlined: refs that each use the next twice double at
every level, and a schema this big would not fit a prompt anyway (the desk's largest tools have 20)."""

# Annotations that cost the model tokens and tell it nothing: pydantic's generated titles, OpenAPI's discriminator
# (its mapping points into `$defs`, which are gone once refs are inlined), and the dialect marker.
_NOISE = frozenset({"title", "discriminator", "$schema", "$id", "$comment", "examples"})

# The order keywords are written in, so a schema reads top-down: what it is, what it means, what it holds.
_ORDER = (
    "type",
    "description",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "prefixItems",
    "items",
    "minItems",
    "maxItems",
    "anyOf",
    "oneOf",
    "allOf",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "default",
)
_RANK = {keyword: rank for rank, keyword in enumerate(_ORDER)}


def inline_refs(schema: Schema) -> Schema:
    """Inline every local `$ref` (`#/$defs/...`, or a JSON pointer anywhere in the schema, `#/properties/done`, as
    zod-to-json-schema writes a reused type) and drop `$defs`; refuse a recursive type, which cannot be inlined, and
    a schema whose refs inline to more than `MAX_SCHEMA_DEPTH` levels or `MAX_SCHEMA_NODES` subschemas."""
    definitions: dict[str, Any] = {}
    for keyword in ("definitions", "$defs"):
        if isinstance(schema.get(keyword), dict):
            definitions.update(schema[keyword])
    root = {keyword: value for keyword, value in schema.items() if keyword not in ("$defs", "definitions")}
    return _Inliner(definitions, schema).inline(root, (), ())


_ANNOTATIONS = frozenset(
    {"description", "default", "title", "examples", "deprecated", "readOnly", "writeOnly"}
)


class _Inliner:
    """One inlining of refs, counting the subschemas it writes so that refs that multiply stop at a clear error."""

    def __init__(self, definitions: dict[str, Any], document: Schema) -> None:
        self.definitions = definitions
        self.document = document
        self.nodes = 0
        self.outermost_ref: Steps = ()

    def inline(self, schema: Schema, seen: tuple[str, ...], path: Steps) -> Schema:
        """`schema`, found at `path` while inlining the definitions in `seen`, with its refs inlined."""
        self.nodes += 1
        if len(path) > MAX_SCHEMA_DEPTH:
            raise SchemaNormalizationError(too_deep(path, " once its $refs are inlined"))
        if self.nodes > MAX_SCHEMA_NODES:
            raise SchemaNormalizationError(
                f"{schema_place(self.outermost_ref if seen else path)}: more than {MAX_SCHEMA_NODES:,} subschemas "
                "once its $refs are inlined; make the types it refers to smaller"
            )
        dynamic = next((keyword for keyword in ("$dynamicRef", "$recursiveRef") if keyword in schema), None)
        if dynamic is not None:
            raise SchemaNormalizationError(
                f"{schema_place(path)}: {dynamic} refers to a type that can refer to itself, and a recursive type "
                "cannot be inlined into a self-contained schema",
                authors_fix="use a non-recursive type",
            )
        if "$ref" not in schema:
            return map_subschemas_at(schema, lambda sub, steps: self.inline(sub, seen, (*path, *steps)))
        if not seen:
            self.outermost_ref = path
        resolved = self.inline(
            self._definition(schema["$ref"], seen, path), (*seen, _name(schema["$ref"], path)), path
        )
        siblings = map_subschemas_at(
            {keyword: value for keyword, value in schema.items() if keyword != "$ref"},
            lambda sub, steps: self.inline(sub, seen, (*path, *steps)),
        )
        if _interfere(siblings.keys() - _ANNOTATIONS, resolved.keys()):
            return {"allOf": [resolved], **siblings}  # keep both apart, as 2020-12 reads them
        return {**resolved, **siblings}

    def _definition(self, reference: Any, seen: tuple[str, ...], path: Steps) -> Schema:
        """The definition a `$ref` at `path` points to, as an object schema; refusing what cannot be inlined."""
        name = _name(reference, path)
        if name == reference:  # a pointer elsewhere in the document
            definition = self._pointed(reference, path)
        elif name in self.definitions:
            definition = self.definitions[name]
        else:
            raise SchemaNormalizationError(
                f"{schema_place(path)}: $ref {reference!r} does not point into this schema's $defs"
            )
        if name in seen:
            raise SchemaNormalizationError(
                f"{schema_place(path)}: type {name!r} refers to itself, and a recursive type cannot be inlined into a "
                "self-contained schema",
                authors_fix="use a non-recursive type (nest a fixed number of levels), or give the tool an explicit "
                "input_schema that stops at a fixed depth (a $ref to itself is refused there too)",
            )
        if len(seen) >= MAX_SCHEMA_DEPTH:
            raise SchemaNormalizationError(
                f"{schema_place(path)}: $refs lead to $refs more than {MAX_SCHEMA_DEPTH} deep"
            )
        if isinstance(definition, bool):  # `true` is the empty schema, `false` the one nothing is valid under
            return {} if definition else {"not": {}}
        if not isinstance(definition, dict):
            raise SchemaNormalizationError(
                f"{schema_place(path)}: $ref {reference!r} points to {short(definition)}, not a schema"
            )
        return definition

    def _pointed(self, reference: str, path: Steps) -> Any:
        """What the JSON pointer `reference` (`#/properties/done`) points to in the whole document.

        The document is in 2020-12 by now; a pointer into a keyword the upgrade respelled (a draft-07 tuple
        `items/0`, `dependencies`) finds nothing, and is refused rather than read as another keyword.
        """
        target: Any = self.document
        for token in reference[2:].split("/") if reference != "#" else ():
            step = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and step in target:
                target = target[step]
            elif isinstance(target, list) and step.isdigit() and int(step) < len(target):
                target = target[int(step)]
            else:
                raise SchemaNormalizationError(
                    f"{schema_place(path)}: $ref {reference!r} points to nothing in this schema (no {step!r})"
                )
        return target


# Keywords that read their neighbours in the same schema object: `additionalProperties` applies to the properties
# that `properties` and `patternProperties` beside it do not name, `items` to the items after `prefixItems`, and so
# on. Merged into one object with the referenced schema, a $ref's sibling would see the definition's neighbours.
_NEIGHBOURS = (
    frozenset({"properties", "patternProperties", "additionalProperties"}),
    frozenset({"prefixItems", "items"}),
    frozenset({"contains", "minContains", "maxContains"}),
    frozenset({"if", "then", "else"}),
)


def _interfere(constraining: Collection[str], resolved: Collection[str]) -> bool:
    """Whether a $ref's constraining siblings would change meaning if merged into the schema it resolves to."""
    if set(constraining) & set(resolved):
        return True
    return any(group & set(constraining) and group & set(resolved) for group in _NEIGHBOURS)


def _name(reference: Any, path: Steps) -> str:
    """The definition a `#/$defs/NAME` ref names, or, for a pointer anywhere else in the document, the ref itself."""
    for prefix in ("#/$defs/", "#/definitions/"):
        if (
            isinstance(reference, str)
            and reference.startswith(prefix)
            and "/" not in reference[len(prefix) :]
        ):
            return reference[len(prefix) :].replace("~1", "/").replace("~0", "~")
    if isinstance(reference, str) and (reference == "#" or reference.startswith("#/")):
        return reference
    raise SchemaNormalizationError(
        f"{schema_place(path)}: $ref {reference!r} is not local; only '#/$defs/...' references can be inlined"
    )


def close_objects(schema: Schema) -> Schema:
    """Say `"additionalProperties": false` on every object schema that lists properties and says nothing of other
    keys: what pydantic's default (`extra="ignore"`) would drop without a word is refused instead, and shown so."""
    lists_keys = "properties" in schema or "patternProperties" in schema
    if lists_keys and not {"additionalProperties", "unevaluatedProperties"} & schema.keys():
        schema = {**schema, "additionalProperties": False}
    return map_subschemas(schema, close_objects)


def drop_noise(schema: Schema) -> Schema:
    """Drop generated titles and other annotations that carry no meaning for the model."""
    kept = {keyword: value for keyword, value in schema.items() if keyword not in _NOISE}
    return map_subschemas(kept, drop_noise)


def order_keywords(schema: Schema) -> Schema:
    """Write keywords in a fixed, readable order: type first, then meaning, contents, bounds, default last."""
    ordered = dict(sorted(schema.items(), key=lambda item: (_RANK.get(item[0], len(_ORDER)), item[0])))
    return map_subschemas(ordered, order_keywords)


def upgrade_dialect(schema: Schema) -> Schema:
    """`schema` in 2020-12, from the dialect its `$schema` declares, accepting the same instances
    (`agent_env.schema._dialects`); refuse a `$schema` that names a dialect agent_env does not read."""
    try:
        return upgrade(schema)
    except UnknownDialectError as unknown:
        raise SchemaNormalizationError(str(unknown)) from None


PASSES: tuple[Callable[[Schema], Schema], ...] = (
    upgrade_dialect,
    inline_refs,
    drop_what_cannot_apply,
    drop_noise,
    order_keywords,
)


def normalize(schema: Schema) -> Schema:
    """Run every pass over `schema`: the compact, self-contained 2020-12 form that is published, accepting what
    `schema` accepts in the dialect it declares.

    `schema` is one `check_schema` passed: a pass walks it without checking it again.
    """
    for normalization_pass in PASSES:
        schema = normalization_pass(schema)
    return schema
