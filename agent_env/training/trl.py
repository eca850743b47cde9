"""The TRL adapter: a picklable `environment_factory` whose environments show the model every full tool schema."""

from __future__ import annotations

import importlib.metadata
import logging
import os
import sys
import threading
from collections.abc import Mapping
from typing import Any

from agent_env.errors import UnscoredEpisodeError
from agent_env.schema import fingerprint
from agent_env.schema._gaps import gaps, remedy
from agent_env.session import (
    Provider,
    Score,
    Session,
    checked_observation,
    episode_label,
    tools_published_elsewhere,
)
from agent_env.training._methods import tool_method
from agent_env.training._parsing import prepare_parsing
from agent_env.training._render_check import ToolPlan, discovered_tools, plan_tools, render_check
from agent_env.training._tools import AsyncSchemaTool, SchemaTool, teach_get_json_schema
from agent_env.training._trainer import Trainer, calling_trainer
from agent_env.training.families import Family, family_of
from agent_env.training.templates import DEFAULT_TEMPLATE, ChatTemplate, TemplateSource, resolve_template
from agent_env.training.unscored import unscored_reward

logger = logging.getLogger("agent_env")

MIN_TRL = "1.16"  # the oldest TRL the version matrix tests (`make matrix`)
_warned_untested: set[str] = set()


class TRLEnvironment:
    """Base of the classes TRL sees: `reset`, `get_reward`, and (in each subclass) one function per tool.

    Each instance sets a `SchemaTool` over every tool function, `end_turn` included, bound to the instance and that
    function, so both ways TRL has found tools find it (see `agent_env.training._tools`): TRL >= 1.15 lists the
    functions on the class and fetches each from the instance, where the SchemaTool shadows it; TRL <= 1.14 lists the
    instance's bound methods, as which a bound SchemaTool passes. TRL then renders the schema the render check judged
    (the published one, or its lowering for the template's family) and calls the SchemaTool, which validates against
    the published schema. Nothing here is a property: TRL never evaluates anything by listing the class, and TRL <=
    1.14's listing of the instance, which evaluates every attribute, runs nothing either.
    """

    _published: tuple[dict[str, Any], ...] = ()
    _shown: tuple[dict[str, Any], ...] = ()
    _asynchronous: frozenset[str] = frozenset()
    """The tools whose session calls are async (`Session.is_async`): each gets an `AsyncSchemaTool` where TRL awaits
    one (Python 3.12 and later). On 3.11, where TRL calls every tool synchronously, each gets a `SchemaTool` over the
    session's `call_tool`, which makes the one hop to the background loop an async tool needs, under the call's
    deadline (not `acall_tool` run from a thread, which would bound it with a second task on the loop: 20-60 us
    more a call, docs/mcp.md)."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._outcome: Score | UnscoredEpisodeError | None = None
        """The current episode's score once read, or why it cannot be scored (its reset failed, or its reward did);
        None until then."""
        for published, shown in zip(self._published, self._shown or self._published, strict=True):
            name = published["name"]
            bound = (self, getattr(type(self), name))
            if name in self._asynchronous and AsyncSchemaTool.awaited:
                tool: SchemaTool = AsyncSchemaTool(published, session.acall_tool, shown=shown, bound=bound)
            else:
                tool = SchemaTool(published, session.call_tool, shown=shown, bound=bound)
            setattr(self, name, tool)

    def reset(self, **row: Any) -> str | None:
        """Start an episode from a dataset row; returns the observation TRL appends to the prompt, as a paragraph
        of its own (see `own_paragraph`).

        An episode whose environment could not start it (an `UnscoredEpisodeError`: its `reset` or `setup` raised,
        or returned what TRL cannot append to the prompt: not a string, None or a list of content parts; it did not
        finish in time; a full server had no room for it) does not stop the trainer: no observation is returned,
        and `get_reward` scores it by `unscored_reward`.
        """
        self._outcome = None
        try:
            observation = self._session.reset(**row)
            checked_observation(observation)  # as every agent_env session checks it, for any other
        except UnscoredEpisodeError as error:
            self._outcome = error.named(
                type(self).__name__,
                episode_label(row, f"in its {type(self._session).__name__}"),
                starting=True,
            )
            return None
        return own_paragraph(observation, row)

    def get_reward(self) -> float | None:
        """The episode's reward (ending the episode first if the model never called end_turn); for an episode that
        could not be scored, what `unscored_reward` makes of it (0.0, or None for an infrastructure failure and for
        an episode a call of which did not finish in time), with one warning, never an exception that would stop the
        trainer's step."""
        outcome = self._scored()
        return outcome.reward if isinstance(outcome, Score) else unscored_reward(outcome)

    def _scored(self) -> Score | UnscoredEpisodeError:
        """The episode's score, read once (`Session.score`: the reward and its breakdown), or why it has none."""
        if self._outcome is None:
            try:
                self._outcome = self._session.score()
            except UnscoredEpisodeError as error:
                self._outcome = error
        return self._outcome


