"""The Open Reward Standard both ways: train on an ORS server's environment (`ORSEnvironment`, which every provider
hosts, and `AgentEnv.ors(...)`), and serve any agent_env environment as one (`build_app(ENV,
surfaces=[ORSSurface()])`, `agent-env serve ENV --ors`, in `server/`). Needs the `server` extra (httpx to reach a
server; starlette to serve).

Both sides speak the wire format of `_wire.py`, which imports neither. Importing this package loads nothing heavy;
the client loads httpx, and the surface starlette, when first touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_env.ors._description import ORSEnvironment
    from agent_env.ors._environment import ORSToolsEnvironment
    from agent_env.ors.errors import (
        ORSError,
        ORSMalformedError,
        ORSRateLimitedError,
        ORSRefusedError,
        ORSServerError,
        ORSSessionExpiredError,
        ORSStreamError,
        ORSTimeoutError,
        ORSToolFailedError,
        ORSUnauthorizedError,
        ORSUnavailableError,
    )
    from agent_env.ors.server import ORSSurface

_ERRORS = (
    "ORSError",
    "ORSMalformedError",
    "ORSRateLimitedError",
    "ORSRefusedError",
    "ORSServerError",
    "ORSSessionExpiredError",
    "ORSStreamError",
    "ORSTimeoutError",
    "ORSToolFailedError",
    "ORSUnauthorizedError",
    "ORSUnavailableError",
)
_LAZY = {
    "ORSEnvironment": "agent_env.ors._description",
    "ORSToolsEnvironment": "agent_env.ors._environment",
    "ORSSurface": "agent_env.ors.server",
    **dict.fromkeys(_ERRORS, "agent_env.ors.errors"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agent_env.ors' has no attribute {name!r}")


__all__ = [
    "ORSEnvironment",
    "ORSError",
    "ORSMalformedError",
    "ORSRateLimitedError",
    "ORSRefusedError",
    "ORSServerError",
    "ORSSessionExpiredError",
    "ORSStreamError",
    "ORSSurface",
    "ORSTimeoutError",
    "ORSToolFailedError",
    "ORSToolsEnvironment",
    "ORSUnauthorizedError",
    "ORSUnavailableError",
]
