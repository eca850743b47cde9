"""The environments that ship with agent_env, by name, loaded only when asked for."""

from __future__ import annotations

import importlib
import os
import sys

from agent_env.environment import Environment

ENVIRONMENTS = {
    "gridsim-desk": "agent_env.envs.gridsim.desk:GridSimDesk",
}
"""Built-in environment names and where each class lives."""

DEFAULT_ENVIRONMENT = "gridsim-desk"


def load_environment(name: str) -> type[Environment]:
    """The environment class for a built-in name, or for a `package.module:Class` reference."""
    reference = ENVIRONMENTS.get(name, name)
    module_name, _, class_name = reference.partition(":")
    if not class_name:
        raise LookupError(
            f"unknown environment {name!r}; the built-in ones are {', '.join(ENVIRONMENTS)}, or name a class as "
            "'package.module:Class'"
        )
    environment = getattr(importlib.import_module(module_name), class_name, None)
    if not (isinstance(environment, type) and issubclass(environment, Environment)):
        raise LookupError(f"{reference!r} is not an agent_env Environment subclass")
    return environment


def search_working_directory() -> None:
    """Let a `module:Class` reference name a module in the working directory, as `python -m` does; for commands,
    which an installed entry point starts without the working directory on `sys.path`."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
