"""`agent_env.evaluation`'s public surface: one `__all__`, pinned."""

import agent_env.evaluation


def test_evaluation_exports_are_pinned_and_exist():
    assert agent_env.evaluation.__all__ == [
        "ACCEPTED", "COMPARISONS", "DEFAULT_API_KEY_ENV", "DEFAULT_BASE_URL", "DEFAULT_OUT", "ENDINGS", "MALFORMED",
        "REFUSED", "VERDICTS", "Arm", "ArmSummary", "CallOutcome", "ChatClient", "Comparison", "Endpoint",
        "EndpointError", "Episode", "Estimate", "Player", "Report", "RequestFailedError", "RunFile", "RunFileError",
        "Sampling", "Task", "ToolCall", "aevaluate", "arms", "compare", "evaluate", "pairs_needed", "plan",
        "run_call", "summarize", "tool_message", "tool_text",
    ]  # fmt: skip
    for name in agent_env.evaluation.__all__:
        assert getattr(agent_env.evaluation, name) is not None
