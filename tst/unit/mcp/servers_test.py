"""What an MCP server is to agent_env (`agent_env/mcp/_servers.py`): a command or a URL as data, its `{episode_dir}`
placeholder checked when it is described and filled in per episode, and how messages name it."""

from __future__ import annotations

import pickle

import pytest

from agent_env.mcp import HttpServer, MCPEnvironment, StdioServer, server_from_text


class TestPlaceholders:
    def test_episode_dir_is_filled_in_args_env_and_cwd(self) -> None:
        server = StdioServer(
            "node",
            ["index.js", "{episode_dir}"],
            env={"MEMORY_FILE_PATH": "{episode_dir}/memory.jsonl", "MODE": "test"},
            cwd="{episode_dir}",
        )
        assert server.per_episode_dir
        assert server.resolved("/tmp/e1") == (
            ["index.js", "/tmp/e1"],
            {"MEMORY_FILE_PATH": "/tmp/e1/memory.jsonl", "MODE": "test"},
            "/tmp/e1",
        )

    def test_a_server_without_the_placeholder_needs_no_folder(self) -> None:
        server = StdioServer("mcp-server-time", ["--local-timezone", "Etc/UTC"])
        assert not server.per_episode_dir
        assert server.resolved(None) == (["--local-timezone", "Etc/UTC"], {}, None)

    def test_a_doubled_brace_is_a_literal_one(self) -> None:
        server = StdioServer("server", ["--config", '{{"root": "{episode_dir}"}}'])
        assert server.resolved("/tmp/e1")[0] == ["--config", '{"root": "/tmp/e1"}']

    @pytest.mark.parametrize(
        ("where", "message"),
        [
            ({"args": ["{workdir}"]}, "'{workdir}' names {workdir}; the only placeholder is {episode_dir}"),
            ({"env": {"ROOT": "{episode_dir}/{run}"}}, "names {run}; the only placeholder is {episode_dir}"),
            ({"cwd": "{home}"}, "names {home}; the only placeholder is {episode_dir}"),
            (
                {"args": ['{"a": 1}']},
                'names {"a"}; the only placeholder is {episode_dir} (write a literal brace',
            ),
            (
                {"args": ["{episode_dir"]},
                "'{episode_dir' is not a valid template (expected '}' before end of string)",
            ),
        ],
    )
    def test_any_other_braces_are_refused_when_the_server_is_described(
        self, where: dict[str, object], message: str
    ) -> None:
        with pytest.raises(ValueError) as refused:
            StdioServer("server", **where)  # type: ignore[arg-type]
        assert message in str(refused.value)
        assert str(refused.value).startswith("MCP server 'server")


class TestDescribing:
    def test_args_given_as_one_string_are_refused_pointing_to_parse(self) -> None:
        with pytest.raises(
            ValueError, match=r"args must be a list of strings, not one string \('index.js --x'\)"
        ):
            StdioServer("node", "index.js --x")  # type: ignore[arg-type]

    @pytest.mark.parametrize("command", ["", "   ", None])
    def test_a_server_needs_a_command(self, command: object) -> None:
        with pytest.raises(ValueError, match="StdioServer needs a command to run"):
            StdioServer(command)  # type: ignore[arg-type]

    def test_args_are_kept_as_strings_and_the_server_stays_equal_after_pickling(self) -> None:
        server = StdioServer("node", ["index.js", 3], env={"A": "1"})  # type: ignore[list-item]
        assert server.args == ("index.js", "3")
        assert pickle.loads(pickle.dumps(server)) == server

    def test_parse_splits_a_command_line_as_a_shell_would(self) -> None:
        server = StdioServer.parse("node 'my server/index.js' --root \"/tmp/a b\"", shared=True)
        assert (server.command, server.args, server.shared) == (
            "node",
            ("my server/index.js", "--root", "/tmp/a b"),
            True,
        )

    def test_parse_refuses_an_empty_command_line(self) -> None:
        with pytest.raises(ValueError, match="an empty command line names no MCP server"):
            StdioServer.parse("  ")

    @pytest.mark.parametrize("url", ["ftp://host/mcp", "127.0.0.1:3001/mcp", "http://", None])
    def test_an_http_server_needs_an_http_url(self, url: object) -> None:
        with pytest.raises(ValueError, match="HttpServer needs an http:// or https:// URL"):
            HttpServer(url)  # type: ignore[arg-type]

    def test_a_token_is_sent_as_a_bearer_header_and_never_shown(self) -> None:
        server = HttpServer("https://tools.example/mcp", headers={"X-Team": "a"}, token="s3cret")
        assert server.request_headers() == {"X-Team": "a", "Authorization": "Bearer s3cret"}
        assert "s3cret" not in repr(server) and "s3cret" not in server.label
        assert not server.shared

    def test_header_values_are_never_shown_but_still_sent_compared_and_pickled(self) -> None:
        server = HttpServer("https://tools.example/mcp", headers={"Authorization": "Bearer s3cret"})
        assert repr(server) == (
            "HttpServer(url='https://tools.example/mcp', headers={'Authorization': '***'}, name=None)"
        )
        assert "s3cret" not in repr(MCPEnvironment(server))
        assert server.request_headers() == {"Authorization": "Bearer s3cret"}
        assert server != HttpServer("https://tools.example/mcp", headers={"Authorization": "Bearer other"})
        assert pickle.loads(pickle.dumps(server)).headers == {"Authorization": "Bearer s3cret"}


class TestLabels:
    def test_a_name_is_the_label(self) -> None:
        assert StdioServer("node", ["index.js"], name="memory").label == "memory"

    def test_a_short_command_line_is_the_label_without_the_commands_folders(self) -> None:
        assert StdioServer("/usr/local/bin/node", ["index.js", "/tmp"]).label == "node index.js /tmp"

    def test_a_long_command_line_shows_its_end(self) -> None:
        script = "/home/user/project/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
        label = StdioServer("node", [script]).label
        assert label == "node ...odules/@modelcontextprotocol/server-memory/dist/index.js"
        assert len(label) <= 64

    def test_a_url_is_labelled_by_host_port_and_path_never_its_query(self) -> None:
        assert HttpServer("http://127.0.0.1:3001/mcp?key=abc").label == "127.0.0.1:3001/mcp"
        assert HttpServer("https://tools.example/mcp").label == "tools.example/mcp"


class TestFromText:
    def test_a_url_is_an_http_server(self) -> None:
        assert server_from_text(" http://127.0.0.1:3001/mcp ") == HttpServer("http://127.0.0.1:3001/mcp")

    def test_anything_else_is_a_command(self) -> None:
        assert server_from_text("uvx mcp-server-time") == StdioServer("uvx", ["mcp-server-time"])
