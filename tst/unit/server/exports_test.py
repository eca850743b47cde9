"""The public surface of `agent_env.server`, pinned, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import agent_env.server


def test_the_public_names_are_pinned_and_sorted():
    assert agent_env.server.__all__ == [
        "CallTimeoutError",
        "DatasetNotFoundError",
        "EpisodeBudgetError",
        "EpisodeNotFoundError",
        "InvalidRequestError",
        "Mount",
        "RemoteError",
        "RemoteProvider",
        "RemoteSession",
        "RequestTooLargeError",
        "ResetError",
        "ServerError",
        "ServerUnavailableError",
        "Surface",
        "TooManyEpisodesError",
        "UnauthorizedError",
        "build_app",
        "serve",
    ]
    assert sorted(agent_env.server.__all__) == agent_env.server.__all__
    for name in agent_env.server.__all__:
        assert getattr(agent_env.server, name) is not None


def test_importing_the_package_loads_neither_the_mcp_sdk_nor_the_http_stack():
    code = (
        "import sys, agent_env.server, agent_env.cli; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'starlette', 'uvicorn', 'httpx'}))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_serve_and_build_app_are_the_functions_not_modules():
    import agent_env.server._serve

    assert callable(agent_env.server.serve) and agent_env.server.serve.__module__ == "agent_env.server._serve"
    assert agent_env.server.build_app.__module__ == "agent_env.server.app"
