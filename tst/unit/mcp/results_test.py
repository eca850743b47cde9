"""An MCP tool result as the model reads it (`agent_env/mcp/_results.py`), on the SDK's own result types: text
joined, structured content shown once, media and resources named with their size, long results cut with a note."""

from __future__ import annotations

import base64
import json
from typing import Any

import mcp_types as types
import pytest

from agent_env.mcp._results import cut, read_result


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def result(*content: Any, structured: Any = None, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), structured_content=structured, is_error=is_error)


class TestText:
    def test_text_blocks_are_joined_with_newlines(self) -> None:
        assert read_result(result(text("one"), text("two"))).text == "one\ntwo"

    def test_unicode_and_control_characters_reach_the_model_as_sent(self) -> None:
        sent = "héllo \U0001f600 \u202ertl \x00"
        assert read_result(result(text(sent))).text == sent

    def test_no_content_reads_as_empty_text(self) -> None:
        assert read_result(result()).text == ""


class TestStructuredContent:
    def test_a_text_block_that_serializes_it_is_not_shown_twice_and_it_reads_as_compact_json(self) -> None:
        graph = {"entities": [{"name": "Ada"}], "relations": []}
        read = read_result(
            result(
                text('{\n  "entities": [\n    {"name": "Ada"}\n  ],\n  "relations": []\n}'), structured=graph
            )
        )
        assert read.text == '{"entities":[{"name":"Ada"}],"relations":[]}'
        assert read.structured == graph

    def test_a_text_block_that_serializes_its_only_value_is_not_shown_twice(self) -> None:
        # server-memory answers create_entities with the list as text, and {"entities": that list}
        entities = [{"name": "Ada", "observations": []}]
        read = read_result(
            result(text('[\n  {"name": "Ada", "observations": []}\n]'), structured={"entities": entities})
        )
        assert read.text == '{"entities":[{"name":"Ada","observations":[]}]}'

    def test_a_json_text_block_that_says_something_else_is_kept(self) -> None:
        read = read_result(result(text("plain"), text('{"a": 1}'), structured={"b": 2}))
        assert read.text == 'plain\n{"a": 1}\n{"b":2}'

    def test_other_text_comes_first_then_the_json(self) -> None:
        read = read_result(result(text("Weather now:"), structured={"temperature": 33}))
        assert read.text == 'Weather now:\n{"temperature":33}'

    def test_an_object_that_only_wraps_the_text_is_not_shown_again(self) -> None:
        # server-filesystem answers every call so: its text, and {"content": that text}
        listing = "[FILE] a.txt\n[DIR] sub"
        assert read_result(result(text(listing), structured={"content": listing})).text == listing

    def test_an_object_that_only_wraps_a_value_the_text_says_is_not_shown_again(self) -> None:
        # the Python SDK's FastMCP wraps a tool's plain return value so: {"result": 5}, and the text "5"
        assert read_result(result(text("5"), structured={"result": 5})).text == "5"

    def test_an_object_with_more_than_the_text_is_shown(self) -> None:
        read = read_result(result(text("done"), structured={"content": "done", "bytes": 4}))
        assert read.text == 'done\n{"content":"done","bytes":4}'

    def test_structured_content_alone_is_shown_with_its_unicode_as_is(self) -> None:
        assert read_result(result(structured={"name": "Zoë"})).text == '{"name":"Zoë"}'


class TestMediaAndResources:
    def test_images_and_audio_are_named_with_their_type_and_decoded_size(self) -> None:
        image = types.ImageContent(
            type="image", data=base64.b64encode(b"x" * 4033).decode(), mime_type="image/png"
        )
        audio = types.AudioContent(
            type="audio", data=base64.b64encode(b"\0\1").decode(), mime_type="audio/wav"
        )
        read = read_result(result(text("Here it is:"), image, audio))
        assert read.text == "Here it is:\n[image: image/png, 4,033 bytes]\n[audio: audio/wav, 2 bytes]"
        assert read.content[1]["mimeType"] == "image/png"  # the blocks as sent, for a reward to read

    def test_data_that_is_not_base64_is_named_as_such(self) -> None:
        image = types.ImageContent(type="image", data="not base64!", mime_type="image/png")
        assert (
            read_result(result(image)).text == "[image: image/png, 11 characters of data that is not base64]"
        )

    def test_an_embedded_text_resource_is_shown_with_its_text(self) -> None:
        embedded = types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="file:///notes.md", text="# Notes", mime_type="text/markdown"
            ),
        )
        assert read_result(result(embedded)).text == "[resource file:///notes.md (text/markdown)]\n# Notes"

    def test_an_embedded_blob_is_named_with_its_size(self) -> None:
        embedded = types.EmbeddedResource(
            type="resource", resource=types.BlobResourceContents(uri="file:///x.bin", blob="AAE=")
        )
        assert read_result(result(embedded)).text == "[resource file:///x.bin, 2 bytes]"

    def test_a_resource_link_is_named_with_what_it_says_of_itself(self) -> None:
        link = types.ResourceLink(
            type="resource_link",
            name="report",
            uri="file:///report.pdf",
            mime_type="application/pdf",
            size=12345,
            description="The quarterly report",
        )
        assert read_result(result(link)).text == (
            "[resource link: report at file:///report.pdf (application/pdf, 12,345 bytes): The quarterly report]"
        )


class TestErrorsAndLimits:
    def test_an_is_error_result_keeps_the_servers_own_text_and_its_flag(self) -> None:
        read = read_result(result(text("Entity with name Nobody not found"), is_error=True))
        assert (read.text, read.is_error) == ("Entity with name Nobody not found", True)

    def test_a_result_past_the_limit_is_cut_with_a_note_saying_how_long_it_was(self) -> None:
        read = read_result(result(text("é" * 120)), max_chars=100)
        assert read.text == "é" * 100 + (
            "\n[agent_env cut this result: it has 120 characters, and only the first 100 are shown "
            "(max_result_chars)]"
        )

    def test_a_result_at_the_limit_is_left_whole(self) -> None:
        assert cut("x" * 100, 100) == "x" * 100


class TestJson:
    def test_json_is_the_structured_content_first(self) -> None:
        assert read_result(result(text("5"), structured={"result": 5})).json() == {"result": 5}

    def test_json_is_the_text_parsed_without_structured_content(self) -> None:
        assert read_result(result(text('{"a": [1]}'))).json() == {"a": [1]}

    def test_json_reads_the_whole_text_of_a_result_cut_for_the_model(self) -> None:
        long = {"entities": [{"name": f"person-{index}"} for index in range(50)]}
        read = read_result(result(text(json.dumps(long))), max_chars=100)
        assert read.text.endswith("(max_result_chars)]")
        assert read.json() == long

    def test_json_of_text_that_is_not_json_raises(self) -> None:
        with pytest.raises(ValueError):
            read_result(result(text("Entity created"))).json()
