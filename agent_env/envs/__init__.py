"""The environments that ship with agent_env, by name, loaded only when asked for."""

from __future__ import annotations

import importlib
import os
import sys

from agent_env.environment import Environment, EnvironmentReference, environment_class_of

ENVIRONMENTS = {
    "gridsim-desk": "agent_env.envs.gridsim.desk:GridSimDesk",
    "tau2-airline": "agent_env.envs.tau2.airline:Tau2Airline",
    "tau2-mock": "agent_env.envs.tau2.mock:Tau2Mock",
    "tau2-retail": "agent_env.envs.tau2.retail:Tau2Retail",
    "tau2-telecom": "agent_env.envs.tau2.telecom:Tau2Telecom",
    "tau2-telecom-solo": "agent_env.envs.tau2.telecom:Tau2TelecomSolo",
    "tau2-telecom-workflow": "agent_env.envs.tau2.telecom:Tau2TelecomWorkflow",
    "tau2-telecom-workflow-solo": "agent_env.envs.tau2.telecom:Tau2TelecomWorkflowSolo",
}
"""Built-in environment names and where each class lives."""

DEFAULT_ENVIRONMENT = "gridsim-desk"


def load_environment(reference: EnvironmentReference) -> type[Environment]:
    """The environment class a reference names: a built-in name, `package.module:name` (where `name` is an
    `Environment` subclass or an `EnvironmentSource`), a class, or a source."""
    if not isinstance(reference, str):
        return environment_class_of(reference)
    target = ENVIRONMENTS.get(reference, reference)
    module_name, _, attribute = target.partition(":")
    if not attribute:
        raise LookupError(
            f"unknown environment {reference!r}; the built-in ones are {', '.join(ENVIRONMENTS)}, or name a class as "
            "'package.module:Class'"
        )
    environment = getattr(importlib.import_module(module_name), attribute, None)
    if environment is None:
        raise LookupError(f"{target!r} names nothing: module {module_name!r} has no {attribute!r}")
    try:
        return environment_class_of(environment)
    except LookupError:
        raise LookupError(
            f"{target!r} is not an agent_env Environment subclass (nor an MCPEnvironment)"
        ) from None


def search_working_directory() -> None:
    """Let a `module:Class` reference name a module in the working directory, as `python -m` does; for commands,
    which an installed entry point starts without the working directory on `sys.path`."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
