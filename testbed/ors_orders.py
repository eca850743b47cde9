"""An environment written with the `openreward` SDK's own tools and pydantic inputs, served by its own `Server`.

Run by the python of the ORS venv (testbed/ors_venv.py), never by agent_env's: `python ors_orders.py PORT`. Each
task asks for an order book whose total quantity is the task's `target`: `place_orders` takes a nested array of
objects (each with an enum, bounds and an optional list of objects), `submit` finishes the episode with reward 1.0 for
the right total (0.0 else), an order the desk cannot take costs -0.25 (a reward on a call that does not finish),
`peek` takes no arguments (its schema is null on the wire), and `explode` raises (the server sends `event: error`).
"""

from __future__ import annotations

import sys
from typing import Literal

from openreward.environments import Environment, JSONObject, Server, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field


class Fill(BaseModel):
    """Where part of an order is filled."""

    venue: Literal["lit", "dark"]
    share: float = Field(ge=0, le=1, description="The share of the order filled there")


class Order(BaseModel):
    """One order of the book."""

    side: Literal["buy", "sell"]
    qty: int = Field(ge=1, le=100, description="How many units")
    fills: list[Fill] | None = Field(default=None, description="Where it is filled, if split")


class PlaceOrders(BaseModel):
    orders: list[Order] = Field(min_length=1, max_length=5, description="The orders to place, in order")


class Submit(BaseModel):
    total: int = Field(description="The net quantity of the book: buys minus sells")


class Explode(BaseModel):
    why: str


class Orders(Environment):
    """Place orders, then submit the book's net quantity."""

    def __init__(self, task_spec: JSONObject = {}, secrets: dict[str, str] = {}) -> None:  # noqa: B006 (the SDK's)
        super().__init__(task_spec, secrets)
        self.book: list[Order] = []

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train", "test"]

    @classmethod
    def list_tasks(cls, split: str) -> list[JSONObject]:
        targets = {"train": [3, 5, 2, 4], "test": [1, 6]}[split]
        return [{"id": f"{split}-{index}", "target": target} for index, target in enumerate(targets)]

    def get_prompt(self) -> list[TextBlock]:
        return [
            TextBlock(text=f"Place orders whose net quantity is {self.task_spec['target']}, then submit it.")
        ]

    @tool
    def place_orders(self, params: PlaceOrders) -> ToolOutput:
        """Place orders in the book."""
        if any(
            order.fills and abs(sum(fill.share for fill in order.fills) - 1) > 1e-9 for order in params.orders
        ):
            return ToolOutput(blocks=[TextBlock(text="fills must share the whole order")], reward=-0.25)
        self.book.extend(params.orders)
        return ToolOutput(blocks=[TextBlock(text=f"{len(self.book)} orders in the book")])

    @tool
    def peek(self) -> ToolOutput:
        """Show the book."""
        shown = ", ".join(f"{order.side} {order.qty}" for order in self.book) or "empty"
        return ToolOutput(blocks=[TextBlock(text=shown)], metadata={"orders": len(self.book)})

    @tool
    def submit(self, params: Submit) -> ToolOutput:
        """Submit the book's net quantity; this ends the episode."""
        net = sum(order.qty if order.side == "buy" else -order.qty for order in self.book)
        right = params.total == net == self.task_spec["target"]
        return ToolOutput(
            blocks=[TextBlock(text="right" if right else "wrong")],
            reward=1.0 if right else 0.0,
            finished=True,
        )

    @tool
    def explode(self, params: Explode) -> ToolOutput:
        """Fail on purpose."""
        raise RuntimeError(f"exploded: {params.why}")


if __name__ == "__main__":
    Server([Orders]).run(host="127.0.0.1", port=int(sys.argv[1]))
