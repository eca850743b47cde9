"""Every fault of an MCP server is a clear error naming the server and the episode, and leaves nothing running: a
command that does not start, a server that dies or hangs mid-episode, junk on stdout, tools that change, a URL that
refuses or wants a token, and a trainer that crashes (its servers are reaped)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_env import AgentEnv, EpisodeEndedError, ToolError
from agent_env.errors import TimedOutEpisodeError
from agent_env.mcp import (
    HttpServer,
    MCPServerError,
    MCPServerLostError,
    MCPStartError,
    MCPTimeoutError,
    StdioServer,
    ToolsChangedError,
)
from agent_env.mcp._supervisor import OWNER_MARK, SERVER_MARK, marked_processes, owner_mark
from tst.mcp.conftest import (
    INSTALLED,
    NODE,
    ROOT,
    node_server,
    scripted,
    servers_left,
    wait_until,
)

Make = Callable[..., AgentEnv]


def server(*options: str, **settings: object) -> StdioServer:
    command = scripted(*options)
    return StdioServer(command[0], command[1:], **settings)  # type: ignore[arg-type]


def legacy_server(*options: str) -> StdioServer:
    """`servers/legacy.py` on the mcp 1.x SDK, in the MCP servers' own venv (`make mcp-servers`)."""
    python = INSTALLED / "python" / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{python} is missing: run `make mcp-servers`")
    return StdioServer(str(python), [str(Path(__file__).parent / "servers" / "legacy.py"), *options])


def connection_of(session: object) -> object:
    (connection,) = session.environment._episode._connections.values()  # type: ignore[attr-defined]
    return connection


def connection_of_pool(env: AgentEnv) -> object:
    """The shared connection of a single-server environment."""
    return env.provider.environment.runtime.pools[""]._shared  # type: ignore[attr-defined]


class TestStarting:
    def test_a_command_that_is_not_installed_is_named(self, environments: Make) -> None:
        with pytest.raises(MCPStartError, match="command 'mcp-server-nowhere' was not found"):
            environments(AgentEnv.mcp, StdioServer("mcp-server-nowhere"))

    def test_a_server_that_exits_at_start_is_named_with_the_end_of_its_stderr(
        self, environments: Make
    ) -> None:
        crashing = server("--crash-on-start")
        with pytest.raises(MCPStartError) as failed:
            environments(AgentEnv.mcp, crashing)
        message = str(failed.value)
        assert message.startswith(
            f"MCP server ({crashing.label}) could not start or did not answer initialize"
        )
        assert message.endswith(
            "the end of its stderr:\nscripted: cannot start: the configuration is missing"
        )

    def test_a_node_server_that_cannot_load_says_why(self, environments: Make) -> None:
        with pytest.raises(MCPStartError, match=r"(?s)the end of its stderr:.*Cannot find module"):
            environments(AgentEnv.mcp, StdioServer(NODE, ["/nowhere/index.js"]))

    def test_a_command_that_never_speaks_mcp_times_out_is_killed_and_says_what_it_wrote(
        self, environments: Make
    ) -> None:
        silent = StdioServer("sh", ["-c", "echo waiting for the database >&2; exec sleep 600"])
        with pytest.raises(MCPStartError) as late:
            environments(AgentEnv.mcp, silent, start_timeout=1)
        assert str(late.value).startswith(
            f"MCP server ({silent.label}) did not finish starting within 1 s; the end"
        )
        assert "the end of its stderr:\nwaiting for the database;" in str(late.value)
        # the environments fixture checks that the `sleep` is gone

    def test_a_server_that_never_starts_fails_at_its_start_timeout_not_after_a_graceful_stop(
        self, environments: Make
    ) -> None:
        stubborn = StdioServer(
            "sh", ["-c", "trap '' TERM; exec sleep 600"]
        )  # deaf to the end of stdin and SIGTERM
        began = time.monotonic()
        with pytest.raises(MCPStartError, match="did not finish starting within 1 s"):
            environments(AgentEnv.mcp, stubborn, start_timeout=1)
        assert (
            time.monotonic() - began < 4.5
        )  # it waited on a shutdown of 6 s (and more) after the 1 s before

    def test_a_server_that_dies_on_the_2026_handshakes_probe_is_started_without_it(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, legacy_server("--die-on-probe"))  # as mcp releases before 1.7 do
        with env.open() as session:
            session.reset()
            assert session.call_tool("count", {}) == "1"

    def test_once_a_server_answered_only_initialize_later_servers_are_spared_the_probe(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, legacy_server(), warm=0)  # mcp 1.30: it logs the probe it refuses
        with env.open() as session:
            session.reset()  # on the server that listed the tools, which answered the probe's refusal
            session.reset()  # on a new one
            connection = connection_of(session)
            assert connection.handshake == "legacy"  # type: ignore[attr-defined]
            assert "discover" not in connection._stderr_tail()  # type: ignore[attr-defined]

    def test_a_working_directory_that_does_not_exist_is_named(
        self, environments: Make, tmp_path: Path
    ) -> None:
        missing = tmp_path / "nowhere"
        with pytest.raises(MCPStartError) as failed:
            environments(AgentEnv.mcp, server(cwd=missing))
        assert str(failed.value).endswith(
            f"could not start: its working directory {str(missing)!r} (cwd=) does not exist"
        )