def episode_score(environment: TRLEnvironment) -> Score | None:
    """The reward and its breakdown (each part and why, where the environment gives one) of the episode a TRL
    environment instance is playing, or None when it cannot be scored; for a reward function of one's own beside the
    environment's: TRL hands reward functions its instances as `environments`.

        def communicated(completions, environments, **kwargs):  # τ²-bench's COMMUNICATE part alone
            scores = [episode_score(environment) for environment in environments]
            return [score.breakdown["parts"]["COMMUNICATE"]["reward"] if score else None for score in scores]

    The episode is scored once: by whichever of this and TRL's `get_reward` comes first (which ends the episode if
    the model never called end_turn), the other reading the same score. Not a method of the instance: TRL offers
    every public function of its class to the model as a tool.
    """
    outcome = environment._scored()
    return outcome if isinstance(outcome, Score) else None


def own_paragraph(observation: str | None, row: Mapping[str, Any]) -> str | None:
    """`observation`, starting a paragraph of its own after the text of the row's prompt.

    TRL appends `reset`'s observation to the last message of the row's `prompt` with no separator (as one more text
    part when that message is a list of parts, which templates join with none), so "Trade today." and "Submit
    offers" would read "Trade today.Submit offers" under every template. A blank line goes between them, counting
    the line breaks either side already has. With no prompt text before it (a row without a `prompt`, whose
    observation TRL makes the whole first message), the observation is left as it is.
    """
    before = _last_text(row.get("prompt"))
    if not isinstance(observation, str) or not observation or not before:
        return observation
    breaks = len(before) - len(before.rstrip("\n")) + len(observation) - len(observation.lstrip("\n"))
    return "\n" * max(0, 2 - breaks) + observation


def _last_text(prompt: Any) -> str:
    """The text TRL appends an observation after: the last message's content, or its last part's text (a prompt
    that is text: itself)."""
    if isinstance(prompt, str):
        return prompt
    if not isinstance(prompt, list) or not prompt or not isinstance(prompt[-1], dict):
        return ""
    content = prompt[-1].get("content")
    if isinstance(content, list) and content and isinstance(content[-1], dict):
        content = content[-1].get("text")
    return content if isinstance(content, str) else ""


_classes: dict[tuple[str, str, str, frozenset[str]], type[TRLEnvironment]] = {}
_classes_lock = threading.Lock()


def environment_class(
    name: str,
    published: list[dict[str, Any]],
    tool_set: str,
    shown: list[dict[str, Any]] | None = None,
    asynchronous: frozenset[str] = frozenset(),
) -> type[TRLEnvironment]:
    """The TRL-facing class for one tool set, shown as `shown` (default: as published), whose tools named in
    `asynchronous` are called through the session's `acall_tool`: made fresh once per (name, tool set, what is
    shown, which are async), never by mutating a shared one."""
    shown = shown if shown is not None else published
    key = (name, tool_set, fingerprint(shown), asynchronous)
    with _classes_lock:
        if key not in _classes:
            namespace: dict[str, Any] = {
                "__module__": __name__,
                "__doc__": f"{name} as a TRL environment (tool set {tool_set}).",
                "_published": tuple(published),
                "_shown": tuple(shown),
                "_asynchronous": asynchronous,
            }
            for tool in published:
                awaited = tool["name"] in asynchronous and AsyncSchemaTool.awaited
                namespace[tool["name"]] = tool_method(tool, f"{name}.{tool['name']}", awaited=awaited)
            _classes[key] = type(name, (TRLEnvironment,), namespace)
        return _classes[key]


def check_trl_version() -> None:
    """Warn once on a TRL the version matrix does not test. Every TRL finds the SchemaTools (both of the ways TRL
    has found an environment's tools do, and the render check holds the factory to both), so none is refused."""
    try:
        installed = importlib.metadata.version("trl")
    except importlib.metadata.PackageNotFoundError:
        return
    from packaging.version import Version

    if Version(installed) < Version(MIN_TRL) and installed not in _warned_untested:
        _warned_untested.add(installed)
        logger.warning(
            "TRL %s finds agent_env's tools, but agent_env is tested with TRL >= %s only: TRL 1.15's GRPO step needs "
            "Triton (a GPU) and its AsyncGRPO needs aiohttp, and TRL 1.14 and older do not pass the tools to "
            "parse_response, so XML-style templates' arguments are typed by guesswork. Upgrade with "
            "`pip install 'trl>=%s'`.",
            installed,
            MIN_TRL,
            MIN_TRL,
        )


