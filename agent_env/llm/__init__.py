"""An OpenAI-compatible chat endpoint, as every part of agent_env that asks a model talks to one: the evaluated
model (`agent_env.evaluation`), a simulated user (`agent_env.users`), a judge. Retries are bounded and every fault
is counted; the API key is read from a variable, never written or shown. Needs the `llm` extra (`openai`).
"""

from agent_env.llm._client import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_BASE_URL,
    ENDING_FAULTS,
    RETRIED_FAULTS,
    ChatClient,
    Endpoint,
    EndpointError,
    RequestFailedError,
    Sampling,
)
from agent_env.llm._replies import Reply, ToolCall, reply_of

__all__ = [
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "ENDING_FAULTS",
    "RETRIED_FAULTS",
    "ChatClient",
    "Endpoint",
    "EndpointError",
    "Reply",
    "RequestFailedError",
    "Sampling",
    "ToolCall",
    "reply_of",
]