class TestDuringAnEpisode:
    def test_a_server_that_dies_fails_its_episode_and_the_next_reset_gets_a_fresh_one(
        self, environments: Make
    ) -> None:
        memory = StdioServer(
            NODE, [node_server("server-memory")], env={"MEMORY_FILE_PATH": "{episode_dir}/memory.jsonl"}
        )  # a file of its own: the server's default one is shared by every run of this installation
        env = environments(AgentEnv.mcp, memory)
        with env.open() as session:
            session.reset()
            dead = connection_of(session)
            (pid,) = marked_processes(SERVER_MARK, dead.id)  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)
            with pytest.raises(MCPServerLostError) as lost:
                session.call_tool("read_graph", {})
            assert (
                "MCP server 'memory-server' (node ...odules/@modelcontextprotocol/server-memory/dist/index.js)"
                in str(lost.value)
            )
            assert f"died or closed the connection during episode {dead.episode}" in str(lost.value)  # type: ignore[attr-defined]
            with pytest.raises(MCPServerLostError):  # the episode stays failed
                session.call_tool("read_graph", {})
            session.reset()
            assert connection_of(session) is not dead
            assert json.loads(session.call_tool("read_graph", {})) == {"entities": [], "relations": []}

    def test_an_episode_whose_server_died_scores_zero_saying_why_instead_of_stopping_the_trainer(
        self, environments: Make, caplog: pytest.LogCaptureFixture
    ) -> None:
        env = environments(AgentEnv.mcp, server(), reward="score")
        with env.open() as session:
            session.reset()
            session.call_tool("count", {})
            with pytest.raises(MCPServerLostError):
                session.call_tool("exit", {})
            with caplog.at_level(logging.WARNING, "agent_env.mcp"):
                assert (
                    session.reward() == 0.0
                )  # TRL reads every rollout's reward: one lost server must not raise
        (warning,) = [record.message for record in caplog.records if "scores 0" in record.message]
        assert "its reward could not be read: MCP server 'scripted'" in warning and "died" in warning

    def test_a_server_that_exits_mid_call_fails_the_call_naming_it(self, environments: Make) -> None:
        env = environments(AgentEnv.mcp, server())
        with env.open() as session:
            session.reset()
            with pytest.raises(
                MCPServerLostError,
                match=r"died or closed the connection during episode \w+ \(tool 'exit'\)",
            ):
                session.call_tool("exit", {})

    def test_a_dead_servers_error_quotes_only_what_it_wrote_after_it_started(
        self, environments: Make
    ) -> None:
        env = environments(
            AgentEnv.mcp, legacy_server()
        )  # an mcp 1.x server: it logs the 2026 probe it refuses
        with env.open() as session:
            session.reset()
            with pytest.raises(MCPServerLostError) as lost:
                session.call_tool("die", {})
        message = str(lost.value)
        assert "the end of its stderr:\nlegacy server: the die tool was called, exiting;" in message
        assert "discover" not in message and len(message) < 1_000  # the model reads it too

    def test_a_call_that_hangs_is_timed_out_and_its_server_killed(self, environments: Make) -> None:
        sleepy = server()
        env = environments(AgentEnv.mcp, sleepy, call_timeout=1)
        with env.open() as session:
            session.reset()
            hung = connection_of(session)
            assert marked_processes(SERVER_MARK, hung.id)  # type: ignore[attr-defined]
            with pytest.raises(MCPTimeoutError) as late:
                session.call_tool("sleep", {"seconds": 600})
            assert (
                f"tool 'sleep' got no answer from MCP server 'scripted' ({sleepy.label}) within 1 s in episode"
                in str(late.value)
            )
            assert wait_until(lambda: not marked_processes(SERVER_MARK, hung.id), timeout=3)  # type: ignore[attr-defined]
            # a call out of time ends its episode, as on every provider: unscored, and later calls refused
            with pytest.raises(
                EpisodeEndedError,
                match=r"^tool 'count' was not run: the episode has ended \(tool 'sleep' did not",
            ):
                session.call_tool("count", {})
            with pytest.raises(TimedOutEpisodeError) as unscored:
                session.reward()
            assert unscored.value.cause is late.value and unscored.value.infrastructure
            session.reset()
            assert session.call_tool("count", {}) == "1"


