"""`MCPEnvironment` (`agent_env/mcp/_description.py`, its settings in `_settings.py`): every setting checked when it
is described (before any server starts), rows by split, and a description that pickles without what a process built
from it."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from agent_env.mcp import Episode, HttpServer, MCPEnvironment, StdioServer

SERVER = StdioServer("node", ["index.js"])
PROMPT = [{"role": "user", "content": "Record Ada."}]


def graded(episode: Episode) -> float:
    return 1.0


class TestServers:
    def test_one_server_has_no_prefix_and_several_are_keyed_by_name(self) -> None:
        assert MCPEnvironment(SERVER).keyed_servers() == {"": SERVER}
        clock = HttpServer("http://127.0.0.1:3001/mcp")
        assert MCPEnvironment({"graph": SERVER, "clock": clock}).keyed_servers() == {
            "graph": SERVER,
            "clock": clock,
        }

    @pytest.mark.parametrize(
        ("servers", "message"),
        [
            (
                {},
                "servers must be a StdioServer, an HttpServer, or a non-empty mapping of names to them, not {}",
            ),
            ("node index.js", 'not "node index.js"'),
            (
                {"my-graph": SERVER},
                "server name 'my-graph' must be an identifier: it prefixes its tools' names",
            ),
            (
                {"graph": "node index.js"},
                "server 'graph' must be a StdioServer or an HttpServer, not \"node index.js\"",
            ),
        ],
    )
    def test_what_is_not_servers_is_refused(self, servers: Any, message: str) -> None:
        with pytest.raises(ValueError) as refused:
            MCPEnvironment(servers)
        assert message in str(refused.value)


class TestSettings:
    @pytest.mark.parametrize(
        ("settings", "message"),
        [
            ({"tools": "read_graph"}, "tools must be a list of tool names, not one string ('read_graph')"),
            ({"reward": 1.0}, "reward must be a function of the episode or a tool name, not 1.0"),
            ({"setup": "load"}, 'setup must be a function of the episode, not "load"'),
            ({"warm": -1}, "warm must be a whole number of connections, 0 or more, not -1"),
            ({"warm": True}, "warm must be a whole number of connections, 0 or more, not True"),
            ({"call_timeout": 0}, "call_timeout must be a positive number of seconds, not 0"),
            ({"call_timeout": float("inf")}, "call_timeout must be a positive number of seconds, not inf"),
            ({"start_timeout": "30"}, "start_timeout must be a positive number of seconds, not '30'"),
            ({"call_timeout": True}, "call_timeout must be a positive number of seconds, not True"),
            ({"max_result_chars": 0}, "max_result_chars must be a positive whole number, not 0"),
            ({"max_result_chars": True}, "max_result_chars must be a positive whole number, not True"),
        ],
    )
    def test_a_malformed_setting_is_refused_naming_it(self, settings: dict[str, Any], message: str) -> None:
        with pytest.raises(ValueError) as refused:
            MCPEnvironment(SERVER, **settings)
        assert str(refused.value) == message

    def test_the_tools_to_keep_are_held_as_given(self) -> None:
        assert MCPEnvironment(SERVER, tools=["read_graph", "create_entities"]).tools == (
            "read_graph",
            "create_entities",
        )

    def test_the_label_is_the_name_else_the_servers(self) -> None:
        assert MCPEnvironment(SERVER, name="graph").label() == "graph"
        assert MCPEnvironment({"a": SERVER, "b": StdioServer("uvx", ["mcp-server-time"])}).label() == (
            "node index.js + uvx mcp-server-time"
        )


class TestRows:
    def test_a_list_of_rows_is_the_train_split(self) -> None:
        environment = MCPEnvironment(SERVER, rows=[{"prompt": PROMPT, "task_id": "a"}])
        assert environment.dataset_rows("train") == [{"prompt": PROMPT, "task_id": "a"}]

    def test_a_mapping_names_the_splits(self) -> None:
        environment = MCPEnvironment(
            SERVER, rows={"train": [{"prompt": PROMPT}], "test": ({"prompt": "Hi"},)}
        )
        assert environment.dataset_rows("test") == [{"prompt": "Hi"}]
        with pytest.raises(
            LookupError, match=r"node index\.js has no dataset split 'dev': the splits are 'train', 'test'"
        ):
            environment.dataset_rows("dev")

    def test_no_rows_is_a_lookup_error_that_says_so(self) -> None:
        with pytest.raises(
            LookupError,
            match=r"has no dataset split 'train': it was given no rows: give them with MCPEnvironment\(\.\.\., rows=\.\.\.\) .* or to agent-env eval with --rows FILE",
        ):
            MCPEnvironment(SERVER).dataset_rows("train")

    def test_a_datasets_dataset_with_nested_columns_gives_its_rows_back_whole(self) -> None:
        datasets = pytest.importorskip("datasets")
        target = {"entities": [{"name": "Ada", "observations": ["engineer"]}], "relations": []}
        rows = datasets.Dataset.from_list([{"prompt": PROMPT, "target": target, "tags": ["a", "b"]}])
        (row,) = MCPEnvironment(SERVER, rows=rows).dataset_rows("train")
        assert row == {"prompt": PROMPT, "target": target, "tags": ["a", "b"]}

    def test_rows_handed_out_are_copies(self) -> None:
        environment = MCPEnvironment(SERVER, rows=[{"prompt": PROMPT}])
        environment.dataset_rows("train")[0]["prompt"] = "changed"
        assert environment.dataset_rows("train")[0]["prompt"] == PROMPT

    @pytest.mark.parametrize(
        ("rows", "message"),
        [
            (
                [{"prompt": PROMPT}, {"task": 1}],
                "row 1 of split 'train' has no 'prompt' (the conversation TRL starts",
            ),
            ([{"prompt": PROMPT}, "Record Ada."], "row 1 of split 'train' is \"Record Ada.\", not a mapping"),
            (
                {"test": {"prompt": PROMPT}},
                "rows of split 'test' must be a list of rows (dicts) or a datasets.Dataset",
            ),
            ((row for row in [{"prompt": PROMPT}]), "rows of split 'train' must be a list of rows"),
        ],
    )
    def test_malformed_rows_are_refused_naming_the_split_and_the_row(self, rows: Any, message: str) -> None:
        with pytest.raises(ValueError) as refused:
            MCPEnvironment(SERVER, rows=rows)
        assert message in str(refused.value)


class TestPickling:
    def test_a_description_travels_with_its_settings_and_without_what_this_process_built(self) -> None:
        environment = MCPEnvironment(SERVER, reward=graded, rows=[{"prompt": PROMPT}], warm=1, name="graph")
        environment._built["class"] = object  # as if this process had built it
        copy = pickle.loads(pickle.dumps(environment))
        assert (copy.servers, copy.reward, copy.rows, copy.warm, copy.name) == (
            SERVER, graded, {"train": [{"prompt": PROMPT}]}, 1, "graph",
        )  # fmt: skip
        assert copy._built == {} and environment._built == {"class": object}
