"""The environment instance a TRL trainer gets, the tools it shows, and the first turn it starts from."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from agent_env._agent_env import AgentEnv
from agent_env._splits import split_to_play
from agent_env.schema import fingerprint
from agent_env.training._parsing import parsing_problem
from agent_env.training._render_check import discovered_tools, plan_tools, unfixable
from agent_env.training.families import Family, family_of
from agent_env.training.fidelity import TemplateFidelity
from agent_env.training.templates import ChatTemplate
from agent_env.training.trl import TRLEnvironment, environment_class

DEFAULT_SPLIT = "train"
"""The split whose first row a probe starts from when it is named none: the one a trainer trains on."""
PLAIN_TURN = "Begin."
"""The user turn used when an environment has no dataset to take a first prompt from."""


@contextmanager
def trl_instance(env: AgentEnv, template: ChatTemplate | None = None) -> Iterator[TRLEnvironment]:
    """A TRL-facing instance of `env`'s tool set, built as `env.factory()` builds it for `template` (its
    SchemaTools lowered for the template's family where it needs that; as published without a template), but
    without the refusal (an inspection must show what a template does, not refuse it); its session is closed on
    exit."""
    published = env.tools()
    shown = None
    if template is not None:
        shown = [plan.shown for plan in plan_tools(template, published, family_of(template.text))]
    environment_type = environment_class(env.provider.name, published, fingerprint(published), shown)
    session = env.provider.open()
    try:
        yield environment_type(session)
    finally:
        session.close()


def judged(
    template: ChatTemplate, published: list[dict[str, Any]], family: Family | None
) -> TemplateFidelity:
    """How `template` shows each published tool (lowered for `family`), and what the factory would refuse under it
    that no lowering fixes, as `env.factory` judges them under a trainer."""
    plans = plan_tools(template, published, family)
    report = TemplateFidelity(template.label, [plan.fidelity for plan in plans])
    problem = parsing_problem(template, family) if report.renders_tools() else None
    return replace(report, refusals=(*unfixable(template, plans, family), *([problem] if problem else [])))


def schema_tools(instance: object) -> list[Any]:
    """The tools TRL (>= 1.15) renders for an instance: a SchemaTool per tool."""
    return discovered_tools(instance)


def first_turn(env: AgentEnv, instance: TRLEnvironment, split: str | None = None) -> list[dict[str, Any]]:
    """The conversation a trainer's first rollout starts from: the split's first row's prompt with the `reset`
    observation appended to its last message, as TRL does; a plain user turn when there is no dataset.

    `split` None is the usual one, `train`, or the environment's first split when it has no `train` (said on stderr;
    the rule every default split follows: `agent_env._splits`). A split named that the environment lacks is refused.
    """
    played = split_to_play(env.provider.dataset_rows, split, (DEFAULT_SPLIT,), env.provider.name)
    try:
        rows = env.provider.dataset_rows(played)
    except NotImplementedError:
        rows = []
    except LookupError:
        if split is not None:
            raise
        rows = []  # no split of that name, and none the environment names: no dataset to start from
    if not rows or not isinstance(rows[0].get("prompt"), list | str) or not rows[0]["prompt"]:
        return [{"role": "user", "content": PLAIN_TURN}]
    row = rows[0]
    return opening(
        row["prompt"], instance.reset(**row)
    )  # the instance separates it from the prompt, as under TRL


def opening(prompt: Any, observation: Any) -> list[dict[str, Any]]:
    """The conversation a rollout starts from: a row's `prompt` with the `reset` observation appended to its last
    message as GRPOTrainer (and AsyncGRPO's rollout worker) append it: to its text as is (the observation brings its
    own separation: `agent_env.training.trl.own_paragraph`), or after content parts as one more part; a prompt that
    is text is one user turn of it; without a prompt, one user turn of the observation (or a plain one)."""
    if (
        isinstance(prompt, str) and prompt
    ):  # a prompt in TRL's standard (not conversational) form: one user turn
        prompt = [{"role": "user", "content": prompt}]
    if not isinstance(prompt, list) or not prompt:
        text = observation if isinstance(observation, str) and observation else PLAIN_TURN
        return [{"role": "user", "content": text}]
    if observation is None:
        return list(prompt)
    content = prompt[-1]["content"]
    if isinstance(observation, list) and isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if isinstance(observation, str) and isinstance(content, list):
        observation = [{"type": "text", "text": observation}]
    return [*prompt[:-1], {**prompt[-1], "content": content + observation}]
