"""A stdio MCP server written by hand (JSON-RPC lines, no SDK), for what no SDK lets a server do: break the protocol.

Flags: `--stall-listing-after FILE` (once FILE exists, `tools/list` is never answered), `--latin1-banner` (a line
that is not UTF-8 on stdout before anything else). Tools:

- `ok`: answers "fine".
- `not_utf8`: writes a line that is not UTF-8 to stdout, then answers "after the bytes".
- `null_content`: a result whose `content` is null.
- `breaks_output_schema`: structured content that its own `outputSchema` refuses.
- `error_code`: a JSON-RPC error with the code it is given (`{"code": -32000}`: JSON-RPC's generic server error).
- `hang`: never answers.
- `change_and_stall`: says its tools changed, and from then on never answers `tools/list`.
"""

import json
import os
import sys

OUT = sys.stdout.buffer
OBJECT = {"type": "object", "properties": {}}
TOOLS = [
    {"name": name, "description": f"The {name} tool.", "inputSchema": OBJECT}
    for name in ("ok", "not_utf8", "null_content", "hang", "change_and_stall")
] + [
    {
        "name": "error_code",
        "description": "Answers a JSON-RPC error with this code.",
        "inputSchema": {"type": "object", "properties": {"code": {"type": "integer"}}, "required": ["code"]},
    },
    {
        "name": "breaks_output_schema",
        "description": "Breaks its own output schema.",
        "inputSchema": OBJECT,
        "outputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
    },
]


STALLING = []


def send(message: dict) -> None:
    OUT.write(json.dumps(message).encode() + b"\n")
    OUT.flush()


def answer(request_id: object, result: dict) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def call(request_id: object, name: str, arguments: dict) -> None:
    if name == "ok":
        answer(request_id, {"content": [{"type": "text", "text": "fine"}]})
    elif name == "not_utf8":
        OUT.write(b"caf\xe9 \xff\xfe log line\n")
        answer(request_id, {"content": [{"type": "text", "text": "after the bytes"}]})
    elif name == "null_content":
        answer(request_id, {"content": None})
    elif name == "breaks_output_schema":
        answer(
            request_id,
            {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"x": "not a number"}},
        )
    elif name == "change_and_stall":
        STALLING.append(True)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        answer(request_id, {"content": [{"type": "text", "text": "changed"}]})
    elif name == "error_code":
        code = arguments["code"]
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": code, "message": f"the server's own error {code}"},
            }
        )


def stalled() -> bool:
    flag = "--stall-listing-after"
    return bool(STALLING) or (flag in sys.argv and os.path.exists(sys.argv[sys.argv.index(flag) + 1]))


if "--latin1-banner" in sys.argv:
    OUT.write(b"caf\xe9 server starting\n")
    OUT.flush()
for line in sys.stdin.buffer:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if method is None or request_id is None:
        continue  # answers and notifications
    if method == "initialize":
        answer(request_id, {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        })  # fmt: skip
    elif method == "tools/list" and not stalled():
        answer(request_id, {"tools": TOOLS})
    elif method == "tools/call":
        call(request_id, message["params"]["name"], message["params"].get("arguments") or {})
    elif method == "ping":
        answer(request_id, {})
    elif method != "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})