class TestBetweenEpisodes:
    def test_a_warm_spare_killed_while_it_waits_is_never_handed_out(self, environments: Make) -> None:
        env = environments(AgentEnv.mcp, server(), warm=1)
        pool = env.provider.environment.runtime.pools[""]
        (spare,) = pool._spares
        (pid,) = marked_processes(SERVER_MARK, spare.id)
        os.kill(pid, signal.SIGKILL)
        with env.open() as session:
            session.reset()
            assert connection_of(session) is not spare
            assert session.call_tool("count", {}) == "1"

    def test_a_shared_server_killed_between_episodes_is_started_again_for_the_next_one(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, server(shared=True))
        with env.open() as first:
            first.reset()
            assert first.call_tool("count", {}) == "1"
            first.reward()
            killed = connection_of_pool(env)
        (pid,) = marked_processes(SERVER_MARK, killed.id)  # type: ignore[attr-defined]
        os.kill(pid, signal.SIGKILL)
        with env.open() as second:
            second.reset()
            assert connection_of(second) is not killed
            assert second.call_tool("count", {}) == "1"  # a fresh process: its counter starts again

    def test_a_shared_server_busy_with_another_episodes_call_is_not_taken_for_dead(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, server(shared=True))
        with env.open() as busy, env.open() as other:
            busy.reset()
            answers: list[str] = []
            call = threading.Thread(
                target=lambda: answers.append(busy.call_tool("sleep", {"seconds": 4, "block": True}))
            )
            call.start()
            time.sleep(0.5)  # the server now answers nothing, pings included, for 3.5 s
            other.reset()
            call.join(timeout=30)
            assert answers == ["slept"]  # the busy episode's server was not stopped under it
            assert connection_of(other) is connection_of(busy)
            assert other.call_tool("count", {}) == "1"

    def test_an_episode_that_held_a_replaced_shared_server_lets_go_without_starting_processes(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, server(shared=True))
        pool = env.provider.environment.runtime.pools[""]
        held = env.open()
        held.reset()
        old = connection_of(held)
        os.kill(marked_processes(SERVER_MARK, old.id)[0], signal.SIGKILL)  # type: ignore[attr-defined]
        with env.open() as other:
            other.reset()
            assert other.call_tool("count", {}) == "1"
            new = connection_of(other)
            held.close()  # lets go of the dead one
            assert wait_until(lambda: not marked_processes(SERVER_MARK, old.id))  # type: ignore[attr-defined]
            assert not wait_until(lambda: len(servers_left()) > 1, timeout=3), (
                f"a shared server runs one process, not {len(servers_left())}"
            )
            assert (pool.in_use, pool.spares(), connection_of(other)) == (0, 0, new)


