"""TRL's `VLLMClient.chat(tools=...)` sends each SchemaTool to the vLLM server as the schema it carries.

`chat()` (`trl/generation/vllm_client.py`) builds `[get_json_schema(tool) if callable(tool) else tool ...]`, and a
SchemaTool is callable: transformers' `get_json_schema` alone would raise on it (no docstring) or, through a bound
SchemaTool's `__func__`, write the lossy method schema. TRL's own client runs here end to end, `__init__`'s health
check and model listing included; only the HTTP requests are answered at the transport (requests'
`HTTPAdapter.send`), because no vLLM server runs in this tier (vLLM is not installed: the client's check that it is
is lifted, and nothing else of vLLM is used by `chat()`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from requests.adapters import HTTPAdapter

from agent_env import AgentEnv
from agent_env.training._render_check import discovered_tools
from testbed.toy import ToyDesk


class Transport:
    """Answers the client's requests as a vLLM server would, and keeps every body it was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def send(self, request: requests.PreparedRequest) -> requests.Response:
        body = json.loads(request.body) if request.body else None
        path = request.path_url
        self.sent.append((path, body))
        if path == "/health":
            answer: Any = {}
        elif path == "/v1/models":
            answer = {"data": [{"id": "tiny"}]}
        elif path == "/v1/chat/completions":
            answer = {"prompt_token_ids": [1, 2, 3], "choices": [{"token_ids": [4, 5], "logprobs": None}]}
        else:
            raise AssertionError(f"the client asked for {path}")
        response = requests.Response()
        response.status_code = 200
        response._content = json.dumps(answer).encode()
        response.headers["Content-Type"] = "application/json"
        response.url = request.url or ""
        response.request = request
        return response


@pytest.fixture
def transport(monkeypatch):
    import trl.generation.vllm_client as vllm_client

    transport = Transport()
    monkeypatch.setattr(HTTPAdapter, "send", lambda adapter, request, **kwargs: transport.send(request))
    monkeypatch.setattr(vllm_client, "is_vllm_available", lambda: True)
    return transport


def test_chat_sends_each_schema_tool_as_the_schema_it_carries(transport):
    from trl.generation.vllm_client import VLLMClient

    env = AgentEnv.local(ToyDesk)
    tools = discovered_tools(env.factory())  # as TRL finds them on an environment instance
    client = VLLMClient(base_url="http://127.0.0.1:9")
    result = client.chat(messages=[[{"role": "user", "content": "Offer."}]], tools=tools, logprobs=None)

    assert result["completion_ids"] == [[4, 5]]
    (payload,) = [body for path, body in transport.sent if path == "/v1/chat/completions"]
    assert payload["tools"] == [dict(tool) for tool in tools]
    curves = payload["tools"][[tool.__name__ for tool in tools].index("submit_offers")]["function"]
    assert curves["parameters"] == ToyDesk.tools["submit_offers"].published()["inputSchema"]  # nested, whole
    env.close()
