"""MCP servers over streamable HTTP: `@modelcontextprotocol/server-everything` in its own HTTP mode, and the Python
`mcp-server-time` behind `mcp-proxy`. Each episode is an MCP session of its own, and every kind of content a tool
answers (text, structured, images, embedded resources, resource links) reaches the model named, never dropped."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from agent_env import AgentEnv
from agent_env.mcp import HttpServer
from tst.mcp.conftest import NODE, node_server, python_server

Make = Callable[..., AgentEnv]


class Running:
    """A server process on a free port, its output collected."""

    def __init__(self, command: list[str], port: int, env: dict[str, str] | None = None) -> None:
        self.port = port
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        threading.Thread(target=self._collect, daemon=True).start()
        deadline = time.monotonic() + 30
        while not _listening(port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} did not start: {''.join(self.lines)}")
            time.sleep(0.05)

    def _collect(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def stop(self) -> None:
        os.killpg(self.process.pid, 9)
        self.process.wait()


@pytest.fixture(scope="module")
def everything() -> Iterator[Running]:
    """server-everything serving streamable HTTP at /mcp (its `streamableHttp` mode) on a free port."""
    port = _free_port()
    server = Running([NODE, node_server("server-everything"), "streamableHttp"], port, {"PORT": str(port)})
    yield server
    server.stop()


@pytest.fixture(scope="module")
def proxied_time() -> Iterator[Running]:
    """The Python `mcp-server-time` over stdio, served as streamable HTTP by `mcp-proxy` on a free port."""
    port = _free_port()
    command = [python_server("mcp-proxy"), "--port", str(port), "--", python_server("mcp-server-time")]
    server = Running(command, port)
    yield server
    server.stop()


def test_each_episode_is_an_mcp_session_of_its_own(environments: Make, everything: Running) -> None:
    before = _sessions(everything)
    env = environments(AgentEnv.mcp, HttpServer(f"http://127.0.0.1:{everything.port}/mcp"), warm=0)
    assert "get_sum" in [tool["name"] for tool in env.tools()]
    for _ in range(3):  # the first takes the session that listed the tools
        with env.open() as session:
            session.reset()
            assert "The sum of 1 and 2 is 3." in session.call_tool("get_sum", {"a": 1, "b": 2})
    assert len(_sessions(everything) - before) == 3  # three episodes, three sessions (no process per episode)


def test_a_python_server_behind_a_proxy_runs_over_http(environments: Make, proxied_time: Running) -> None:
    env = environments(AgentEnv.mcp, HttpServer(f"http://127.0.0.1:{proxied_time.port}/mcp"))
    assert [tool["name"] for tool in env.tools()] == ["get_current_time", "convert_time", "end_turn"]
    with env.open() as session:
        session.reset()
        assert '"timezone": "Asia/Tokyo"' in session.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})


class TestResultsAsTheModelReadsThem:
    @pytest.fixture
    def call(self, environments: Make, everything: Running) -> Iterator[Callable[..., str]]:
        env = environments(
            AgentEnv.mcp, HttpServer(f"http://127.0.0.1:{everything.port}/mcp"), max_result_chars=300
        )
        with env.open() as session:
            session.reset()
            yield session.call_tool

    def test_an_image_is_named_with_its_type_and_size(self, call: Callable[..., str]) -> None:
        assert call("get_tiny_image", {}) == (
            "Here's the image you requested:\n[image: image/png, 4,033 bytes]\nThe image above is the MCP logo."
        )

    def test_an_embedded_text_resource_is_shown_with_its_text(self, call: Callable[..., str]) -> None:
        text = call("get_resource_reference", {"resourceType": "Text", "resourceId": 3})
        assert (
            "[resource demo://resource/dynamic/text/3 (text/plain)]\nResource 3: This is a plaintext resource"
            in text
        )

    def test_resource_links_are_named_with_where_they_point(self, call: Callable[..., str]) -> None:
        lines = call("get_resource_links", {"count": 2}).splitlines()
        assert lines[1] == (
            "[resource link: Blob Resource 1 at demo://resource/dynamic/blob/1 (text/plain): Resource 1: plaintext resource]"
        )

    def test_structured_content_is_compact_json_not_shown_twice(self, call: Callable[..., str]) -> None:
        text = call("get_structured_content", {"location": "Chicago"})
        assert re.fullmatch(r'\{"temperature":-?\d+,"conditions":"[^"]+","humidity":\d+\}', text)

    def test_a_long_result_is_cut_with_a_note(self, call: Callable[..., str]) -> None:
        text = call("echo", {"message": "x" * 1000})
        assert text.endswith(
            "\n[agent_env cut this result: it has 1,006 characters, and only the first 300 are shown (max_result_chars)]"
        )
        assert text.startswith("Echo: xxx")


def _sessions(server: Running) -> set[str]:
    return {
        match
        for line in list(server.lines)
        for match in re.findall(r"Session initialized with ID: (\S+)", line)
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0
