"""agent_env: tool-using LLM environments whose tools publish, and hold calls to, their full JSON Schema."""

from agent_env._agent_env import AgentEnv
from agent_env._version import __version__ as __version__
from agent_env.environment import Environment
from agent_env.errors import (
    AgentEnvError,
    CallTimeoutError,
    EpisodeBudgetError,
    EpisodeEndedError,
    EpisodeNotStartedError,
    EpisodeStateError,
    InfrastructureFailedError,
    RewardError,
    SessionClosedError,
    TimedOutEpisodeError,
    ToolArgumentError,
    ToolDefinitionError,
    ToolError,
    ToolFailedError,
    UnknownToolError,
    UnscoredEpisodeError,
)
from agent_env.session import LocalProvider, LocalSession, Session
from agent_env.tools import Tool, ToolSet, tool

__all__ = [
    "AgentEnv",
    "AgentEnvError",
    "CallTimeoutError",
    "Environment",
    "EpisodeBudgetError",
    "EpisodeEndedError",
    "EpisodeNotStartedError",
    "EpisodeStateError",
    "InfrastructureFailedError",
    "LocalProvider",
    "LocalSession",
    "RewardError",
    "Session",
    "SessionClosedError",
    "TimedOutEpisodeError",
    "Tool",
    "ToolArgumentError",
    "ToolDefinitionError",
    "ToolError",
    "ToolFailedError",
    "ToolSet",
    "UnknownToolError",
    "UnscoredEpisodeError",
    "tool",
]
