"""Issue 20, item 7: environments whose `reset` cannot take their own dataset's rows."""

from __future__ import annotations

from typing import Any

from agent_env import Environment


class Strict(Environment):
    """`reset(self, task_id)` without `**row`: TRL's rows also carry `prompt`, which it cannot take."""

    def reset(self, task_id: str) -> str:
        return f"Task {task_id}."

    def reward(self) -> float:
        return 0.0

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        return [{"prompt": [{"role": "user", "content": "Go."}], "task_id": f"{split}-{i}"} for i in range(3)]


class Demanding(Strict):
    """Takes `**row`, but requires a `level` that only some rows have."""

    def reset(self, task_id: str, level: int, **row: Any) -> str:  # type: ignore[override]
        return f"Task {task_id} at level {level}."

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        return [{**row, "level": 1} for row in super().dataset_rows(split)[:2]] + super().dataset_rows(split)[
            2:
        ]
