"""`ORSEnvironment`: a picklable description of an environment served over the Open Reward Standard.

It says which server, which environment there, which variable holds the key, which tools, and the limits (its
settings, `ORSSettings`, checked in `_settings.py`). Each process that uses it builds the environment class from it
once (`environment_class()`: the server asked for its tools, which are published), and providers ship the
description, never the class, between processes: it is an `agent_env.environment.EnvironmentSource`. The key is
never in it: each process reads it from the variable.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from agent_env.ors._environment import ORSToolsEnvironment, build_class
from agent_env.ors._settings import ORSSettings


@dataclass(frozen=True, eq=False)
class ORSEnvironment(ORSSettings):
    """An environment of an ORS server as an agent_env environment: pass it wherever an environment class goes
    (`AgentEnv.local`, `AgentEnv.ray`, `build_app`, `agent-env serve module:name`); `AgentEnv.ors(...)` builds one and
    runs it here.

    Args:
        base_url: The server's URL (`http://127.0.0.1:8080`, `https://...`).
        env_name: The environment's name on the server (`GET /list_environments` lists them; the SDK names each
            after its class, lower-cased). None: the server's only one.
        api_key_env: The name of the environment variable that holds the key (sent as `X-API-Key`, never shown);
            None sends none.
        name: The environment's name here (TRL names its reward column after it); default: `env_name`.
        tools: The names of the tools the model is shown (default: all).
        skip_unpublishable: Skip, with one warning each, the tools whose names or schemas agent_env cannot publish,
            instead of refusing the environment.
        timeout: Seconds each request may take to answer (a call's stream: to send anything, keep-alives included).
        call_timeout: Seconds one tool call may take in all; past it the session is given up. None: as long as the
            server keeps the stream alive.
        retries: How many times a request is sent again after a fault that may pass, where sending it again is safe.
        start_timeout: Seconds to wait for an environment the server says is still starting.
        ping_interval: Seconds between the keep-alive pings of a live session.
        max_result_chars: The longest result the model reads; longer ones are cut with a note.
        transport: An `httpx.AsyncBaseTransport` to reach the server by (tests pass an in-memory one); None: the
            network.

    Raises:
        ValueError: A setting is malformed; the message says which and how to fix it.
    """

    _built: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def environment_class(self) -> type[ORSToolsEnvironment]:
        """The environment class, built once in this process: its server asked for the environment and its tools.

        Raises:
            ToolDefinitionError: A tool cannot be published (naming it and why), unless `skip_unpublishable`; a tool
                `tools=` names is not listed; the server serves several environments and none is named.
            ORSError: The server cannot be reached, refused the key, or answered what the wire does not allow.
            ValueError: `api_key_env` names a variable that is not set.
        """
        with _build_lock:
            built: type[ORSToolsEnvironment] | None = self._built.get("class")
            if built is None:
                built = build_class(self)
                self._built["class"] = built
            return built

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_built"] = {}  # each process builds its own class, with a client (and the key) of its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)


_build_lock = threading.RLock()


__all__ = ["ORSEnvironment"]
