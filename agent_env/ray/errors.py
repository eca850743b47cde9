"""The one error of its own the Ray provider raises: a pool that serves something other than what this process publishes.

Every other failure reuses the served path's classes (`agent_env.server.errors`): an episode lost with its actor is
an `EpisodeNotFoundError`, a call past its timeout a `CallTimeoutError`, a full pool a `TooManyEpisodesError`, a
cluster that cannot be reached a `ServerUnavailableError`.
"""

from __future__ import annotations

from agent_env.server.errors import RemoteError


class PoolMismatchError(RemoteError):
    """A Ray pool of that name already runs another environment, configuration or tool set than this process's."""

    code = "pool_mismatch"


__all__ = ["PoolMismatchError"]
