"""An MCP server as an environment, on the real `@modelcontextprotocol/server-memory` (and a few others): its tools
published whole, calls validated before they leave, results as the model reads them, episodes isolated, setup and
reward on live servers, rows, and what is refused at build time."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import pickle
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_env import AgentEnv, ToolArgumentError, ToolDefinitionError, ToolError
from agent_env.errors import RewardError, UnscoredEpisodeError
from agent_env.mcp import Episode, MCPEnvironment, StdioServer
from agent_env.mcp._supervisor import SERVER_MARK, marked_processes
from tst.mcp.conftest import NODE, node_server, python_server, scripted, wait_until

PROMPT = [{"role": "user", "content": "Record the team."}]
ADA = {"name": "Ada", "entityType": "person", "observations": ["engineer"]}
Make = Callable[..., AgentEnv]


def memory(**options: Any) -> StdioServer:
    return StdioServer(
        NODE,
        [node_server("server-memory")],
        env={"MEMORY_FILE_PATH": "{episode_dir}/memory.jsonl"},
        **options,
    )


def entity_names(episode: Episode) -> list[str]:
    return sorted(entity["name"] for entity in episode.call_tool("read_graph").json()["entities"])


def names_in_graph(episode: Episode) -> float:
    return float(len(entity_names(episode)))


def answered(answer: Any) -> Any:
    """A tool's answer through the factory: Python 3.12+ marks an MCP tool a coroutine function (as AsyncGRPO awaits
    it), so its call gives a coroutine there."""
    return asyncio.run(answer) if inspect.isawaitable(answer) else answer


class TestToolsAsTheModelSeesThem:
    def test_every_tool_is_published_with_its_full_schema_normalized(self, environments: Make) -> None:
        env = environments(AgentEnv.mcp, memory())
        tools = {tool["name"]: tool for tool in env.tools()}
        assert list(tools) == [
            "create_entities", "create_relations", "add_observations", "delete_entities", "delete_observations",
            "delete_relations", "read_graph", "search_nodes", "open_nodes", "end_turn",
        ]  # fmt: skip
        entities = tools["create_entities"]["inputSchema"]["properties"]["entities"]
        assert entities["items"]["required"] == ["name", "entityType", "observations"]
        assert entities["items"]["properties"]["observations"]["items"] == {"type": "string"}
        assert (
            "$schema" not in tools["create_entities"]["inputSchema"]
        )  # the dialect marker is noise once normalized
        listed = env.provider.environment.runtime  # what the server listed, normalized, is what is published
        assert tools["create_relations"]["inputSchema"]["properties"]["relations"]["items"]["properties"][
            "from"
        ] == {
            "type": "string",
            "description": "The name of the entity where the relation starts",
        }
        assert listed.routes["create_entities"] == ("", "create_entities")

    def test_a_tool_subset_is_all_that_is_published(self, environments: Make) -> None:
        env = environments(AgentEnv.mcp, memory(), tools=["read_graph", "create_entities"])
        assert [tool["name"] for tool in env.tools()] == ["create_entities", "read_graph", "end_turn"]

    def test_a_subset_naming_a_tool_the_server_lacks_is_refused_listing_the_tools(
        self, environments: Make
    ) -> None:
        with pytest.raises(
            ToolDefinitionError,
            match="tools= names 'read_grpah', which no server publishes; the tools are: create_entities",
        ):
            environments(AgentEnv.mcp, memory(), tools=["read_graph", "read_grpah"])

    def test_every_page_of_a_paginated_listing_is_read(self, environments: Make) -> None:
        env = environments(AgentEnv.mcp, StdioServer(*_split(scripted("--pages", "3"))))
        assert [tool["name"] for tool in env.tools()] == [
            "count", "score", "echo", "sleep", "exit", "fail", "grow_tools", "end_turn",
        ]  # fmt: skip

    def test_names_that_are_not_identifiers_are_published_as_identifiers_and_called_by_their_own(
        self, environments: Make, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.WARNING, "agent_env.mcp"):
            env = environments(AgentEnv.mcp, StdioServer(NODE, [node_server("server-everything"), "stdio"]))
        names = [tool["name"] for tool in env.tools()]
        assert "get_sum" in names and "get-sum" not in names
        assert "'get-sum' as 'get_sum'" in caplog.text
        with env.open() as session:
            session.reset()
            assert "The sum of 2 and 3 is 5." in session.call_tool("get_sum", {"a": 2, "b": 3})

    def test_a_tool_whose_parameters_are_named_self_and_class_is_called_through_the_factory(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, StdioServer(*_split(scripted("--odd-names"))), tools=["whoami"])
        instance = (
            env.factory()
        )  # the TRL-facing class: a method per tool, whatever its parameters are called
        try:
            instance.reset(prompt=PROMPT)
            assert answered(instance.whoami(self="Ada", **{"class": "engineer"})) == "Ada (engineer)"
            assert (
                answered(type(instance).whoami(instance, self="Grace")) == "Grace (no class)"
            )  # as a TRL taking the class
        finally:
            instance._session.close()


class TestCalls:
    def test_a_nested_call_reaches_the_server_and_the_reward_reads_its_state(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, memory(), reward=names_in_graph)
        with env.open() as session:
            session.reset(prompt=PROMPT)
            answer = session.call_tool("create_entities", {"entities": [ADA, {**ADA, "name": "Grace"}]})
            assert '"name":"Grace"' in answer  # the server's structured content, as compact JSON
            assert session.reward() == 2.0

    def test_a_malformed_call_is_refused_naming_its_path_and_never_reaches_the_server(
        self, environments: Make
    ) -> None:
        seen: list[Episode] = []

        def remember(episode: Episode) -> float:
            seen.append(episode)
            return names_in_graph(episode)

        env = environments(AgentEnv.mcp, memory(), reward=remember)
        with env.open() as session:
            session.reset(prompt=PROMPT)
            with pytest.raises(ToolArgumentError) as refused:
                session.call_tool(
                    "create_entities", {"entities": [{"name": "Ada", "observations": "engineer"}]}
                )
            assert str(refused.value) == (
                "Invalid arguments for tool 'create_entities'; fix these and call it again:\n"
                "- entities[0]: missing required property 'entityType'\n"
                '- entities[0].observations: expected array; got string "engineer"'
            )
            assert session.reward() == 0.0  # the server's graph is empty: the call never reached it
        assert seen[0].calls == []

    def test_an_is_error_result_reaches_the_model_as_the_servers_own_text(self, environments: Make) -> None:
        seen: list[Episode] = []
        env = environments(AgentEnv.mcp, memory(), reward=lambda episode: seen.append(episode) or 0.0)
        with env.open() as session:
            session.reset(prompt=PROMPT)
            with pytest.raises(ToolError) as failed:
                session.call_tool(
                    "add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}
                )
            assert str(failed.value) == "Entity with name Nobody not found"
            session.reward()
        (call,) = seen[0].calls
        assert call.name == "add_observations" and call.result.is_error

    def test_the_reward_function_gets_every_call_with_its_result(self, environments: Make) -> None:
        seen: list[Episode] = []
        env = environments(AgentEnv.mcp, memory(), reward=lambda episode: seen.append(episode) or 1.0)
        with env.open() as session:
            session.reset(prompt=PROMPT, task_id="t1")
            session.call_tool("create_entities", {"entities": [ADA]})
            session.call_tool("read_graph", {})
            assert session.reward() == 1.0
        episode = seen[0]
        assert episode.row == {"prompt": PROMPT, "task_id": "t1"}
        assert [call.name for call in episode.calls] == ["create_entities", "read_graph"]
        assert episode.calls[0].arguments == {"entities": [ADA]}
        assert episode.calls[1].result.json() == {"entities": [ADA], "relations": []}

    def test_a_reward_that_is_not_a_number_is_refused_naming_the_environment(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, memory(), reward=lambda episode: "1.0", name="graph")
        with env.open() as session:
            session.reset(prompt=PROMPT)
            with pytest.raises(RewardError) as refused:
                session.reward()
        assert str(refused.value).startswith('graph could not score the episode of row {"prompt": [{"role": ')
        assert "(in process): graph.reward returned the string '1.0'; a reward must be" in str(refused.value)

    def test_a_server_tool_can_be_the_reward_and_the_model_is_not_shown_it(self, environments: Make) -> None:
        env = environments(AgentEnv.mcp, StdioServer(*_split(scripted())), reward="score")
        assert "score" not in [tool["name"] for tool in env.tools()]
        with env.open() as session:
            session.reset()
            session.call_tool("count", {})
            session.call_tool("count", {})
            assert session.reward() == 0.5  # the server's counter over 4, as its score tool answers

    def test_a_reward_tool_that_needs_arguments_is_refused_when_built(self, environments: Make) -> None:
        with pytest.raises(ToolDefinitionError) as refused:
            environments(AgentEnv.mcp, StdioServer(*_split(scripted())), reward="echo")
        said = str(refused.value)
        assert said.startswith(
            "the reward tool 'echo' of MCP server 'scripted"
        )  # not "server 'x''s reward tool"
        assert "' requires arguments (text), but agent_env calls it with none" in said and "''s" not in said

    def test_naming_the_reward_tool_among_the_models_tools_is_refused_saying_it_is_hidden(
        self, environments: Make
    ) -> None:
        with pytest.raises(
            ToolDefinitionError, match="tools= names 'score', the reward tool, which the model is not shown"
        ):
            environments(
                AgentEnv.mcp, StdioServer(*_split(scripted())), reward="score", tools=["score", "count"]
            )

    def test_a_reward_tool_the_server_lacks_is_refused_when_built(self, environments: Make) -> None:
        with pytest.raises(
            ToolDefinitionError, match="the reward tool 'grade' is not among the servers' tools"
        ):
            environments(AgentEnv.mcp, memory(), reward="grade")


class TestEpisodesThatCannotBeScored:
    """A setup or reward function that fails (the user's code) fails its episode only, on every path TRL calls: the
    session raises an `UnscoredEpisodeError` naming the environment and the episode, and the TRL adapter scores it
    0 with one warning, as an episode whose server failed is scored, rather than stop the trainer's step."""

    def test_a_reward_function_that_raises_scores_0_for_trl_with_one_warning_naming_it(
        self, environments: Make, caplog: pytest.LogCaptureFixture
    ) -> None:
        env = environments(  # the issue's own repro
            AgentEnv.mcp,
            memory(),
            rows=[{"prompt": "go"}],
            reward=lambda episode: 1 / 0,
            chat_template="qwen3",
        )
        instance = env.factory()
        with caplog.at_level(logging.WARNING, logger="agent_env"):
            assert instance.reset(prompt="go") is None
            assert instance.get_reward() == 0.0
        (warning,) = [record for record in caplog.records if record.name == "agent_env.training"]
        said = warning.getMessage()
        assert said.startswith(
            'agent_env: memory-server could not score the episode of row {"prompt": "go"} (in process): its reward '
            "function raised ZeroDivisionError: division by zero in MCP episode "
        )
        assert said.endswith("TRL gets 0.0 for it, so that one failed episode does not stop the step")
        traceback = logging.Formatter().formatException(warning.exc_info)  # type: ignore[arg-type]
        assert (
            "reward=lambda episode: 1 / 0" in traceback and "ZeroDivisionError: division by zero" in traceback
        )
        with env.open() as session:  # the session itself raises it, typed
            session.reset(prompt="go")
            with pytest.raises(UnscoredEpisodeError, match="its reward function raised ZeroDivisionError"):
                session.reward()

    def test_a_setup_that_raises_or_returns_no_text_fails_its_episode_and_lets_its_servers_go(
        self, environments: Make, caplog: pytest.LogCaptureFixture
    ) -> None:
        def setup(episode: Episode) -> Any:
            if episode.row["task_id"] == "raises":
                episode.call_tool(
                    "add_observations", {"observations": [{"entityName": "x", "contents": ["y"]}]}
                )
            return 3

        env = environments(AgentEnv.mcp, memory(), setup=setup, reward=names_in_graph, chat_template="qwen3")
        said = {
            "raises": "its setup function raised ToolError: tool 'add_observations' answered with an error: "
            "Entity with name x not found in MCP episode ",
            "three": "its setup function returned 3, not a string or None (the observation TRL appends to the "
            "prompt) in MCP episode ",
        }
        for task_id, why in said.items():
            with env.open() as session, pytest.raises(UnscoredEpisodeError) as failed:
                session.reset(prompt=PROMPT, task_id=task_id)
            assert str(failed.value).startswith(
                f'memory-server could not start the episode of task_id="{task_id}" (in process): {why}'
            )
            instance = env.factory()
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="agent_env"):
                assert instance.reset(prompt=PROMPT, task_id=task_id) is None
                assert instance.get_reward() == 0.0
            assert [record.name for record in caplog.records].count("agent_env.training") == 1
        # every failed episode's servers were let go: the fixture finds none left once the environment closes

    def test_a_reward_tool_that_answers_an_error_scores_0_naming_the_tool(
        self, environments: Make, caplog: pytest.LogCaptureFixture
    ) -> None:
        env = environments(
            AgentEnv.mcp,
            StdioServer(*_split(scripted())),
            reward="fail",
            tools=["count"],
            chat_template="qwen3",
        )
        instance = env.factory()
        with caplog.at_level(logging.WARNING, logger="agent_env"):
            instance.reset()
            assert instance.get_reward() == 0.0
        (warning,) = [record for record in caplog.records if record.name == "agent_env.training"]
        assert "the reward tool 'fail' answered with an error: " in warning.getMessage()