class TestInterrupted:
    def test_a_reset_interrupted_by_ctrl_c_lets_go_of_the_server_it_was_starting(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, server("--start-delay", "2"), warm=0, start_timeout=20)
        pool = env.provider.environment.runtime.pools[""]
        with env.open() as holder, env.open() as interrupted:
            holder.reset()  # takes the one spare: the next reset waits on a server that takes 2 s to start
            threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
            with pytest.raises(KeyboardInterrupt):
                interrupted.reset()
            assert wait_until(lambda: pool.in_use == 1, timeout=15), (
                f"{pool.in_use} connections are out with episodes, not the 1 that holder has"
            )
            interrupted.reset()  # the session is as it was: it starts an episode
            assert interrupted.call_tool("count", {}) == "1"
        # the environments fixture checks that the server started for the interrupted reset is gone too


class TestJunkOnStdout:
    def test_lines_that_are_not_mcp_are_reported_once_and_the_episode_runs(
        self, environments: Make, caplog: pytest.LogCaptureFixture
    ) -> None:
        noisy = server("--junk", "banner")
        with caplog.at_level(logging.WARNING, "agent_env.mcp"):
            env = environments(AgentEnv.mcp, noisy)
            for _ in range(3):  # a fresh process each time, each printing its banner
                with env.open() as session:
                    session.reset()
                    assert session.call_tool("count", {}) == "1"
        (warning,) = [record.message for record in caplog.records if "not MCP" in record.message]
        assert warning.startswith(
            f"agent_env: MCP server ({noisy.label}) wrote something that is not MCP to its stdout: "
            "'scripted server v1 starting (this line is not MCP)'"
        )

    def test_junk_that_mangles_a_message_is_named_in_the_error(self, environments: Make) -> None:
        with pytest.raises(MCPStartError) as failed:
            environments(AgentEnv.mcp, server("--junk", "mangle"), start_timeout=3)
        assert "did not finish starting within 3 s" in str(failed.value)
        assert "it wrote non-MCP output to stdout" in str(failed.value)


class TestToolsThatChange:
    def test_a_server_whose_new_processes_list_other_tools_is_refused_at_reset(
        self, environments: Make, tmp_path: Path
    ) -> None:
        listing = tmp_path / "tools.json"
        listing.write_text(json.dumps(["count", "echo"]))
        env = environments(AgentEnv.mcp, server("--tools-from", str(listing)), warm=0)
        listing.write_text(json.dumps(["count", "echo", "sleep"]))  # the server was upgraded mid-run
        env.close()  # the spare that listed the old tools is stopped; the next reset starts a server afresh
        with env.open() as session, pytest.raises(ToolsChangedError) as refused:
            session.reset()
        assert "lists other tools than when the environment was built" in str(refused.value)
        assert "it lists count, echo, sleep" in str(refused.value)

    def test_a_server_that_says_its_tools_changed_mid_episode_fails_the_episode(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, server())
        with env.open() as session:
            session.reset()
            session.call_tool("grow_tools", {})
            assert wait_until(lambda: connection_of(session)._tools_changed is not None, timeout=5)  # type: ignore[attr-defined]
            with pytest.raises(
                ToolsChangedError,
                match=r"lists other tools .* \(during episode \w+\); the episode cannot go on",
            ):
                session.call_tool("count", {})

    def test_a_call_right_after_the_server_said_its_tools_changed_waits_for_the_check_and_is_refused(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, legacy_server())
        with env.open() as session:
            session.reset()
            assert session.call_tool("change_tools", {}) == "changed"
            with pytest.raises(ToolsChangedError, match=r"it lists change_tools, count, die, extra"):
                session.call_tool("count", {})  # at once: it must not reach the changed server


def hostile(*options: str) -> StdioServer:
    """`servers/hostile.py`: a server written by hand that breaks the protocol on purpose."""
    return StdioServer(sys.executable, [str(Path(__file__).parent / "servers" / "hostile.py"), *options])


