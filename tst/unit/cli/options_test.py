"""`agent_env/cli/_options.py`: what the commands share."""

from __future__ import annotations

import pytest

from agent_env.cli._options import parse_config


def test_config_values_parse_as_json_when_they_can():
    assert parse_config(["a=1", "b=desk-v4", "c=[1, 2]", "d=true", "e="]) == {
        "a": 1, "b": "desk-v4", "c": [1, 2], "d": True, "e": "",
    }  # fmt: skip


def test_a_config_that_is_not_key_value_is_refused_with_an_example():
    with pytest.raises(ValueError, match=r"config 'x' is not key=value \(for example bundle=desk-v4\)"):
        parse_config(["x"])
