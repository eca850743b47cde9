"""The one place a tool message is made: the text the model reads after a call, written as TRL's tool loop writes it.

TRL (`GRPOTrainer._tool_call_loop`, 1.16) calls `tool(**arguments)` and gives the model `str(result)`, or, when the
call raises, `str({"error": str(error)})`; a name it has no tool for raises `ValueError(f"Tool {name} not found.")`
there, and a call of another type than "function" reads `{"error": "Unsupported tool call type: ..."}`. agent_env's
errors reach that dict as `SchemaTool` hands them on (`readable`), so the model reads real lines. An evaluation
writes every tool message through `tool_text`, so what a model reads in an eval is what it reads in training
(`tst/trl/eval_parity_test.py` holds the two to the same text).
"""

from __future__ import annotations

from typing import Any

from agent_env.errors import AgentEnvError, ToolArgumentError
from agent_env.schema._describe import takes
from agent_env.schema._validator import format_problems
from agent_env.training._tools import readable


def tool_text(result: Any = None, error: BaseException | None = None) -> str:
    """What the model reads after a call: `str(result)`, or `str({"error": str(error)})` for a call that raised."""
    if error is not None:
        if isinstance(error, AgentEnvError):
            readable(error)
        return str({"error": str(error)})
    return result if isinstance(result, str) else str(result)


def upstream_text(result: Any = None, error: BaseException | None = None) -> str:
    """What the model reads after a call under a simulated user's protocol (τ²-bench's), as τ²-bench's environment
    writes its tool message (`Environment.get_response`, src/tau2/environment/environment.py, lines 473-490):
    the result's text, or `Error: ` and the error's text for a call that failed. agent_env's own teaching error for
    arguments that break the schema reaches the model in that form too."""
    if error is not None:
        return f"Error: {error}"
    return result if isinstance(result, str) else str(result)


def tool_not_found(name: str) -> ValueError:
    """The error τ²-bench's toolkit raises for a name it has no tool for (src/tau2/environment/toolkit.py, line 141):
    what the model reads, under its protocol, for a tool it was not offered."""
    return ValueError(f"Tool '{name}' not found.")


def tool_message(call_id: str, content: str) -> dict[str, Any]:
    """The `tool` message that answers call `call_id`, as an OpenAI-compatible server takes it."""
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def unknown_tool(name: str) -> ValueError:
    """The error TRL's tool loop raises for a name it has no tool for."""
    return ValueError(f"Tool {name} not found.")


def unsupported_call(kind: str) -> ValueError:
    """The error TRL's tool loop gives a call whose type is not "function"."""
    return ValueError(f"Unsupported tool call type: {kind}")


def unreadable_arguments(name: str, input_schema: Any, problem: str) -> ToolArgumentError:
    """The error for a call whose arguments are not JSON, in the words the schema validation uses.

    TRL never runs such a call: its parser reads the whole reply as text, and the rollout ends. A server hands it
    on as a string, so the model is told what schema validation tells it of arguments that are not an object.
    """
    fix = f"send a JSON object of named arguments (this tool {takes(input_schema, 'arguments')})"
    return ToolArgumentError(format_problems(name, [f"(arguments): not JSON ({problem}); {fix}"]))
