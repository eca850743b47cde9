"""OpenEnv both ways: train on an OpenEnv server's MCP tools (`OpenEnvProvider`, in `client.py`), and serve
OpenEnv's wire surface beside MCP (`build_app(ENV, surfaces=[OpenEnvSurface()])`, in `server/`). Needs the `server`
extra.

Both sides speak the wire format of `_wire.py`, which imports neither. Importing this package loads nothing heavy;
the client (`OpenEnvProvider`, `OpenEnvSession`) loads `websockets` and `httpx`, and the surface starlette, when
first touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_env.openenv.client import OpenEnvProvider, OpenEnvSession
    from agent_env.openenv.server import OPENENV_PREFIX, OpenEnvSurface

_LAZY = {
    "OPENENV_PREFIX": "agent_env.openenv.server",
    "OpenEnvProvider": "agent_env.openenv.client",
    "OpenEnvSession": "agent_env.openenv.client",
    "OpenEnvSurface": "agent_env.openenv.server",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agent_env.openenv' has no attribute {name!r}")


__all__ = ["OPENENV_PREFIX", "OpenEnvProvider", "OpenEnvSession", "OpenEnvSurface"]