class EnvironmentFactory:
    """A picklable, zero-argument factory of TRL environments: `GRPOTrainer(environment_factory=factory)`.

    The first call for a chat template builds the TRL-facing class and runs the render check under it: every tool,
    discovered the way TRL discovers it, must reach the model exact or lossless (see `agent_env.training.fidelity`),
    lowered for the template's family (Gemma 4, gpt-oss) where the template would drop part of it; otherwise the
    call raises `RenderCheckError` naming each tool and what it loses. Later calls only open a session.

    Which template: when a TRL trainer calls the factory (GRPOTrainer, AsyncGRPO's rollout worker), the one that
    trainer renders with, read off its processing class, whatever `chat_template` says. Otherwise `chat_template`,
    and when that is not given either, TRL's Qwen3 template, with one warning if TRL is loaded (a trainer the
    factory does not recognise may render another).

    Args:
        provider: Where sessions come from (`LocalProvider`, or a server's provider).
        chat_template: The template to check when no trainer calls: a TRL shipped name, a `.jinja` file, a tokenizer
            folder, or a tokenizer or processor.
    """

    def __init__(self, provider: Provider, *, chat_template: TemplateSource | None = None) -> None:
        self.provider = provider
        self.chat_template = chat_template
        self._built: dict[str, tuple[type[TRLEnvironment], Family | None]] = {}
        """Each checked template's environment class and family, by the template's key."""
        self._lock = threading.Lock()
        self._warned = False
        self._noted = False

    def __call__(self) -> TRLEnvironment:
        trainer = calling_trainer()
        template = self._template(trainer)
        built = self._built.get(template.key)
        if built is None:
            with self._lock:
                if template.key not in self._built:
                    return self._build(template, trainer)
            built = self._built[template.key]
        environment_type, family = built
        if (
            trainer is not None
        ):  # a later trainer (a sweep, a notebook run again) brings a tokenizer of its own
            prepare_parsing(trainer, family)
        return environment_type(self.provider.open())

    def _template(self, trainer: Trainer | None) -> ChatTemplate:
        if trainer is not None:
            return trainer.template
        if self.chat_template is not None:
            return resolve_template(self.chat_template)
        template = resolve_template(DEFAULT_TEMPLATE)
        if "trl" in sys.modules and not self._warned:
            self._warned = True
            logger.warning(
                "agent_env: checked %s's tools under chat template %r, the default: no TRL trainer that agent_env "
                "recognises called this factory, so the template it renders with is unknown. If your trainer renders "
                "another, pass it: AgentEnv.local(..., chat_template=tokenizer) (or a template name, .jinja file or "
                "tokenizer folder).",
                self.provider.name,
                DEFAULT_TEMPLATE,
            )
        return template

    def _build(self, template: ChatTemplate, trainer: Trainer | None) -> TRLEnvironment:
        from agent_env.schema import fingerprint

        check_trl_version()
        teach_get_json_schema()  # before TRL's parser or vLLM client meets a SchemaTool
        published = self.provider.tools()
        tool_set = fingerprint(published)
        family = family_of(template.text)
        plans = plan_tools(template, published, family)
        session = self.provider.open()
        try:
            asynchronous = frozenset(tool["name"] for tool in published if session.is_async(tool["name"]))
            environment_type = environment_class(
                self.provider.name, published, tool_set, [plan.shown for plan in plans], asynchronous
            )
            probe = environment_type(session)
            render_check(probe, plans, tool_set, template, family)
            if trainer is not None:
                prepare_parsing(trainer, family)
        except BaseException:
            session.close()
            raise
        self._report(published, tool_set, template, family, plans)
        self._built[template.key] = (environment_type, family)
        return probe

    def _report(
        self,
        published: list[dict[str, Any]],
        tool_set: str,
        template: ChatTemplate,
        family: Family | None,
        plans: list[ToolPlan],
    ) -> None:
        """Say, once per factory and template, what the model is shown: at WARNING, which Python shows even with
        logging unconfigured, because a lowering changes the prompt and the fingerprint names the tools a run saw."""
        verdicts = sorted({plan.fidelity.status for plan in plans})
        lowered = family is not None and any(plan.shown != plan.published for plan in plans)
        logger.warning(
            "agent_env: %s, %d tools, tool set %s, checked under %s: %s%s",
            self.provider.name,
            len(published),
            tool_set,
            template.label,
            " and ".join(verdicts),
            f" ({family.name} lowering: what the template drops is restated in the tools' descriptions)"
            if lowered and family is not None
            else "",
        )
        if self._noted:
            return
        self._noted = True
        elsewhere = tools_published_elsewhere(self.provider)
        for published_elsewhere in (False, True):
            noted = [
                f"{tool['name']}: {', '.join(found)}"
                for tool in published
                if (tool["name"] in elsewhere) == published_elsewhere and (found := gaps(tool))
            ]
            if noted:
                advice = remedy(published_elsewhere)
                logger.warning(
                    "agent_env: %s's tools leave the model to guess (agent-env check lists the same): %s. %s.",
                    self.provider.name,
                    "; ".join(noted),
                    advice[0].upper() + advice[1:],
                )

    def __getstate__(self) -> dict[str, Any]:
        source = self.chat_template
        if source is not None and not isinstance(source, str | os.PathLike):
            source = resolve_template(source)  # a tokenizer travels as its template's text and special tokens
        return {"provider": self.provider, "chat_template": source}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["provider"], chat_template=state["chat_template"])  # type: ignore[misc]

    def __repr__(self) -> str:
        label = (
            self.chat_template
            if isinstance(self.chat_template, str | None)
            else type(self.chat_template).__name__
        )
        return f"EnvironmentFactory({self.provider.name!r}, chat_template={label!r})"


__all__ = [
    "MIN_TRL",
    "EnvironmentFactory",
    "TRLEnvironment",
    "check_trl_version",
    "discovered_tools",
    "episode_score",
]
