"""The pure parts of `ServerSet` (`agent_env/mcp/_runtime.py`): how a reward tool's answer is read as a score, and
how a tool name that is not a Python identifier is published."""

from __future__ import annotations

from typing import Any

import pytest

from agent_env.errors import ToolError
from agent_env.mcp import ToolResult
from agent_env.mcp._runtime import _identifier, _number


def answer(text: str, structured: Any = None, *, is_error: bool = False) -> ToolResult:
    return ToolResult(text=text, structured=structured, is_error=is_error, content=[])


class TestRewardToolAnswers:
    @pytest.mark.parametrize(
        ("result", "score"),
        [
            (answer("0.75"), 0.75),
            (answer("1"), 1.0),
            (answer('{"score":0.5}', {"score": 0.5, "reward": 0.1, "steps": 3}), 0.5),
            (answer('{"reward":0.25}', {"reward": 0.25, "steps": 3}), 0.25),
            (answer('{"f1":0.8}', {"f1": 0.8, "note": "good"}), 0.8),  # the one number of an object
        ],
    )
    def test_a_number_as_text_or_structured_content_is_the_score(
        self, result: ToolResult, score: float
    ) -> None:
        assert _number(result, "grade") == score

    @pytest.mark.parametrize(
        "result",
        [
            answer("good job"),
            answer("true"),
            answer('{"precision":1,"recall":0.5}', {"precision": 1, "recall": 0.5}),
        ],
    )
    def test_anything_else_is_refused_quoting_the_answer(self, result: ToolResult) -> None:
        with pytest.raises(ToolError) as refused:
            _number(result, "grade")
        assert str(refused.value).startswith("the reward tool 'grade' answered ")
        assert str(refused.value).endswith(", not a score (a number)")

    def test_an_error_answer_is_reported_as_the_error_it_is_even_when_it_reads_as_a_number(self) -> None:
        with pytest.raises(ToolError) as refused:
            _number(answer("0.5", is_error=True), "grade")
        assert str(refused.value) == "the reward tool 'grade' answered with an error: \"0.5\""


class TestPublishedNames:
    @pytest.mark.parametrize(
        ("listed", "published"),
        [
            ("get-sum", "get_sum"),
            ("files.read", "files_read"),
            ("a/b c", "a_b_c"),
            ("read_graph", "read_graph"),
            ("lire_été", "lire_été"),  # already an identifier: kept
            ("import", "import_"),  # a keyword cannot name a Python function
            ("class-info", "class_info"),
            ("3d-print", "tool_3d_print"),  # nor can a digit begin one
            ("123", "tool_123"),
        ],
    )
    def test_every_character_that_cannot_be_in_an_identifier_becomes_an_underscore_and_a_keyword_gains_one(
        self, listed: str, published: str
    ) -> None:
        assert _identifier(listed) == published
