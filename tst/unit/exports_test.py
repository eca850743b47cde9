"""The public surface: one `__all__`, sorted, pinned."""

import agent_env
import agent_env.training


def test_agent_env_exports_are_pinned_and_sorted():
    assert agent_env.__all__ == sorted(agent_env.__all__)
    assert agent_env.__all__ == [
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


def test_training_exports_are_pinned_and_sorted():
    assert agent_env.training.__all__ == [
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


def test_every_export_exists():
    for module in (agent_env, agent_env.training):
        for name in module.__all__:
            assert getattr(module, name) is not None
