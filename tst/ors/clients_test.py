"""The openreward SDK's own client and TRL's own ORS adapter against `agent-env serve --ors`: whole episodes, each
answer compared with what agent_env does in process (tst/ors/drive.py ran them, in the SDK's venv)."""

from __future__ import annotations

import json

import httpx
import pytest

from agent_env import LocalSession
from agent_env.training.trl import own_paragraph
from testbed.toy import MALFORMED, VALID, ToyDesk

CURVE = {"hours": "HE07-HE10", "points": [[-50, 20], [50, 40]]}


@pytest.fixture(scope="module")
def sdk(ors_tier):
    report = ors_tier.report()["sdk"]
    assert "failed" not in report, report.get("traceback")
    return report


@pytest.fixture(scope="module")
def trl(ors_tier):
    report = ors_tier.report()["trl"]
    assert "failed" not in report, report.get("traceback")
    return report


def in_process(row: dict, *calls: tuple[str, dict]) -> tuple[list[str], float]:
    """The texts of `calls` and the reward of an episode of `row` in process."""
    with LocalSession(ToyDesk()) as session:
        session.reset(**row)
        texts = [session.call_tool(name, arguments) for name, arguments in calls]
        return texts, session.reward()


def test_the_sdk_client_lists_every_tool_with_its_published_schema_byte_for_byte(sdk):
    assert sdk["tools"] == [
        {
            "name": tool["name"],
            "description": tool["description"],
            "input_schema": json.dumps(tool["inputSchema"], separators=(",", ":")),
        }
        for tool in ToyDesk.tools.published
    ]
    assert sdk["bare_tools"] == [
        tool["name"] for tool in ToyDesk.tools.published
    ]  # GET /tools, told by its sid


def test_the_sdk_client_reads_the_splits_and_their_rows_as_tasks(sdk):
    rows = ToyDesk().dataset_rows
    assert sdk["splits"] == ["train", "validation", "test"]
    assert sdk["tasks"] == rows("train")
    assert sdk["num_tasks"] == len(rows("test"))
    assert sdk["task"] == rows("test")[1]
    assert sdk["range"] == rows("train")[-2:]


def test_a_whole_episode_reads_and_scores_as_in_process(sdk):
    row = ToyDesk().dataset_rows("train")[0]
    observation = LocalSession(ToyDesk()).reset(**row)
    assert sdk["prompt"] == [row["prompt"][0]["content"] + own_paragraph(observation, row)]
    texts, reward = in_process(
        row, ("submit_offers", VALID), ("write_note", {"text": "ünïcode"}), ("end_turn", {})
    )
    assert [sdk["valid"]["text"], sdk["note"]["text"], sdk["end_turn"]["text"]] == texts
    assert [sdk[key]["finished"] for key in ("valid", "note", "end_turn")] == [False, False, True]
    assert [sdk[key]["reward"] for key in ("valid", "note")] == [None, None]
    assert sdk["end_turn"]["reward"] == reward == 0.3  # the reward, with the result that ends the episode


def test_refused_calls_are_the_model_errors_the_sdk_raises_with_the_in_process_words(sdk):
    with LocalSession(ToyDesk()) as session:
        session.reset(task="t")
        with pytest.raises(Exception) as malformed:
            session.call_tool("submit_offers", MALFORMED)
        with pytest.raises(Exception) as unknown:
            session.call_tool("no_such_tool", {})
        session.call_tool("end_turn", {})
        with pytest.raises(Exception) as after:
            session.call_tool("battery_status", {})
    assert sdk["malformed"] == ["ToolCallError", "input_validation", str(malformed.value)]
    assert sdk["unknown"] == ["ToolCallError", "not_found", str(unknown.value)]
    assert sdk["after_end"] == ["ToolCallError", "episode_finished", str(after.value)]  # the finished latch


def test_a_tool_that_raises_is_its_output_the_model_reads_and_the_episode_goes_on(sdk):
    assert sdk["tool_raised"] == {
        "text": "tool 'battery_status' failed: ConnectionError: the battery's telemetry is down",
        "reward": None,
        "finished": False,
        "metadata": {"error": "tool_failed"},
    }
    assert sdk["after_raise"]["text"] == "accepted 1 curves and 0 AS offers"


def test_an_episode_that_cannot_be_scored_is_an_error_event_never_a_reward(sdk):
    assert sdk["unscored"].startswith("ToolFailed: ")
    assert "ToyDesk could not score the episode of row" in sdk["unscored"]
    assert "its reward() raised ZeroDivisionError: division by zero" in sdk["unscored"]


def test_a_prompt_by_split_and_index_is_that_rows(sdk):
    row = ToyDesk().dataset_rows("test")[2]
    observation = LocalSession(ToyDesk()).reset(**row)
    assert sdk["indexed_prompt"] == [row["prompt"][0]["content"] + own_paragraph(observation, row)]
    assert sdk["messages"] == [["user", sdk["indexed_prompt"]]]


def test_trls_adapter_plays_whole_episodes_with_the_rewards_of_in_process(trl):
    rows = ToyDesk().dataset_rows("train")
    assert [row["task_index"] for row in trl["rows"]] == [0, 1, 2]
    assert [row["task"] for row in trl["rows"]] == [row["task"] for row in rows[:3]]
    for index, episode in enumerate(trl["episodes"]):
        texts, reward = in_process(
            rows[index], ("submit_offers", {"curves": [CURVE] * (index + 1)}), ("end_turn", {})
        )
        assert episode["reward"] == episode["reward_func"] == reward == pytest.approx(0.1 * (index + 1))
        assert episode["finished"] is True and episode["rewards"][:3] == [None, None, reward]
        assert episode["texts"][0] == texts[0] and episode["texts"][2] == texts[1]
        # what the tool refused is its output, the same words as in process; after the end, the SDK's refusal
        assert episode["texts"][1] == "curves[0].points: prices must be non-decreasing"
        assert episode["texts"][3].startswith("Error: episode_finished: tool 'battery_status' was not run")


def test_trls_adapter_ports_each_nested_schema_to_a_bare_type_hint(trl):
    # what this project exists to fix: the adapter's methods carry `list`, nothing of the curves inside
    assert trl["signatures"]["submit_offers"] == "(self, curves: list, as_offers: list = None) -> str"


def test_every_session_the_clients_opened_was_deleted(ors_tier, sdk, trl):
    health = httpx.get(f"{ors_tier.agent_env.url()}/health", timeout=10).json()
    assert health["status"] == "ok" and health["episodes"] == 0 and health["stuck_calls"] == 0
