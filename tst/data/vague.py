"""Issue 20, item 5: tools that publish and run, but leave the model to guess what their author meant it to read: a
missing docstring, `Arg:` for `Args:`, a `dict` where a model was meant (at the top and nested)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agent_env import Environment, tool
from agent_env.tools import END_TURN, Tool, ToolSet


class Loan(BaseModel):
    days: int = Field(description="How long, in days.")
    extras: dict = Field(description="Anything else.")


class Vague(Environment):
    def reset(self, **row):
        return None

    def reward(self):
        return 0.0

    @tool
    def lend(self, isbn: str, options: dict) -> str:
        return isbn

    @tool
    def renew(self, isbn: str, loan: Loan) -> str:
        """Renew a loan.

        Arg:
            isbn: The book's ISBN.
            loan: The new terms.
        """
        return isbn


class VagueServer(Environment):
    """Tools as a third-party server publishes them (as `AgentEnv.mcp` builds them, with `Tool.from_schema`): one
    without a description, another with an undescribed parameter. No docstring here wrote them."""

    def reset(self, **row):
        return None

    def reward(self):
        return 0.0


VagueServer.tools = ToolSet(
    [
        Tool.from_schema("lookup", "", {"type": "object", "properties": {"q": {"type": "string"}}}, print),
        Environment.tools[END_TURN],
    ]
)
