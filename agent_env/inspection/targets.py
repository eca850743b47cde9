"""Turn the ENV a command names (a built-in name, `module:Class`, a served URL, or `--mcp` servers) into an `AgentEnv`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent_env._agent_env import AgentEnv
from agent_env.envs import DEFAULT_ENVIRONMENT, EnvironmentReference, search_working_directory

if TYPE_CHECKING:
    from agent_env.mcp import HttpServer, StdioServer


def is_url(target: str) -> bool:
    """Whether `target` names a served environment rather than a class."""
    return target.startswith(("http://", "https://"))


def open_environment(target: str | None, *, token: str | None = None, mcp: Sequence[str] = ()) -> AgentEnv:
    """The environment `target` names: `AgentEnv.connect` for a URL, else `AgentEnv.local` of what
    `environment_reference` names (with `mcp`, an MCP environment of those servers).

    Raises:
        LookupError: No built-in environment or class has that name.
        ImportError: The module of a `module:Class` reference cannot be imported.
        ValueError: Both a target and MCP servers, or an `--mcp` value that names no server.
        AgentEnvError: The server at a URL cannot be reached or refuses the token; an MCP server does not start.
    """
    if not mcp and target is not None and is_url(target):
        return AgentEnv.connect(target, token=token)
    search_working_directory()
    return AgentEnv.local(environment_reference(target, mcp))


def environment_reference(target: str | None, mcp: Sequence[str] = ()) -> EnvironmentReference:
    """What a command's ENV and `--mcp` name together: ENV (the built-in default when neither is given), or an
    `MCPEnvironment` of the `--mcp` servers.

    Raises:
        ValueError: Both ENV and `--mcp` servers, or an `--mcp` value that names no server.
    """
    if not mcp:
        return target or DEFAULT_ENVIRONMENT
    if target is not None:
        raise ValueError(f"name either ENV ({target!r}) or --mcp servers, not both")
    from agent_env.mcp import MCPEnvironment

    return MCPEnvironment(mcp_servers(mcp))


def mcp_servers(values: Sequence[str]) -> StdioServer | HttpServer | dict[str, StdioServer | HttpServer]:
    """The servers `--mcp` values name: one `COMMAND` or `URL`, or several as `NAME=COMMAND|URL` (their tools then
    prefixed `NAME_`).

    Raises:
        ValueError: Several servers, not each named; a name given twice; an empty command, or a name without one.
    """
    from agent_env.mcp import server_from_text

    named: dict[str, StdioServer | HttpServer] = {}
    for value in values:
        name, separator, rest = value.partition("=")
        if separator and name.isidentifier() and not rest.strip():
            raise ValueError(f"--mcp {value!r} names server {name!r} but no command or URL after '='")
        if separator and name.isidentifier():
            if name in named:
                raise ValueError(f"--mcp names server {name!r} twice")
            named[name] = server_from_text(rest)
        elif len(values) > 1:
            raise ValueError(
                f"--mcp {value!r}: with several servers, name each one (--mcp memory='node index.js' --mcp "
                "time=http://127.0.0.1:3001/mcp); their tools are published as memory_..., time_..."
            )
        else:
            return server_from_text(value)
    return named
