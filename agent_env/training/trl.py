"""The TRL adapter: a picklable `environment_factory` whose environments show the model every full tool schema."""

from __future__ import annotations

import importlib.metadata
import logging
import threading
from typing import Any

from agent_env.session import Provider, Session
from agent_env.tools import END_TURN
from agent_env.training._methods import tool_method
from agent_env.training._render_check import discovered_tools, render_check
from agent_env.training._tools import AsyncSchemaTool, SchemaTool
from agent_env.training.templates import DEFAULT_TEMPLATE

logger = logging.getLogger("agent_env")

MIN_TRL = "1.15"


class TRLEnvironment:
    """Base of the classes TRL sees: `reset`, `get_reward`, and (in each subclass) one function per tool.

    Each instance sets a `SchemaTool` over every tool function but `end_turn`, so TRL, which lists functions on the
    class and fetches each from the instance, renders the published schema and calls the SchemaTool. Nothing here is
    a property: TRL never evaluates anything by listing the class.
    """

    _published: tuple[dict[str, Any], ...] = ()

    def __init__(self, session: Session) -> None:
        self._session = session
        for published in self._published:
            name = published["name"]
            if name == END_TURN:
                continue
            if session.is_async(name):
                setattr(self, name, AsyncSchemaTool(published, session.acall_tool))
            else:
                setattr(self, name, SchemaTool(published, session.call_tool))

    def reset(self, **row: Any) -> str | None:
        """Start an episode from a dataset row; returns the observation TRL appends to the prompt."""
        return self._session.reset(**row)

    def get_reward(self) -> float:
        """The episode's reward (ending the episode first if the model never called end_turn)."""
        return self._session.reward()


_classes: dict[tuple[str, str], type[TRLEnvironment]] = {}
_classes_lock = threading.Lock()


def environment_class(name: str, published: list[dict[str, Any]], fingerprint: str) -> type[TRLEnvironment]:
    """The TRL-facing class for one tool set: made fresh once per (name, tool set), never by mutating a shared one."""
    key = (name, fingerprint)
    with _classes_lock:
        if key not in _classes:
            namespace: dict[str, Any] = {
                "__module__": __name__,
                "__doc__": f"{name} as a TRL environment (tool set {fingerprint}).",
                "_published": tuple(published),
            }
            for tool in published:
                namespace[tool["name"]] = tool_method(tool, f"{name}.{tool['name']}")
            _classes[key] = type(name, (TRLEnvironment,), namespace)
        return _classes[key]


def check_trl_version() -> None:
    """Refuse a TRL that would drop SchemaTools from the prompt without a word (TRL <= 1.14 lists tools on the
    instance with `inspect.ismethod`, which a SchemaTool is not)."""
    try:
        installed = importlib.metadata.version("trl")
    except importlib.metadata.PackageNotFoundError:
        return
    from packaging.version import Version

    if Version(installed) < Version(MIN_TRL):
        raise RuntimeError(
            f"TRL {installed} lists an environment's tools on the instance and would silently drop every tool "
            f"schema agent_env publishes; upgrade with `pip install 'trl>={MIN_TRL}'`"
        )


class EnvironmentFactory:
    """A picklable, zero-argument factory of TRL environments: `GRPOTrainer(environment_factory=factory)`.

    The first call in a process builds the TRL-facing class for the provider's tool set and runs the render check:
    every tool, discovered the way TRL discovers it, is rendered through `apply_chat_template` with `chat_template`
    (TRL's Qwen3 template by default) and must show exactly its published schema, or the call raises
    `RuntimeError` naming every tool that differs. Later calls only open a session.

    Args:
        provider: Where sessions come from (`LocalProvider`, or a server's provider).
        chat_template: The template the render check uses: a TRL shipped name, a file, or a tokenizer folder.
    """

    def __init__(self, provider: Provider, *, chat_template: str = DEFAULT_TEMPLATE) -> None:
        self.provider = provider
        self.chat_template = chat_template
        self._class: type[TRLEnvironment] | None = None
        self._lock = threading.Lock()

    def __call__(self) -> TRLEnvironment:
        if self._class is not None:
            return self._class(self.provider.open())
        with self._lock:
            if self._class is None:
                return self._build()
        return self._class(self.provider.open())

    def _build(self) -> TRLEnvironment:
        from agent_env.schema import fingerprint

        check_trl_version()
        published = self.provider.tools()
        tool_set = fingerprint(published)
        environment_type = environment_class(self.provider.name, published, tool_set)
        probe = environment_type(self.provider.open())
        render_check(probe, published, tool_set, self.chat_template)
        logger.info("agent_env: %s, %d tools, tool set %s", self.provider.name, len(published), tool_set)
        self._class = environment_type
        return probe

    def __getstate__(self) -> dict[str, Any]:
        return {"provider": self.provider, "chat_template": self.chat_template}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["provider"], chat_template=state["chat_template"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"EnvironmentFactory({self.provider.name!r}, chat_template={self.chat_template!r})"


__all__ = ["MIN_TRL", "EnvironmentFactory", "TRLEnvironment", "check_trl_version", "discovered_tools"]
