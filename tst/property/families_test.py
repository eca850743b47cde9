"""Lowering loses nothing, for drawn schemas: every keyword of a published schema reaches the model under Gemma 4's
and gpt-oss's own templates once lowered, and under nemotron's as it stands (the lossless verdict, through the real
`apply_chat_template`)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_env.schema import check_schema
from agent_env.training.families import family_of
from agent_env.training.fidelity import tool_fidelity
from agent_env.training.templates import resolve_template

from ._strategies import const_schemas, published_schemas
from .conftest import PROPERTY, TRIED

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,16}", fullmatch=True)
DESCRIPTIONS = st.sampled_from(["", "Does the thing.", "Line one.\nLine two."])


TEMPLATES = ["gemma4", "gemma4_v3", "gptoss", "nemotron_3_nano"]


@pytest.mark.parametrize("name", TEMPLATES)
@PROPERTY
@given(name_=NAMES, description=DESCRIPTIONS, schema=published_schemas())
def test_every_keyword_of_a_drawn_schema_reaches_the_model(name, name_, description, schema):
    assert_lossless(name, name_, description, schema, "schemas")


@pytest.mark.parametrize("name", TEMPLATES)
@PROPERTY
@given(name_=NAMES, description=DESCRIPTIONS, schema=const_schemas())
def test_every_const_of_every_json_type_at_every_depth_reaches_the_model(name, name_, description, schema):
    assert_lossless(name, name_, description, schema, "schemas with consts")


def assert_lossless(name: str, name_: str, description: str, schema: dict[str, Any], kind: str) -> None:
    published: dict[str, Any] = {"name": name_, "description": description, "inputSchema": schema}
    check_schema(published["inputSchema"])
    template = resolve_template(name)
    verdict = tool_fidelity(template, published, family_of(template.text))
    TRIED[f"families/{name}: {kind} judged"] += 1
    TRIED[f"families/{name}: keywords tried"] += verdict.tested
    assert verdict.status in ("exact", "lossless"), (verdict.status, verdict.lost, verdict.error)
