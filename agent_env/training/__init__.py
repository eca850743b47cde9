"""The training layer: SchemaTool and the TRL adapter (needs the `trl` extra: transformers)."""

from agent_env.training._tools import AsyncSchemaTool, SchemaTool
from agent_env.training.trl import EnvironmentFactory, TRLEnvironment, check_trl_version

__all__ = ["AsyncSchemaTool", "EnvironmentFactory", "SchemaTool", "TRLEnvironment", "check_trl_version"]
