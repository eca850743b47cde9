"""Run an environment's episodes on a pool of Ray actors, for trainers on many processes and nodes: the `ray` extra.

Importing this package loads only its errors; `RayProvider` and `RaySession` load Ray when first touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_env.ray.errors import PoolMismatchError

if TYPE_CHECKING:
    from agent_env.ray._provider import RayProvider, RaySession

_LAZY = {"RayProvider": "agent_env.ray._provider", "RaySession": "agent_env.ray._provider"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agent_env.ray' has no attribute {name!r}")


__all__ = ["PoolMismatchError", "RayProvider", "RaySession"]
