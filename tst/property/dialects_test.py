"""Upgrading a dialect keeps meaning: for every tool schema real MCP servers list (`tst/data/mcp/`, draft-07 and
2020-12) and for hand-written draft-04/06/07 and 2019-09 schemas (`tst/data/dialects.py`), the normalized (2020-12)
schema accepts exactly the instances the original accepts under its own dialect's validator.

Instances are drawn from the original and from the normalized schema (hypothesis-jsonschema), then each is also
changed in one place (a value replaced, a key dropped or added, an item added or dropped), so near misses deep in
the arguments are tried as well as valid ones; random JSON is tried too. The reference `jsonschema` judges the
original (with the validator its `$schema` names) and the normalized schema, and the compiled validator the tools
use must agree on the normalized one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError, validators

from agent_env.schema import check_schema, normalize, validator_for
from tst.data.dialects import DECLARED
from tst.unit.schema.dialects_test import listed_tools, own_validator

from ._strategies import JSON
from .conftest import PROPERTY, TRIED
from .normalize_test import drawn_from

SERVERS = {
    server: [tool["inputSchema"] for label, tool in listed_tools() if label.startswith(f"{server}/")]
    for server in sorted({label.split("/")[0] for label, _ in listed_tools()})
}
FEWER = settings(PROPERTY, max_examples=25)
"""Per hand-written schema: each is small, and its own examples seed the instances tried."""


@st.composite
def near_miss(draw: st.DrawFn, instance: Any) -> Any:
    """`instance` changed in one place, chosen anywhere in it: a value replaced with random JSON, a key dropped or
    added, an item dropped or added."""
    places: list[tuple[Any, ...]] = []

    def collect(value: Any, path: tuple[Any, ...]) -> None:
        places.append(path)
        children = (
            value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        )
        for key, child in children:
            collect(child, (*path, key))

    collect(instance, ())
    path = draw(st.sampled_from(places))
    changed = json.loads(json.dumps(instance))  # a copy
    holder, target = None, changed
    for step in path:
        holder, target = target, target[step]
    how = draw(st.sampled_from(["replace", "drop", "add"]))
    if how == "add" and isinstance(target, dict):
        target[draw(st.sampled_from(["a", "name", "extra", "from"]))] = draw(JSON)
    elif how == "add" and isinstance(target, list):
        target.insert(draw(st.integers(0, len(target))), draw(JSON))
    elif how == "drop" and isinstance(target, dict | list) and target:
        del target[
            draw(st.sampled_from(list(target.keys()) if isinstance(target, dict) else range(len(target))))
        ]
    elif holder is None:
        return draw(JSON)
    else:
        holder[path[-1]] = draw(JSON)
    return changed


@st.composite
def drawn(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    """An instance hypothesis-jsonschema draws from `schema`, or random JSON where it cannot read the schema (it
    fails on a property named `$ref`, for one)."""
    try:
        return draw(drawn_from(schema))
    except Exception:
        return draw(JSON)


def instances(schema: dict[str, Any], seeds: list[Any] = ()) -> st.SearchStrategy[Any]:
    """Instances drawn from `schema` (as declared and normalized) and `seeds`, each also changed in one or two
    places, and random JSON."""
    valid = st.one_of(drawn(schema), drawn(normalize(schema)), *([st.sampled_from(seeds)] if seeds else []))
    return st.one_of(valid, valid.flatmap(near_miss), valid.flatmap(near_miss).flatmap(near_miss), JSON)


def _ascii_pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not re.search(pattern, instance, re.ASCII):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def ecma_patterns(validator: Any) -> Any:
    r"""`validator` reading `pattern` as JSON Schema's ECMA-262 does and the tools' validator (jsonschema-rs) does:
    `\d` and `\w` are ASCII, where Python's `re` takes any Unicode digit (U+0660, ARABIC-INDIC DIGIT ZERO, for
    figma-developer-mcp's `\d+`). `re.ASCII` makes `\s` ASCII too, which ECMA-262's is not: no listed pattern
    has one."""
    return validators.extend(type(validator), {"pattern": _ascii_pattern})(validator.schema)


def agree(schema: dict[str, Any], instance: Any, kind: str) -> None:
    """The normalized schema (judged by the reference validator and by the tools' own) accepts `instance` exactly
    when `schema` does under its own dialect."""
    normalized = normalize(schema)
    check_schema(normalized)
    expected = ecma_patterns(own_validator(schema)).is_valid(instance)
    TRIED[f"dialects/{kind}: {'valid' if expected else 'invalid'} instances"] += 1
    reference = ecma_patterns(Draft202012Validator(normalized))
    assert reference.is_valid(instance) == expected, (schema, normalized, instance)
    assert validator_for(normalized)._validator.is_valid(instance) == expected, (normalized, instance)


@pytest.mark.parametrize("server", SERVERS)
@PROPERTY
@given(data=st.data())
def test_a_real_servers_schemas_accept_once_normalized_exactly_what_they_accepted(server, data):
    schema = data.draw(st.sampled_from(SERVERS[server]))
    for _ in range(3):
        agree(schema, data.draw(instances(schema)), server)


@pytest.mark.parametrize("case", DECLARED, ids=[case.label for case in DECLARED])
@FEWER
@given(data=st.data())
def test_a_hand_written_schema_accepts_once_normalized_exactly_what_it_accepted(case, data):
    for _ in range(3):
        agree(case.schema, data.draw(instances(case.schema, [*case.accepted, *case.refused])), "hand-written")
