"""OpenEnv both ways: train on an OpenEnv server's MCP tools (`OpenEnvProvider`), and serve OpenEnv's wire surface
(`build_app(..., openenv_prefix="/openenv")`, in `agent_env.server`). Needs the `server` extra.

Importing this package loads nothing heavy; the client (`OpenEnvProvider`, `OpenEnvSession`) loads `websockets` and
`httpx` when first touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_env.openenv.client import OpenEnvProvider, OpenEnvSession

_LAZY = {"OpenEnvProvider": "agent_env.openenv.client", "OpenEnvSession": "agent_env.openenv.client"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agent_env.openenv' has no attribute {name!r}")


__all__ = ["OpenEnvProvider", "OpenEnvSession"]
