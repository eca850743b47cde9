"""The wire table of errors (`errors.py`): every code is unique, every class has its status, and the client maps
codes back to the very classes the server raised."""

from __future__ import annotations

import pytest

from agent_env import errors as core
from agent_env.server import errors
from agent_env.server.errors import HTTP_STATUS, WIRE_ERRORS, error_class, http_status


def test_every_wire_error_has_its_own_code_and_a_status():
    assert len(WIRE_ERRORS) == len({cls.code for cls in WIRE_ERRORS.values()})
    for code, cls in WIRE_ERRORS.items():
        assert cls.code == code
        assert 400 <= http_status(cls("x")) < 600


def test_every_error_the_model_can_fix_crosses_the_wire_as_itself():
    model_errors = [core.ToolError, core.ToolArgumentError, core.UnknownToolError, core.EpisodeStateError,
                    core.EpisodeNotStartedError, core.EpisodeEndedError, core.SessionClosedError]  # fmt: skip
    for cls in model_errors:
        assert error_class(cls.code, http_status(cls("x"))) is cls


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (core.ToolArgumentError("x"), 422),
        (core.UnknownToolError("x"), 422),
        (core.EpisodeEndedError("x"), 409),
        (errors.EpisodeNotFoundError("x"), 404),
        (errors.TooManyEpisodesError("x"), 503),
        (errors.CallTimeoutError("x"), 504),
        (errors.RequestTooLargeError("x"), 413),
        (errors.UnauthorizedError("x"), 401),
        (errors.ResetError("x"), 400),
        (core.AgentEnvError("x"), 500),
    ],
)
def test_each_error_has_its_documented_status(error, status):
    assert http_status(error) == status


def test_an_unknown_code_falls_back_by_status():
    assert error_class("an_environments_own_rule", 422) is core.ToolError
    assert error_class("an_environments_own_state", 409) is core.EpisodeStateError
    assert error_class("teapot", 418) is errors.RemoteError


def test_remote_errors_are_agent_env_errors_and_connection_errors():
    for cls in WIRE_ERRORS.values():
        if issubclass(cls, errors.RemoteError):
            assert issubclass(cls, core.AgentEnvError) and issubclass(cls, ConnectionError)
    assert issubclass(errors.CallTimeoutError, TimeoutError)
    assert issubclass(errors.EpisodeNotFoundError, LookupError)
    assert set(HTTP_STATUS) <= set(WIRE_ERRORS.values())
