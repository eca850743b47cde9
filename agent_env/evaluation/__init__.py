"""Evaluation: play an environment's episodes against an OpenAI-compatible endpoint (vLLM, SGLang, `transformers
serve`, llama.cpp's server, OpenAI) through the same sessions and validation as training, and sum them up; with
`compare_with="lossy"`, the same episodes again with TRL's method schemas. Needs the `eval` extra (`openai`).
"""

from agent_env.evaluation._arms import COMPARISONS, Arm, arms
from agent_env.evaluation._calls import (
    ACCEPTED,
    MALFORMED,
    REFUSED,
    VERDICTS,
    CallOutcome,
    ToolCall,
    run_call,
)
from agent_env.evaluation._episode import ENDINGS, Episode, Player, Task
from agent_env.evaluation._messages import tool_message, tool_text
from agent_env.evaluation._records import RunFile, RunFileError
from agent_env.evaluation._run import DEFAULT_OUT, Report, aevaluate, evaluate, plan
from agent_env.evaluation._stats import ArmSummary, Comparison, Estimate, compare, pairs_needed, summarize
from agent_env.llm import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_BASE_URL,
    ChatClient,
    Endpoint,
    EndpointError,
    RequestFailedError,
    Sampling,
)

__all__ = [
    "ACCEPTED",
    "COMPARISONS",
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "DEFAULT_OUT",
    "ENDINGS",
    "MALFORMED",
    "REFUSED",
    "VERDICTS",
    "Arm",
    "ArmSummary",
    "CallOutcome",
    "ChatClient",
    "Comparison",
    "Endpoint",
    "EndpointError",
    "Episode",
    "Estimate",
    "Player",
    "Report",
    "RequestFailedError",
    "RunFile",
    "RunFileError",
    "Sampling",
    "Task",
    "ToolCall",
    "aevaluate",
    "arms",
    "compare",
    "evaluate",
    "pairs_needed",
    "plan",
    "run_call",
    "summarize",
    "tool_message",
    "tool_text",
]