class TestServersThatBreakTheProtocol:
    @pytest.mark.parametrize(
        ("tool", "cause"),
        [
            ("null_content", "ValidationError: 1 validation error for CallToolResult"),
            (
                "breaks_output_schema",
                "RuntimeError: Invalid structured content returned by tool breaks_output_schema",
            ),
        ],
    )
    def test_a_result_that_is_not_mcp_is_the_servers_fault_named_with_its_episode(
        self, environments: Make, tool: str, cause: str
    ) -> None:
        server = hostile()
        env = environments(AgentEnv.mcp, server)
        with env.open() as session:
            session.reset()
            episode = session.environment._episode.id  # type: ignore[attr-defined]
            with pytest.raises(MCPServerError) as broken:
                session.call_tool(tool, {})
            assert str(broken.value).startswith(
                f"MCP server 'hostile' ({server.label}) answered tool '{tool}' in episode {episode} with what is not "
                f"valid MCP ({cause}"
            )
            assert "pydantic.dev" not in str(broken.value)  # the model reads it: one line, not a dump
            assert session.call_tool("ok", {}) == "fine"

    def test_a_reward_tool_answering_what_is_not_mcp_scores_zero_instead_of_stopping_the_trainer(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, hostile(), reward="null_content")
        with env.open() as session:
            session.reset()
            assert session.reward() == 0.0

    def test_the_servers_own_error_with_jsons_generic_code_is_a_refusal_not_a_death(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, hostile())
        with env.open() as session:
            session.reset()
            with pytest.raises(ToolError, match=r"refused tool 'error_code': the server's own error -32000$"):
                session.call_tool(
                    "error_code", {"code": -32000}
                )  # -32000 is also the SDK's "connection closed"
            assert session.call_tool("ok", {}) == "fine"  # the server was not stopped

    def test_bytes_that_are_not_utf8_on_stdout_are_junk_and_the_answer_after_them_arrives(
        self, environments: Make, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.WARNING, "agent_env.mcp"):
            env = environments(
                AgentEnv.mcp, hostile("--latin1-banner"), start_timeout=5
            )  # it started at once
            with env.open() as session:
                session.reset()
                assert session.call_tool("not_utf8", {}) == "after the bytes"
        assert any("caf\ufffd server starting" in record.message for record in caplog.records)

    def test_a_server_that_never_lists_its_tools_fails_the_reset_at_the_start_timeout(
        self, environments: Make, tmp_path: Path
    ) -> None:
        stalls = tmp_path / "stall"
        env = environments(
            AgentEnv.mcp, hostile("--stall-listing-after", str(stalls)), warm=0, start_timeout=1
        )
        stalls.touch()  # servers started from now on never answer tools/list
        with env.open() as session:
            session.reset()  # on the server that listed the tools when the environment was built
            with pytest.raises(TimedOutEpisodeError) as unscored:  # the episode never started: unscored
                session.reset()  # it waited for ever
            assert isinstance(unscored.value.cause, MCPTimeoutError) and unscored.value.starting
            assert "did not list its tools within 1 s; the server was stopped" in str(unscored.value)

    def test_a_call_waiting_on_the_check_of_a_changed_tool_list_fails_at_its_timeout(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, hostile(), call_timeout=1, start_timeout=20)
        with env.open() as session:
            session.reset()
            assert session.call_tool("change_and_stall", {}) == "changed"
            with pytest.raises(MCPTimeoutError, match=r"tool 'ok' got no answer .* within 1 s"):
                session.call_tool("ok", {})  # it waited for ever on the listing the server never gives

    def test_a_call_cut_short_by_closing_its_episode_does_not_blame_the_server(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, hostile(), call_timeout=30)
        session = env.open()
        session.reset()
        errors: list[BaseException] = []

        def call() -> None:
            try:
                session.call_tool("hang", {})
            except BaseException as error:
                errors.append(error)

        caller = threading.Thread(target=call)
        caller.start()
        time.sleep(0.5)
        session.close()
        caller.join(timeout=20)
        (error,) = errors
        assert isinstance(error, MCPServerLostError)
        assert "was cut short in episode" in str(error) and "closed or reset while it ran" in str(error)
        assert "died" not in str(error)


