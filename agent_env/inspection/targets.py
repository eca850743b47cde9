"""Turn the ENV a command names (a built-in name, `module:Class`, or a served URL) into an `AgentEnv`."""

from __future__ import annotations

from agent_env._agent_env import AgentEnv
from agent_env.envs import search_working_directory


def is_url(target: str) -> bool:
    """Whether `target` names a served environment rather than a class."""
    return target.startswith(("http://", "https://"))


def open_environment(target: str, *, token: str | None = None) -> AgentEnv:
    """The environment `target` names: `AgentEnv.connect` for a URL, `AgentEnv.local` otherwise.

    Raises:
        LookupError: No built-in environment or class has that name.
        ImportError: The module of a `module:Class` reference cannot be imported.
        AgentEnvError: The server at a URL cannot be reached or refuses the token.
    """
    if is_url(target):
        return AgentEnv.connect(target, token=token)
    search_working_directory()
    return AgentEnv.local(target)
