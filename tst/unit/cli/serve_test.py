"""`agent-env serve module:Class` finds `module` in the working directory, as `tools`, `render` and `check` do."""

from __future__ import annotations

import sys
import textwrap
from typing import Any

import pytest
import uvicorn

ENVIRONMENT = '''
from agent_env import Environment, tool


class Counter(Environment):
    def reset(self, **row):
        self.count = 0
        return "count"

    def reward(self):
        return float(self.count)

    @tool
    def add(self) -> int:
        """Add one."""
        self.count += 1
        return self.count
'''


@pytest.fixture
def in_module_folder(tmp_path, monkeypatch) -> str:
    """A folder holding `serve_probe_counter.py`, as the working directory, with sys.path and modules restored."""
    module = "serve_probe_counter"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(ENVIRONMENT))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, module, raising=False)
    yield module
    sys.modules.pop(module, None)


def test_serve_finds_a_module_in_the_working_directory(invoke, in_module_folder, monkeypatch):
    served: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.update(app=app, **options))
    result = invoke("serve", f"{in_module_folder}:Counter", "--port", "9002")
    assert result.exit_code == 0, result.output
    assert served["port"] == 9002 and served["app"] is not None


def test_tools_finds_the_same_module(invoke, in_module_folder):
    result = invoke("tools", f"{in_module_folder}:Counter", "--json")
    assert result.exit_code == 0, result.output
    assert '"name": "add"' in result.output
