"""The ORS wire (`ors/_wire.py`): SSE events written and read, results held to their shape, blocks as text."""

from __future__ import annotations

import json

import pytest

from agent_env.ors import _wire as wire


def read(body: bytes) -> list[tuple[str, str]]:
    reader, found = wire.EventReader(), []
    for line in body.decode().splitlines():
        event = reader.line(line)
        if event is not None:
            found.append(event)
    return found


def test_events_round_trip_with_data_of_several_lines_and_comments_skipped():
    body = wire.sse_event("task_id", "abc") + wire.SSE_KEEPALIVE + wire.sse_event("end", "one\ntwo")
    assert read(body) == [("task_id", "abc"), ("end", "one\ntwo")]
    assert read(b"event: end\ndata:\n\n") == [("end", "")]
    assert read(b"id: 3\nretry: 10\nevent: chunk\ndata:x\n\n") == [
        ("chunk", "x")
    ]  # fields this wire does not use


def test_a_line_that_is_no_sse_field_is_malformed():
    with pytest.raises(wire.MalformedError, match="no SSE field: 'garbage'"):
        read(b"garbage\n\n")


def test_a_result_comes_in_chunks_of_4096_characters_the_last_one_end():
    text = "y" * (2 * wire.CHUNK_SIZE + 5)
    events = read(b"".join(wire.result_events("t", text)))
    assert [kind for kind, _ in events] == ["chunk", "chunk", "end"]
    assert "".join(data for _, data in events) == text
    assert read(b"".join(wire.result_events("t", "x" * wire.CHUNK_SIZE))) == [("end", "x" * wire.CHUNK_SIZE)]


def test_results_are_read_as_outputs_or_refusals():
    output = wire.read_result(
        json.dumps(wire.output_result("hi", reward=1, finished=True, metadata={"a": 1}))
    )
    assert output == wire.Output([wire.text_block("hi")], 1.0, True, {"a": 1})
    assert wire.read_result('{"ok": true, "output": {"blocks": []}}') == wire.Output([], None, False, None)
    assert wire.read_result(json.dumps(wire.refusal_result("no", "not_found"))) == wire.Refusal(
        "no", "not_found"
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[1]", 'no "ok" true or false'),
        ('{"ok": "yes"}', 'no "ok" true or false'),
        ('{"ok": false, "error": 3}', 'a text "error"'),
        ('{"ok": true, "output": {"blocks": [1]}}', '"blocks", a list of objects'),
        ('{"ok": true, "output": {"blocks": [], "reward": true}}', '"reward" must be a finite number'),
        ('{"ok": true, "output": {"blocks": [], "reward": 1e999}}', '"reward" must be a finite number'),
        ('{"ok": true, "output": {"blocks": [], "finished": 1}}', '"finished" must be true or false'),
        ('{"ok": true, "output": {"blocks": [], "metadata": []}}', '"metadata" must be an object'),
    ],
)
def test_a_result_of_the_wrong_shape_is_malformed_saying_what_is_wrong(text, said):
    with pytest.raises(wire.MalformedError, match=said):
        wire.read_result(text)


def test_blocks_read_as_text_and_an_image_or_unknown_block_is_named_never_dropped():
    blocks = [
        wire.text_block("a"),
        {"type": "image", "mimeType": "image/png", "data": "aGVsbG8="},
        {"type": "audio"},
    ]
    assert wire.blocks_text(blocks) == 'a\n[image: image/png, 5 bytes]\n[audio block: \'{"type":"audio"}\']'


def test_a_conversation_flattens_as_the_sdk_flattens_one():
    user = {"role": "user", "blocks": [wire.text_block("hi")]}
    assert wire.prompt_blocks([user]) == [wire.text_block("hi")]
    system = {"role": "system", "blocks": [wire.text_block("be brief")]}
    assert [block["text"] for block in wire.prompt_blocks([system, user])] == [
        "[system]",
        "be brief",
        "[user]",
        "hi",
    ]