class TestEpisodes:
    def test_calls_made_together_run_one_at_a_time_in_the_order_made(self, environments: Make) -> None:
        seen: list[Episode] = []
        env = environments(AgentEnv.mcp, memory(), reward=lambda episode: seen.append(episode) or 0.0)
        names = [f"person-{index}" for index in range(12)]

        async def together(session: Any) -> None:  # as TRL on Python 3.12+ may run a reply's calls
            calls = [
                session.acall_tool("create_entities", {"entities": [{**ADA, "name": name}]}) for name in names
            ]
            await asyncio.gather(*calls)

        with env.open() as session:
            session.reset(prompt=PROMPT)
            asyncio.run(together(session))
            graph = json.loads(session.call_tool("read_graph", {}))
            session.reward()
        assert sorted(entity["name"] for entity in graph["entities"]) == sorted(names)  # none lost to a race
        assert [call.arguments["entities"][0]["name"] for call in seen[0].calls[:-1]] == names

    def test_concurrent_episodes_on_one_environment_never_see_each_others_state(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, memory(), reward=names_in_graph)
        graphs: dict[str, float] = {}
        barrier = threading.Barrier(2)

        def play(name: str, count: int) -> None:
            with env.open() as session:
                session.reset(prompt=PROMPT)
                barrier.wait()  # both episodes run at once
                session.call_tool(
                    "create_entities", {"entities": [{**ADA, "name": f"{name}{i}"} for i in range(count)]}
                )
                barrier.wait()
                graphs[name] = session.reward()

        threads = [threading.Thread(target=play, args=args) for args in (("a", 2), ("b", 3))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert graphs == {"a": 2.0, "b": 3.0}

    def test_each_reset_starts_on_a_fresh_server_whose_scratch_folder_goes_with_it(
        self, environments: Make
    ) -> None:
        folders: list[Path] = []

        def look(episode: Episode) -> float:
            folder = episode.directory()
            assert folder is not None
            folders.append(folder)
            assert (folder / "memory.jsonl").exists()  # the server wrote its memory file there
            return names_in_graph(episode)

        env = environments(AgentEnv.mcp, memory(), reward=look)
        with env.open() as session:
            for _ in range(2):
                session.reset(prompt=PROMPT)
                session.call_tool("create_entities", {"entities": [ADA]})
                assert session.reward() == 1.0  # never 2: the second episode's server is a fresh one
        assert folders[0] != folders[1]
        assert wait_until(lambda: not any(folder.exists() for folder in folders))

    def test_a_reset_takes_a_server_started_ahead_of_it(self, environments: Make) -> None:
        env = environments(AgentEnv.mcp, memory(), warm=2)
        pool = env.provider.environment.runtime.pools[""]
        assert pool.spares() == 1  # the server that listed the tools waits for the first episode
        with env.open() as session:
            for _ in range(3):
                ready = {connection.id for connection in pool._spares}
                session.reset(prompt=PROMPT)
                (connection,) = session.environment._episode._connections.values()
                assert connection.id in ready  # no spawn on the reset's path
                assert wait_until(lambda: pool.spares() == 2)  # spares took its place, `warm` of them

    def test_setup_prepares_each_episode_from_its_row(self, environments: Make) -> None:
        def load(episode: Episode) -> str:
            episode.call_tool("create_entities", {"entities": episode.row["fixtures"]})
            return f"The graph holds {len(episode.row['fixtures'])} people."

        env = environments(AgentEnv.mcp, memory(), setup=load, reward=names_in_graph)
        with env.open() as session:
            observation = session.reset(prompt=PROMPT, fixtures=[ADA])
            assert observation == "The graph holds 1 people."
            assert '"name":"Ada"' in session.call_tool("read_graph", {})
            assert session.reward() == 1.0

    def test_a_stateless_server_declared_shared_runs_every_episode_on_one_process(
        self, environments: Make
    ) -> None:
        server = StdioServer(python_server("mcp-server-time"), shared=True)
        env = environments(AgentEnv.mcp, server)
        ids = set()
        for _ in range(2):
            with env.open() as session:
                session.reset()
                assert '"timezone": "Etc/UTC"' in session.call_tool(
                    "get_current_time", {"timezone": "Etc/UTC"}
                )
                ids |= {connection.id for connection in session.environment._episode._connections.values()}
        assert len(ids) == 1
        assert len(marked_processes(SERVER_MARK, ids.pop())) == 1

    def test_several_servers_are_one_environment_with_their_tools_prefixed(self, environments: Make) -> None:
        servers = {"graph": memory(), "clock": StdioServer(python_server("mcp-server-time"))}
        env = environments(
            AgentEnv.mcp,
            servers,
            tools=["graph_create_entities", "graph_read_graph", "clock_get_current_time"],
        )
        assert [tool["name"] for tool in env.tools()] == [
            "graph_create_entities", "graph_read_graph", "clock_get_current_time", "end_turn",
        ]  # fmt: skip
        with env.open() as session:
            session.reset()
            session.call_tool("graph_create_entities", {"entities": [ADA]})
            assert '"Ada"' in session.call_tool("graph_read_graph", {})
            assert "Etc/UTC" in session.call_tool("clock_get_current_time", {"timezone": "Etc/UTC"})


class TestFilesystem:
    def test_the_episode_folder_is_the_servers_allowed_directory_and_each_result_is_read_once(
        self, environments: Make
    ) -> None:
        def write_task(episode: Episode) -> str:
            folder = episode.directory()
            assert folder is not None
            (folder / "notes.txt").write_text("hello world\n")
            return f"Your files are in {folder}."

        def notes_edited(episode: Episode) -> float:
            folder = episode.directory()
            assert folder is not None
            return float((folder / "notes.txt").read_text() == "hello there\n")

        server = StdioServer(NODE, [node_server("server-filesystem"), "{episode_dir}"])
        env = environments(AgentEnv.mcp, server, setup=write_task, reward=notes_edited)
        with env.open() as session:
            folder = session.reset(prompt=PROMPT).removeprefix("Your files are in ").removesuffix(".")
            # server-filesystem answers with its text and {"content": that text}: the model reads it once
            assert session.call_tool("write_file", {"path": f"{folder}/todo.txt", "content": "Zoë ✓"}) == (
                f"Successfully wrote to {folder}/todo.txt"
            )
            diff = session.call_tool(
                "edit_file",
                {"path": f"{folder}/notes.txt", "edits": [{"oldText": "world", "newText": "there"}]},
            )
            assert "-hello world\n+hello there" in diff and diff.count("hello there") == 1
            tree = json.loads(session.call_tool("directory_tree", {"path": folder}))
            assert sorted(entry["name"] for entry in tree) == ["notes.txt", "todo.txt"]
            with pytest.raises(ToolError, match="Access denied - path outside allowed directories"):
                session.call_tool("read_text_file", {"path": "/etc/hostname"})
            assert session.reward() == 1.0
            second = session.reset(prompt=PROMPT).removeprefix("Your files are in ").removesuffix(".")
            assert json.loads(session.call_tool("directory_tree", {"path": second})) == [
                {"name": "notes.txt", "type": "file"}
            ]  # a fresh folder of its own; the last episode's went with its server
            assert second != folder and wait_until(lambda: not Path(folder).exists())


class TestRows:
    def test_rows_are_the_dataset_of_their_splits(self, environments: Make) -> None:
        rows = {"train": [{"prompt": PROMPT, "task_id": "a"}], "test": [{"prompt": PROMPT, "task_id": "b"}]}
        env = environments(AgentEnv.mcp, memory(), rows=rows)
        assert env.dataset("test")["task_id"] == ["b"]
        with pytest.raises(LookupError, match="has no dataset split 'dev': the splits are 'train', 'test'"):
            env.dataset("dev")

    def test_a_datasets_dataset_is_the_train_split(self, environments: Make) -> None:
        import datasets

        env = environments(
            AgentEnv.mcp, memory(), rows=datasets.Dataset.from_list([{"prompt": PROMPT, "n": 1}])
        )
        assert env.dataset("train")[0]["n"] == 1

    def test_a_row_without_a_prompt_is_refused_naming_it(self) -> None:
        with pytest.raises(ValueError, match="row 1 of split 'train' has no 'prompt'"):
            MCPEnvironment(memory(), rows=[{"prompt": PROMPT}, {"task": 1}])


class TestWhatCannotBePublished:
    def test_a_tool_that_cannot_be_published_is_refused_naming_the_server_the_tool_and_why(
        self, environments: Make
    ) -> None:
        with pytest.raises(ToolDefinitionError) as refused:
            environments(AgentEnv.mcp, StdioServer(*_split(scripted("--unpublishable"))))
        assert str(refused.value).startswith(
            "MCP server 'scripted' lists tool 'reset', which agent_env cannot publish:"
        )
        assert "reserved for the episode's control" in str(refused.value)
        assert "skip_unpublishable=True" in str(refused.value)

    def test_a_recursive_schema_is_refused_saying_to_leave_the_tool_out_not_to_rewrite_the_servers_schema(
        self, environments: Make
    ) -> None:
        with pytest.raises(ToolDefinitionError) as refused:
            environments(
                AgentEnv.mcp, StdioServer(*_split(scripted("--unpublishable"))), tools=["tree", "count"]
            )
        said = str(refused.value)
        assert said.startswith(
            "MCP server 'scripted' lists tool 'tree', which agent_env cannot publish: leave it out (tools=[...] "
            "names the ones to keep), or pass skip_unpublishable=True to skip every such tool. Why it cannot: tool "
            "'tree': properties.node.properties.child: type 'node' refers to itself"
        )
        assert "input_schema" not in said  # what only a tool's author could give

    def test_skipping_is_an_opt_in_with_one_warning_per_tool(
        self, environments: Make, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.WARNING, "agent_env.mcp"):
            env = environments(
                AgentEnv.mcp, StdioServer(*_split(scripted("--unpublishable"))), skip_unpublishable=True
            )
        assert "reset" not in [tool["name"] for tool in env.tools()] and "tree" not in [
            tool["name"] for tool in env.tools()
        ]
        skipped = [record.message for record in caplog.records if "skipped" in record.message]
        assert len(skipped) == 2
        assert "tool 'tree'" in skipped[1] and "refers to itself" in skipped[1]


class TestTravel:
    def test_the_factory_pickles_as_its_description_and_builds_its_own_servers(
        self, environments: Make
    ) -> None:
        env = environments(AgentEnv.mcp, memory(), reward=names_in_graph)
        copy = pickle.loads(pickle.dumps(env.factory))
        try:
            assert (
                copy.provider.environment is not env.provider.environment
            )  # built again, with servers of its own
            assert copy.provider.tools() == env.tools()
            with copy.provider.open() as session:
                session.reset(prompt=PROMPT)
                session.call_tool("create_entities", {"entities": [ADA]})
                assert session.reward() == 1.0
        finally:
            copy.provider.close()


def _split(command: list[str]) -> tuple[str, list[str]]:
    return command[0], command[1:]