class TestUrls:
    def test_a_url_that_refuses_connections_is_refused_when_built_asking_whether_a_server_listens(
        self, environments: Make
    ) -> None:
        with pytest.raises(
            MCPStartError,
            match=r"MCP server \(127.0.0.1:9/mcp\) did not answer initialize \(ConnectError: .*\); is an MCP "
            r"server listening at http://127.0.0.1:9/mcp",
        ):
            environments(AgentEnv.mcp, HttpServer("http://127.0.0.1:9/mcp"), start_timeout=5)

    def test_a_url_that_wants_a_token_says_so_and_takes_one(
        self, environments: Make, served_desk: tuple[str, str]
    ) -> None:
        url, token = served_desk
        with pytest.raises(MCPStartError, match=r"refused the credentials \(HTTP 401\); pass token="):
            environments(AgentEnv.mcp, HttpServer(f"{url}/mcp"))
        env = environments(AgentEnv.mcp, HttpServer(f"{url}/mcp", token=token))
        assert "submit_dam_offers" in [tool["name"] for tool in env.tools()]
        assert token not in repr(HttpServer(f"{url}/mcp", token=token))


@pytest.fixture(scope="module")
def served_desk() -> object:
    """A real `agent-env serve` of the desk with a token: an MCP server over streamable HTTP that wants one."""
    from agent_env.server.app import build_app
    from tst.unit.server.running import running

    with running(build_app("gridsim-desk", token="s3cret")) as url:
        yield url, "s3cret"


