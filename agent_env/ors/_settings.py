"""`ORSSettings`: what an environment served over the Open Reward Standard is, checked as it is made: the server,
the environment's name there, where its key is read from, which tools, and the limits.

The runtime (`_runtime.py`) and the environment class (`_environment.py`) read these settings; the public
`ORSEnvironment` (`_description.py`) is these settings and builds that class from them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agent_env.schema._describe import short

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 3
DEFAULT_START_TIMEOUT = 600.0
"""Seconds to wait for an environment the server says is still starting (the SDK client waits as long)."""
DEFAULT_MAX_RESULT_CHARS = 20_000
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, eq=False)
class ORSSettings:
    """The settings of an ORS environment, each checked as it is made; `ORSEnvironment` documents them."""

    base_url: str
    env_name: str | None = None
    api_key_env: str | None = None
    name: str | None = None
    tools: Collection[str] | None = None
    skip_unpublishable: bool = False
    timeout: float = DEFAULT_TIMEOUT
    call_timeout: float | None = None
    retries: int = DEFAULT_RETRIES
    start_timeout: float = DEFAULT_START_TIMEOUT
    ping_interval: float = 10.0
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    transport: Any = None

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url) if isinstance(self.base_url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(
                f"base_url must be an http:// or https:// URL, like 'http://127.0.0.1:8080', not {short(self.base_url)}"
            )
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ValueError(
                "base_url must be the server's address alone, with no query, fragment or credentials in it (give a "
                "key with api_key_env=, the name of the variable that holds it)"
            )
        if self.env_name is not None and not (
            isinstance(self.env_name, str)
            and self.env_name
            and "/" not in self.env_name
            and self.env_name.isprintable()
        ):
            raise ValueError(
                f"env_name must be the environment's name on the server (one path segment), not {short(self.env_name)}"
            )
        if self.api_key_env is not None and not (
            isinstance(self.api_key_env, str) and _VARIABLE.fullmatch(self.api_key_env)
        ):
            raise ValueError(
                "api_key_env must be the NAME of an environment variable that holds the key (like "
                "'OPENREWARD_API_KEY'), never the key itself"
            )
        if self.tools is not None:
            if isinstance(self.tools, str):
                raise ValueError(f"tools must be a list of tool names, not one string ({self.tools!r})")
            object.__setattr__(self, "tools", tuple(self.tools))
        for setting in ("timeout", "start_timeout", "ping_interval"):
            _positive(setting, getattr(self, setting))
        if self.call_timeout is not None:
            _positive("call_timeout", self.call_timeout)
        if not (_whole(self.retries) and self.retries >= 0):
            raise ValueError(f"retries must be a whole number, 0 or more, not {self.retries!r}")
        if not (_whole(self.max_result_chars) and self.max_result_chars > 0):
            raise ValueError(
                f"max_result_chars must be a positive whole number, not {self.max_result_chars!r}"
            )

    def label(self) -> str:
        """How messages name this environment."""
        where = self.base_url.rstrip("/")
        return (
            f"ORS environment {self.env_name!r} at {where}" if self.env_name else f"the ORS server at {where}"
        )


def _positive(setting: str, seconds: Any) -> None:
    if not (isinstance(seconds, int | float) and not isinstance(seconds, bool)) or not (
        math.isfinite(seconds) and seconds > 0
    ):
        raise ValueError(f"{setting} must be a positive number of seconds, not {seconds!r}")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


__all__ = ["ORSSettings"]
