"""What an MCP server is to agent_env: a command to run over stdio, or a streamable-HTTP URL, as plain data."""

from __future__ import annotations

import os
import shlex
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

EPISODE_DIR = "episode_dir"
"""The placeholder (`{episode_dir}`) a stdio server's args, env and cwd may hold: a scratch folder of its own per
episode, made before the process starts and removed with it."""


LABEL_LENGTH = 64
"""The longest command line a message shows of a server (its end: the script, not the folders that lead to it)."""


@dataclass(frozen=True)
class StdioServer:
    """An MCP server run as a command whose stdin and stdout carry MCP; by default one fresh process per episode.

    Args:
        command: The program (`node`, `uvx`, a path).
        args: Its arguments; `{episode_dir}` becomes the episode's scratch folder.
        env: Variables set for it, over the few the MCP SDK passes through (`HOME`, `PATH`, `USER`, ...: nothing
            else of this process's environment reaches the server); `{episode_dir}` works here too.
        cwd: Its working directory (`{episode_dir}` works); default: this process's.
        shared: Keep ONE process for every episode of this process, for a server you know keeps no state between
            calls (a clock, a calculator); episodes are then not isolated from each other.
        name: How messages name it; default: the command and its first argument.
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | os.PathLike[str] | None = None
    shared: bool = False
    name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.command, str) or not self.command.strip():
            raise ValueError(f"StdioServer needs a command to run, not {self.command!r}")
        if isinstance(self.args, str):
            raise ValueError(
                f"StdioServer args must be a list of strings, not one string ({self.args!r}); "
                "use StdioServer.parse('command arg ...') to split a command line"
            )
        object.__setattr__(self, "args", tuple(str(arg) for arg in self.args))
        object.__setattr__(self, "env", dict(self.env) if self.env is not None else None)
        for text in self._templates():
            _check_placeholders(text, self.label)

    @classmethod
    def parse(cls, command_line: str, **options: Any) -> StdioServer:
        """A server from one command line, split as a POSIX shell would (no shell runs it)."""
        words = shlex.split(command_line)
        if not words:
            raise ValueError("an empty command line names no MCP server")
        return cls(words[0], words[1:], **options)

    @property
    def label(self) -> str:
        """How messages name this server: its name, or its command line (the end of a long one)."""
        if self.name:
            return self.name
        shown = " ".join([Path(self.command).name, *self.args])
        return (
            shown
            if len(shown) <= LABEL_LENGTH
            else f"{Path(self.command).name} ...{shown[-(LABEL_LENGTH - 8) :]}"
        )

    @property
    def per_episode_dir(self) -> bool:
        """Whether its args, env or cwd use `{episode_dir}`."""
        return any(f"{{{EPISODE_DIR}}}" in text for text in self._templates())

    def resolved(self, episode_dir: str | None) -> tuple[list[str], dict[str, str], str | None]:
        """Its args, env and cwd with `{episode_dir}` filled in."""
        values = {EPISODE_DIR: episode_dir or ""}
        args = [arg.format_map(values) for arg in self.args]
        env = {key: value.format_map(values) for key, value in (self.env or {}).items()}
        cwd = os.fspath(self.cwd).format_map(values) if self.cwd is not None else None
        return args, env, cwd

    def _templates(self) -> list[str]:
        env = self.env or {}
        return [*self.args, *env.values(), *([os.fspath(self.cwd)] if self.cwd is not None else [])]


@dataclass(frozen=True, repr=False)
class HttpServer:
    """An MCP server at a streamable-HTTP URL; each episode is an MCP session of its own.

    Args:
        url: The server's MCP endpoint (`http://127.0.0.1:3001/mcp`).
        headers: Sent with every request; their values are never shown in messages (a repr shows `***`).
        token: A bearer token, sent as `Authorization: Bearer <token>`; never shown in messages.
        name: How messages name it; default: the URL's host and path.
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    token: str | None = field(default=None, repr=False)
    name: str | None = None

    def __post_init__(self) -> None:
        parts = urlsplit(self.url) if isinstance(self.url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"HttpServer needs an http:// or https:// URL, not {self.url!r}")
        object.__setattr__(self, "headers", dict(self.headers))

    def __repr__(self) -> str:
        """As the dataclass's own, but a header's value shows as `***`: headers carry credentials as a token does."""
        headers = {name: "***" for name in self.headers}
        return f"HttpServer(url={self.url!r}, headers={headers!r}, name={self.name!r})"

    @property
    def shared(self) -> bool:
        """Never: every episode opens its own MCP session."""
        return False

    @property
    def label(self) -> str:
        """How messages name this server (never with its credentials)."""
        if self.name:
            return self.name
        parts = urlsplit(self.url)
        return f"{parts.hostname}:{parts.port}{parts.path}" if parts.port else f"{parts.hostname}{parts.path}"

    def request_headers(self) -> dict[str, str]:
        """The headers every request carries, the token's included."""
        headers = dict(self.headers)
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers


Server = StdioServer | HttpServer
"""Either kind of MCP server."""


def server_from_text(text: str) -> Server:
    """The server a command line names: a URL (`http://...`) or a command to run over stdio (`node index.js`)."""
    stripped = text.strip()
    if stripped.startswith(("http://", "https://")):
        return HttpServer(stripped)
    return StdioServer.parse(stripped)


def _check_placeholders(text: str, label: str) -> None:
    """Refuse a `{...}` other than `{episode_dir}` now, rather than as a KeyError when an episode starts."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
    except ValueError as error:
        raise ValueError(
            f"MCP server {label!r}: {text!r} is not a valid template ({error}); write a literal brace as {{{{ or }}}}"
        ) from None
    unknown = sorted({name for name in fields if name != EPISODE_DIR})
    if unknown:
        raise ValueError(
            f"MCP server {label!r}: {text!r} names {{{unknown[0]}}}; the only placeholder is {{{EPISODE_DIR}}} (write "
            "a literal brace as {{ or }})"
        )
