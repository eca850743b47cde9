"""An environment whose tool takes a parameter named like a JSON Schema keyword (`type`), which the gemma4_v2 and
gemma4_v3 templates leave out of the prompt (issue 9): the factory and `agent-env check` refuse it under them."""

from __future__ import annotations

from agent_env import Environment, tool

KEYWORD_NAMED = {
    "type": "object",
    "properties": {"type": {"type": "string", "description": "The kind of note."}},
    "required": ["type"],
    "additionalProperties": False,
}


class Notes(Environment):
    def reset(self, **row):
        return None

    def reward(self):
        return 0.0

    @tool(input_schema=KEYWORD_NAMED)
    def note(self, type: str) -> str:
        """Keep a note."""
        return type
