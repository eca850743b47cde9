"""An OpenEnv environment of our own for the interop tests and bench/openenv_latency.py, served by OpenEnv's real
server: `python openenv_ledger.py PORT MAX_SESSIONS`, run by the python of an OpenEnv venv (openenv_venvs.py), never
by agent_env's.

An order book with MCP tools in the shape OpenEnv's own MCP environments take (echo_env, finqa_env): `place_orders`
takes a nested argument (a list of orders, each with an enum and bounds), and `submit` ends the episode with a
reward, 1.0 when the total submitted is the net quantity bought and the reset's `target`, else 0.25.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Any
from uuid import uuid4

from fastmcp import FastMCP
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, Field


class Side(StrEnum):
    buy = "buy"
    sell = "sell"


class Order(BaseModel):
    side: Side = Field(description="Buy or sell.")
    qty: int = Field(ge=1, le=100, description="How many units.")
    price: float | None = Field(default=None, description="Limit price; none for market.")


class Ledger(MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("ledger")
        self.book: list[dict[str, Any]] = []
        self.target = 0

        @mcp.tool
        def place_orders(orders: list[Order], note: str = "") -> str:
            """Place orders in the book.

            Args:
                orders: The orders, at least one.
                note: A note to keep.
            """
            if not orders:
                raise ValueError("orders: send at least one order")
            self.book.extend(order.model_dump(mode="json") for order in orders)
            return f"{len(self.book)} orders in the book"

        @mcp.tool
        def submit(total: int) -> str:
            """Submit the net quantity bought.

            Args:
                total: Units bought minus units sold.
            """
            return f"submitted {total}"

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, target: int = 0, **kwargs: Any
    ) -> Observation:
        self.book = []
        self.target = target
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=None, metadata={"target": target})

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return Observation(
            done=False, reward=0.0, metadata={"error": f"unknown action {type(action).__name__}"}
        )

    def _scored(self, action: Action, observation: Observation) -> Observation:
        if isinstance(action, CallToolAction) and action.tool_name == "submit" and observation.error is None:
            net = sum(order["qty"] if order["side"] == "buy" else -order["qty"] for order in self.book)
            observation.done = True
            observation.reward = 1.0 if action.arguments.get("total") == net == self.target else 0.25
        return observation

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        return self._scored(action, super().step(action, timeout_s=timeout_s, **kwargs))

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        return self._scored(action, await super().step_async(action, timeout_s=timeout_s, **kwargs))

    @property
    def state(self) -> State:
        return self._state


if __name__ == "__main__":
    import uvicorn
    from openenv.core.env_server.http_server import create_app

    port, sessions = int(sys.argv[1]), int(sys.argv[2])
    app = create_app(
        Ledger, CallToolAction, CallToolObservation, env_name="ledger", max_concurrent_envs=sessions
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
