"""Make a random model call tools: a regular expression over Qwen3's (Hermes') tool-call format that vLLM's structured
outputs hold its sampling to, and a proxy that adds it to requests a trainer sends without it.

A randomly initialised model writes no tool call of its own. With vLLM's structured outputs it can only write what
the expression allows: one `<tool_call>` naming one of the calls given (each a tool and a pattern of its arguments,
fixed or sampled, valid or not), or one of the texts given. What the calls then meet (the chat template, TRL's
parser or vLLM's `hermes` parser, the tools, the rewards) is the real thing.

TRL's GRPOTrainer takes the expression as a setting (`vllm_structured_outputs_regex`) and `agent-env eval` as a
request field (`--extra-body '{"structured_outputs": {"regex": ...}}'`). AsyncGRPO's rollout worker has no such
setting: `StructuredOutputsProxy` stands between it and the server and adds the field to each `/v1/completions`
request, so neither TRL nor vLLM is changed.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SPECIAL = re.compile(r"([\\.^$*+?{}\[\]()|])")


def escape(text: str) -> str:
    """`text` as a pattern matching itself: only the pattern syntax is escaped (`re.escape` also escapes spaces and
    dashes, which xgrammar's regular expressions warn about)."""
    return SPECIAL.sub(r"\\\1", text)


def literal(arguments: Mapping[str, Any]) -> str:
    """A pattern matching exactly these arguments as JSON (`json.dumps`' spacing)."""
    return escape(json.dumps(arguments))


def call(name: str, arguments: str = r"\{\}") -> str:
    """A pattern of one Hermes tool call: `name` with arguments matching `arguments` (a pattern of JSON text)."""
    return r"<tool_call>\n\{" + escape(f'"name": "{name}", "arguments": ') + arguments + r"\}\n</tool_call>"


def forced(calls: Sequence[str], texts: Sequence[str] = ()) -> str:
    """A pattern allowing exactly one of `calls` (from `call`) or one of `texts` (patterns of plain text)."""
    return "(" + "|".join([*calls, *texts]) + ")"


def structured_outputs(pattern: str) -> dict[str, Any]:
    """The request field vLLM reads: `{"structured_outputs": {"regex": pattern}}`."""
    return {"structured_outputs": {"regex": pattern}}


class StructuredOutputsProxy:
    """A loopback HTTP proxy to a vLLM server that adds `fields` (e.g. `structured_outputs(pattern)`) to the body of
    every `/v1/completions` request and passes everything else through as it is.

    Args:
        upstream: The server's root, without `/v1`.
        fields: What to add to each completion request.
    """

    def __init__(self, upstream: str, fields: Mapping[str, Any]) -> None:
        self.upstream = upstream.rstrip("/")
        self.fields = dict(fields)
        self.completions = 0
        """How many completion requests it has passed on."""
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                proxy._forward(self, None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                proxy._forward(self, self.rfile.read(length))

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="structured-outputs-proxy")
        self._thread.daemon = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes | None) -> None:
        if body is not None and handler.path.split("?")[0] == "/v1/completions":
            body = json.dumps({**json.loads(body), **self.fields}).encode()
            self.completions += 1
        headers = {"Content-Type": handler.headers.get("Content-Type", "application/json")}
        request = urllib.request.Request(self.upstream + handler.path, data=body, headers=headers)
        request.method = handler.command
        try:
            with urllib.request.urlopen(request, timeout=900) as response:
                status, answer, kind = response.status, response.read(), response.headers.get("Content-Type")
        except urllib.error.HTTPError as error:
            status, answer, kind = error.code, error.read(), error.headers.get("Content-Type")
        handler.send_response(status)
        handler.send_header("Content-Type", kind or "application/json")
        handler.send_header("Content-Length", str(len(answer)))
        handler.end_headers()
        handler.wfile.write(answer)

    def __enter__(self) -> StructuredOutputsProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


SUBMISSION = {
    "curves": [
        {"hours": "HE03-HE04", "points": [[-50, 30], [0, 31]]},
        {"hours": "HE19", "points": [[0, 40], [50, 41]]},
    ]
}
"""Charge at night below $30, discharge at 7 pm above $41: valid on every day, and it changes the desk's book."""
MALFORMED = {"curves": [{"hours": "HE07", "points": [[0, 20], ["60", 45, 1]]}]}
"""A point of three items, the first a string: refused with the teaching error."""
DESK_CALLS = forced(
    [
        call("desk_brief"),
        call("submit_dam_offers", literal(SUBMISSION)),
        call("price_history", r'\{"days": [12]\}'),  # a day or two (a week's prices: 850 tokens to train on)
        call("submit_dam_offers", literal(MALFORMED)),
        call("price_history", r'\{"days": [89]\}'),  # above the schema's maximum of 7
        call("battery_status", literal({"verbose": True})),  # an argument the tool does not take
        call("withdraw_offers", literal({"hours": 25})),  # neither a string nor a list of hours
        call("as_price_forecast", literal({"product": "energy"})),  # not one of the products
    ]
)
"""The desk's valid calls (one that books offers) and malformed ones, more of those: nearly every rollout meets the
teaching error. No `end_turn`: each rollout calls until `max_tool_calling_iterations`, then is scored."""
TAU2_CALLS = forced(
    [
        call("get_user_details", literal({"user_id": "emma_kim_9957"})),
        call("get_reservation_details", literal({"reservation_id": "EHGLP3"})),
        call("cancel_reservation", r'\{"reservation_id": "(EHGLP3|[A-Z0-9]{6})"\}'),  # the real one, or none
        call("message_user", literal({"message": "Could you confirm the cancellation, please?"})),
        call("get_reservation_details", literal({"reservation": "EHGLP3"})),  # a key the schema does not have
        call("get_user_details", literal({"user_id": 7})),  # not a string
        call("search_direct_flight", literal({"origin": "JFK"})),  # required arguments missing
        call("calculate", literal({"expr": "1+1"})),  # the wrong name for its argument
    ]
)
"""Task 0 of τ²-airline's train split (Emma Kim cancelling EHGLP3): its valid calls (one cancels, one reaches the
scripted user), a call the environment refuses (an unknown reservation) and malformed calls."""
