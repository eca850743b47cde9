"""The command line imports only what the `cli` extra declares (with the `trl` extra it pulls in), and never TRL."""

from __future__ import annotations

import textwrap

from tst.unit.imports_test import imported_top_level_modules, undeclared


def test_help_imports_nothing_heavy():
    modules = imported_top_level_modules("from agent_env.cli import app")
    assert not modules & {"transformers", "torch", "trl", "matplotlib", "mcp", "uvicorn", "numpy"}


def test_the_commands_at_work_import_only_what_the_cli_extra_declares(tmp_path):
    """Run where torch is missing, as the cli extra does not bring it (transformers imports it when it is there)."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["torch"] = None  # as where torch is not installed: transformers then never imports it
        from typer.testing import CliRunner
        from agent_env.cli import app
        runner = CliRunner()
        for arguments in (["tools"], ["render"], ["check", "-t", "qwen3"],
                          ["rollout", "--episodes", "1", "--plot", {str(tmp_path / "day.png")!r}]):
            result = runner.invoke(app, arguments)
            assert result.exit_code == 0, result.output
        """
    )
    modules = imported_top_level_modules(code)
    assert {"transformers", "matplotlib", "rich"} <= modules
    assert "trl" not in modules  # its templates are read as files
    assert undeclared(modules - {"torch"}, ("cli",)) == set()
