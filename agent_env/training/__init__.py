"""The training layer: SchemaTool and the TRL adapter (needs the `trl` extra: transformers)."""

from agent_env.training._parsing import ToolCallParsingError, gptoss_response_template
from agent_env.training._render_check import RenderCheckError
from agent_env.training._tools import AsyncSchemaTool, SchemaTool
from agent_env.training.trl import EnvironmentFactory, TRLEnvironment, check_trl_version, episode_score
from agent_env.training.unscored import unscored_reward

__all__ = [
    "AsyncSchemaTool",
    "EnvironmentFactory",
    "RenderCheckError",
    "SchemaTool",
    "TRLEnvironment",
    "ToolCallParsingError",
    "check_trl_version",
    "episode_score",
    "gptoss_response_template",
    "unscored_reward",
]
