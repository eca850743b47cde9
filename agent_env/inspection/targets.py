"""Turn the ENV a command names (a built-in name, `module:Class`, a served URL, or `--mcp` servers) into an `AgentEnv`."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent_env._agent_env import AgentEnv
from agent_env.envs import DEFAULT_ENVIRONMENT, EnvironmentReference, search_working_directory

if TYPE_CHECKING:
    from agent_env.mcp import HttpServer, StdioServer

HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""What an HTTP header's name may be (RFC 9110's token)."""
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A `${VAR}` in an `--mcp-header` value: read from the environment, so that no secret is on the command line."""


def is_url(target: str) -> bool:
    """Whether `target` names a served environment rather than a class."""
    return target.startswith(("http://", "https://"))


def open_environment(
    target: str | None,
    *,
    token: str | None = None,
    mcp: Sequence[str] = (),
    mcp_headers: Sequence[str] = (),
    config: Mapping[str, Any] | None = None,
    limits: Mapping[str, float] | None = None,
) -> AgentEnv:
    """The environment `target` names: `AgentEnv.connect` for a URL, else `AgentEnv.local` of what
    `environment_reference` names (with `mcp`, an MCP environment of those servers, `mcp_headers` sent to their URLs),
    built with `config` (its constructor's arguments), under `limits` where given (`call_timeout`, `episode_budget`:
    an environment in this process's; `capacity_wait`: a served one's).

    Raises:
        LookupError: No built-in environment or class has that name.
        ImportError: The module of a `module:Class` reference cannot be imported.
        ValueError: Both a target and MCP servers, an `--mcp` value that names no server, or an `--mcp-header`
            that is malformed, names an unset variable, or has no `--mcp` URL to go to; `config` for a URL, whose
            environment the server built; a limit that the other kind of environment has instead.
        AgentEnvError: The server at a URL cannot be reached or refuses the token; an MCP server does not start.
    """
    limits = dict(limits or {})
    if not mcp and target is not None and is_url(target):
        _no_headers_without_urls(mcp_headers)
        if config:
            raise ValueError(
                f"{target} serves an environment the server built: give its settings ({', '.join(config)}) to "
                "`agent-env serve ... -c key=value` there, not here"
            )
        served = sorted(set(limits) - {"capacity_wait"})
        if served:
            flags = " and ".join("--" + name.replace("_", "-") for name in served)
            raise ValueError(
                f"{target}'s server bounds its episodes' calls: give {flags} to `agent-env serve` there"
            )
        return AgentEnv.connect(target, token=token, capacity_wait=limits.get("capacity_wait"))
    if "capacity_wait" in limits:
        raise ValueError(
            "--capacity-wait is for a served environment (a URL): one in this process is never full"
        )
    search_working_directory()
    return AgentEnv.local(environment_reference(target, mcp, mcp_headers), **limits, **(config or {}))


def environment_reference(
    target: str | None, mcp: Sequence[str] = (), mcp_headers: Sequence[str] = ()
) -> EnvironmentReference:
    """What a command's ENV, `--mcp` and `--mcp-header` name together: ENV (the built-in default when neither is
    given), or an `MCPEnvironment` of the `--mcp` servers, each URL sent the `--mcp-header` headers.

    Raises:
        ValueError: Both ENV and `--mcp` servers, an `--mcp` value that names no server, or an `--mcp-header` that
            is malformed, names an unset variable, or has no `--mcp` URL to go to.
    """
    if not mcp:
        _no_headers_without_urls(mcp_headers)
        return target or DEFAULT_ENVIRONMENT
    if target is not None:
        raise ValueError(f"name either ENV ({target!r}) or --mcp servers, not both")
    from agent_env.mcp import MCPEnvironment

    return MCPEnvironment(mcp_servers(mcp, mcp_headers))


def mcp_servers(
    values: Sequence[str], headers: Sequence[str] = ()
) -> StdioServer | HttpServer | dict[str, StdioServer | HttpServer]:
    """The servers `--mcp` values name, each URL sent the `--mcp-header` `headers`.

    Raises:
        ValueError: What `named_servers` and `header_values` refuse, or headers with no URL among the servers.
    """
    from agent_env.mcp import HttpServer

    servers = named_servers(values)
    if not headers:
        return servers
    sent = header_values(headers)
    keyed = servers if isinstance(servers, dict) else {"": servers}
    if not any(isinstance(server, HttpServer) for server in keyed.values()):
        _no_headers_without_urls(headers)
    keyed = {
        key: replace(server, headers=sent) if isinstance(server, HttpServer) else server
        for key, server in keyed.items()
    }
    return keyed if isinstance(servers, dict) else keyed[""]


def header_values(values: Sequence[str]) -> dict[str, str]:
    """The headers `--mcp-header 'NAME: VALUE'` values name, each `${VAR}` in a value read from the environment.

    No message shows a value: it may hold a secret (a value without `NAME:` may be one pasted alone).

    Raises:
        ValueError: A value without `NAME:`, a name that is no HTTP header's, one given twice, or a `${VAR}` unset.
    """
    headers: dict[str, str] = {}
    for value in values:
        name, separator, text = value.partition(":")
        name = name.strip()
        if not separator or not HEADER_NAME.fullmatch(name):
            raise ValueError(
                "--mcp-header takes 'NAME: VALUE' (e.g. 'Authorization: Bearer ${MCP_TOKEN}'); one of them does "
                "not start with a header name and ':' (it is not shown, in case it is a secret)"
            )
        if name.lower() in (known.lower() for known in headers):
            raise ValueError(f"--mcp-header names header {name!r} twice")
        headers[name] = _expanded(name, text.strip())
    return headers


def _expanded(name: str, text: str) -> str:
    """`text` with each `${VAR}` replaced by the variable's value; refused when one is unset or blank (a header
    sent without its secret is refused by the server with a 401 that names no variable)."""

    def value_of(match: re.Match[str]) -> str:
        variable = match.group(1)
        value = os.environ.get(variable, "")
        if not value.strip():
            raise ValueError(
                f"--mcp-header {name!r} reads ${{{variable}}}, but the environment variable {variable} is not set "
                f"(or empty): export {variable}=... before running the command"
            )
        return value

    expanded = VARIABLE.sub(value_of, text)
    if "\r" in expanded or "\n" in expanded:
        raise ValueError(f"--mcp-header {name!r}: its value holds a line break, which no HTTP header may")
    return expanded


def _no_headers_without_urls(headers: Sequence[str]) -> None:
    """Refuse headers that would go nowhere, rather than let the user think a server got them."""
    if headers:
        raise ValueError(
            "--mcp-header applies to --mcp URLs only (http://...), and no --mcp value is one: drop it, or name "
            "the server by its URL"
        )


def named_servers(values: Sequence[str]) -> StdioServer | HttpServer | dict[str, StdioServer | HttpServer]:
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