class TestNothingOutlivesItsOwner:
    def test_a_servers_own_children_stop_with_its_episode(self, environments: Make) -> None:
        env = environments(AgentEnv.mcp, server("--child"), warm=0)
        with env.open() as session:
            session.reset()
            connection = connection_of(session)
            assert wait_until(lambda: len(marked_processes(SERVER_MARK, connection.id)) == 2)  # type: ignore[attr-defined]
            session.reward()
            assert wait_until(lambda: not marked_processes(SERVER_MARK, connection.id))  # type: ignore[attr-defined]

    def test_a_server_that_ignores_the_end_of_stdin_and_sigterm_is_killed_with_its_episode(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, server("--stubborn"), warm=0)
        with env.open() as session:
            session.reset()
            connection = connection_of(session)
            session.reward()
            assert wait_until(lambda: not marked_processes(SERVER_MARK, connection.id), timeout=15)  # type: ignore[attr-defined]

    def test_many_episodes_leave_no_processes_files_threads_or_folders_behind(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, server(cwd="{episode_dir}"), warm=1)
        pool = env.provider.environment.runtime.pools[""]

        def held() -> tuple[int, int, int, int]:
            """Open files, threads, server processes and scratch folders of this process."""
            return (
                len(os.listdir("/proc/self/fd")),
                threading.active_count(),
                len(servers_left()),
                len(scratch_folders(owner_mark())),
            )

        def play(episodes: int) -> None:
            for _ in range(episodes):
                with env.open() as session:
                    session.reset()
                    session.call_tool("count", {})
                    session.reward()

        def settled() -> bool:
            return pool.spares() == 1 and not pool._starting and len(servers_left()) == 1

        def none_left(now: tuple[int, int, int, int], before: tuple[int, int, int, int]) -> bool:
            # No more threads than before: fewer is no leak (an idle call worker an earlier test of this process
            # started leaves after IDLE_WORKER_SECONDS, whenever that falls).
            files, threads, processes, folders = now
            return (files, processes, folders) == (before[0], before[2], before[3]) and threads <= before[1]

        play(3)  # the pools, the loop's worker threads and the reaper are up
        assert wait_until(settled)
        before = held()
        play(12)
        assert wait_until(lambda: settled() and none_left(held(), before)), f"held {held()}, not {before}"

    def test_episodes_let_go_while_the_interpreter_exits_stop_their_servers_without_a_traceback(
        self, tmp_path: Path
    ) -> None:
        # At exit Python first shuts the default executors (concurrent.futures' _python_exit, which the script
        # calls to make the race certain), then runs finalizers: an open episode's lets its connections go, and
        # their close ran its clean-up through that executor, a "Task exception was never retrieved" traceback
        # about one exit in three.
        script = tmp_path / "trainer.py"
        script.write_text(
            textwrap.dedent(f"""
            import concurrent.futures.thread, gc, json, sys, time
            sys.path.insert(0, {str(ROOT)!r})
            from agent_env import AgentEnv
            from agent_env.mcp import StdioServer
            from agent_env.mcp._supervisor import SERVER_MARK, marked_processes, owner_mark
            memory = StdioServer({NODE!r}, [{node_server("server-memory")!r}], env={{"MEMORY_FILE_PATH": "{{episode_dir}}/m"}})
            env = AgentEnv.mcp(memory, warm=0)
            sessions = [env.open() for _ in range(3)]
            for session in sessions:
                session.reset()
                session.call_tool("read_graph", {{}})
            ids = [connection.id for session in sessions for connection in session.environment._episode._connections.values()]
            concurrent.futures.thread._python_exit()
            del sessions, session
            gc.collect()
            deadline = time.monotonic() + 20
            while any(marked_processes(SERVER_MARK, id) for id in ids) and time.monotonic() < deadline:
                time.sleep(0.05)
            print(json.dumps([len(marked_processes(SERVER_MARK, id)) for id in ids]), flush=True)
            """)
        )
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.splitlines()[-1]) == [0, 0, 0]  # every episode's server stopped
        assert "Traceback" not in done.stderr and "cannot schedule new futures" not in done.stderr, (
            done.stderr
        )

    def test_the_servers_of_a_process_killed_with_sigkill_are_reaped(self, tmp_path: Path) -> None:
        script = tmp_path / "trainer.py"
        script.write_text(
            textwrap.dedent(f"""
            import json, sys, time
            sys.path.insert(0, {str(ROOT)!r})
            from agent_env import AgentEnv
            from agent_env.mcp import StdioServer
            from agent_env.mcp._supervisor import owner_mark
            memory = StdioServer({NODE!r}, [{node_server("server-memory")!r}], env={{"MEMORY_FILE_PATH": "{{episode_dir}}/m"}})
            env = AgentEnv.mcp(memory, warm=2)
            session = env.open()
            session.reset()
            print(json.dumps(owner_mark()), flush=True)
            time.sleep(600)
            """)
        )
        trainer = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
        try:
            owner = json.loads(trainer.stdout.readline())  # type: ignore[union-attr]
            assert wait_until(lambda: len(marked_processes(OWNER_MARK, owner)) == 3)  # an episode's, 2 spares
            assert len(scratch_folders(owner)) == 3  # and each one's {episode_dir}
        finally:
            trainer.kill()  # SIGKILL: no atexit, no finally, nothing of the trainer's own runs
            trainer.wait()
        assert wait_until(lambda: not marked_processes(OWNER_MARK, owner), timeout=10), (
            "the reaper left servers"
        )
        assert wait_until(lambda: not scratch_folders(owner)), "the reaper left scratch folders"
        assert not servers_left()

    def test_a_supervisor_that_kills_the_trainer_with_its_children_leaves_no_server_or_folder(
        self, tmp_path: Path
    ) -> None:
        """Ray ends an actor so: SIGKILL to the worker and to each of its child processes, the MCP servers among them,
        but not to their own children."""
        script = tmp_path / "actor.py"
        command = scripted("--child")
        script.write_text(
            textwrap.dedent(f"""
            import json, sys, time
            sys.path.insert(0, {str(ROOT)!r})
            from agent_env import AgentEnv
            from agent_env.mcp import StdioServer
            from agent_env.mcp._supervisor import owner_mark
            server = StdioServer({command[0]!r}, {command[1:]!r}, cwd="{{episode_dir}}")
            env = AgentEnv.mcp(server, warm=1)
            session = env.open()
            session.reset()
            print(json.dumps(owner_mark()), flush=True)
            time.sleep(600)
            """)
        )
        actor = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
        try:
            owner = json.loads(actor.stdout.readline())  # type: ignore[union-attr]
            # an episode's server and a spare, each with its child
            assert wait_until(lambda: len(marked_processes(OWNER_MARK, owner)) == 4)
            assert len(scratch_folders(owner)) == 2
        finally:
            for pid in [actor.pid, *children_of(actor.pid)]:
                os.kill(pid, signal.SIGKILL)
            actor.wait()
        assert wait_until(lambda: not marked_processes(OWNER_MARK, owner), timeout=10), (
            "the servers' children outlived them"
        )
        assert wait_until(lambda: not scratch_folders(owner)), "scratch folders were left"


def children_of(pid: int) -> list[int]:
    """The live child processes of `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except (OSError, ValueError):
            continue
        if entry.name.isdigit() and fields[1] == str(pid) and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def scratch_folders(owner: str) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"agent-env-mcp-{owner}-*"))
