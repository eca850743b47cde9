"""The `--mcp` values a command takes (`agent_env/inspection/targets.py`): one server as a command line or a URL, or
several as `NAME=COMMAND|URL`, refused with a one-line reason when they name no server."""

from __future__ import annotations

import pytest

from agent_env.inspection.targets import environment_reference, header_values, mcp_servers
from agent_env.mcp import HttpServer, StdioServer


class TestOneServer:
    def test_a_command_line_is_split_as_a_shell_would(self) -> None:
        assert mcp_servers(["node 'my tools/index.js' {episode_dir}"]) == StdioServer(
            "node", ["my tools/index.js", "{episode_dir}"]
        )

    def test_a_url_is_an_http_server(self) -> None:
        assert mcp_servers(["http://127.0.0.1:3001/mcp?key=a=b"]) == HttpServer(
            "http://127.0.0.1:3001/mcp?key=a=b"
        )

    def test_env_sets_a_servers_variables_as_in_a_shell(self) -> None:
        # --mcp takes no env=: POSIX `env` sets them, {episode_dir} included
        assert mcp_servers(["env MEMORY_FILE_PATH={episode_dir}/memory.jsonl node index.js"]) == StdioServer(
            "env", ["MEMORY_FILE_PATH={episode_dir}/memory.jsonl", "node", "index.js"]
        )

    def test_one_named_server_is_keyed_by_its_name(self) -> None:
        assert mcp_servers(["graph=node index.js"]) == {"graph": StdioServer("node", ["index.js"])}


class TestSeveralServers:
    def test_each_named_server_is_keyed_by_its_name(self) -> None:
        assert mcp_servers(["graph=node index.js", "clock=http://127.0.0.1:3001/mcp"]) == {
            "graph": StdioServer("node", ["index.js"]),
            "clock": HttpServer("http://127.0.0.1:3001/mcp"),
        }

    def test_an_unnamed_one_among_several_is_refused_showing_how_to_name_them(self) -> None:
        with pytest.raises(ValueError) as refused:
            mcp_servers(["graph=node index.js", "uvx mcp-server-time"])
        assert str(refused.value).startswith(
            "--mcp 'uvx mcp-server-time': with several servers, name each one (--mcp memory='node index.js'"
        )

    def test_a_name_given_twice_is_refused(self) -> None:
        with pytest.raises(ValueError, match="--mcp names server 'graph' twice"):
            mcp_servers(["graph=node a.js", "graph=node b.js"])


class TestNoServer:
    @pytest.mark.parametrize("value", ["", "   "])
    def test_an_empty_value_names_no_server(self, value: str) -> None:
        with pytest.raises(ValueError, match="an empty command line names no MCP server"):
            mcp_servers([value])

    @pytest.mark.parametrize("values", [["graph="], ["graph=  "], ["clock=node a.js", "graph="]])
    def test_a_name_without_a_command_is_refused_naming_it(self, values: list[str]) -> None:
        with pytest.raises(
            ValueError, match=r"--mcp 'graph=.*' names server 'graph' but no command or URL after '='"
        ):
            mcp_servers(values)


class TestHeaders:
    def test_headers_go_to_every_url_and_not_to_commands(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("MCP_TOKEN", "s3cret")
        servers = mcp_servers(
            ["graph=node index.js", "clock=http://127.0.0.1:3001/mcp"],
            ["Authorization: Bearer ${MCP_TOKEN}", "X-Team:  tools "],
        )
        assert servers == {
            "graph": StdioServer("node", ["index.js"]),
            "clock": HttpServer(
                "http://127.0.0.1:3001/mcp", headers={"Authorization": "Bearer s3cret", "X-Team": "tools"}
            ),
        }

    def test_only_braced_variables_are_read_and_other_dollars_kept(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("KEY", "k")
        assert header_values(["X-Key: $KEY-${KEY}-$"]) == {"X-Key": "$KEY-k-$"}

    @pytest.mark.parametrize("value", [None, "", "  "])
    def test_an_unset_or_empty_variable_is_refused_by_name(
        self, monkeypatch: pytest.MonkeyPatch, value: str | None
    ) -> None:
        if value is None:
            monkeypatch.delenv("MCP_TOKEN", raising=False)
        else:
            monkeypatch.setenv("MCP_TOKEN", value)
        with pytest.raises(ValueError) as refused:
            header_values(["Authorization: Bearer ${MCP_TOKEN}"])
        assert str(refused.value) == (
            "--mcp-header 'Authorization' reads ${MCP_TOKEN}, but the environment variable MCP_TOKEN is not set (or "
            "empty): export MCP_TOKEN=... before running the command"
        )

    @pytest.mark.parametrize("value", ["s3cret", ": s3cret", "Bad Name: s3cret"])
    def test_a_value_without_a_header_name_is_refused_without_showing_it(self, value: str) -> None:
        with pytest.raises(ValueError, match=r"--mcp-header takes 'NAME: VALUE'") as refused:
            header_values([value])
        assert "s3cret" not in str(refused.value)

    def test_a_header_named_twice_is_refused(self) -> None:
        with pytest.raises(ValueError, match="--mcp-header names header 'authorization' twice"):
            header_values(["Authorization: a", "authorization: b"])

    def test_a_line_break_from_a_variable_is_refused_without_showing_it(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("MCP_TOKEN", "s3cret\r\nX-Evil: 1")
        with pytest.raises(ValueError, match="'Authorization': its value holds a line break") as refused:
            header_values(["Authorization: Bearer ${MCP_TOKEN}"])
        assert "s3cret" not in str(refused.value)

    @pytest.mark.parametrize(("target", "mcp"), [(None, ["node index.js"]), (None, []), ("gridsim-desk", [])])
    def test_headers_with_no_url_to_go_to_are_refused(self, target: str | None, mcp: list[str]) -> None:
        with pytest.raises(ValueError, match=r"--mcp-header applies to --mcp URLs only \(http://...\)"):
            environment_reference(target, mcp, ["Authorization: Bearer s3cret"])
