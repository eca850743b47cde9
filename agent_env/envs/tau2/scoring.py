"""The reward of a τ²-bench episode, as tau2-bench's evaluator computes it: each part of the task's reward basis
scored, with why, and their product.

- DB: the episode's databases equal those that replaying the task's reference actions on fresh ones gives (a
  reference call that fails is passed over, as upstream does); reads never matter, every write does.
- ENV_ASSERTION: each of the task's assertions holds on the episode's databases.
- COMMUNICATE: each `communicate_info` string appears in some text the agent wrote, compared in lower case with the
  text's commas removed: its messages to the user, and the text of replies that also called tools (which upstream
  keeps in the trajectory, though the user never reads it).
- ACTION: each reference action matches some call of the episode (`Action.matches`).
- NL_ASSERTION: a judge (a model) finds each assertion met by the conversation; only with a judge. Without one the
  part is left out and the breakdown says the reward is not the official metric; when it is the only part there is
  to measure, nothing is, and the episode is not scored (`JudgeEndpointError`, naming the missing judge): a reward
  over no part would be 1 whatever the agent did.

An episode that ended any other way than the agent or the user stopping scores 0, as upstream.

Every check behind the parts is listed too (`checks`), met or unmet, as tau2-bench's evaluator computes them in its
`ALL` evaluation (src/tau2/evaluator/evaluator.py, lines 193-288): the DB match, each env assertion, each reference
action, each string to communicate, for every task whatever its reward basis; and each NL assertion when the basis
has them and a judge judged them. `checks_reward` is the fraction met of the checks whose part is in the task's
reward basis: 1 exactly when the official reward is 1, and partial credit below it (a training reward, `reward=
"checks"`; not the benchmark's metric).
"""

from __future__ import annotations

import json
import math
import threading
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agent_env.envs.tau2.judge import judge_faults
from agent_env.envs.tau2.store import Store
from agent_env.envs.tau2.trajectory import ENDINGS, SCORED, Call, Termination
from agent_env.errors import JudgeEndpointError
from agent_env.users import ScriptedUser

if TYPE_CHECKING:
    from agent_env.envs.tau2.judge import Judge
    from agent_env.envs.tau2.tasks import Domain, EnvCall, Task
    from agent_env.users import Chat, User


class Episode(Protocol):
    """What scoring reads of an episode (a `Tau2Environment` is one): its task and data, its databases, its record
    of calls and of the conversation, who played the user and who judges; and, to replay the reference actions on a
    fresh one of its kind, how it starts a task, replays a call and runs a task's assertion."""

    data: Domain
    task: Task | None
    db: Store
    user_db: Store | None
    calls: list[Call]
    transcript: list[tuple[str, str]]
    user: User
    judge: Judge | None
    chat: Chat | None

    @property
    def solo(self) -> bool: ...

    def initial_state(self, task: Task) -> list[Call]: ...

    def replay(self, name: str, arguments: Mapping[str, Any], side: Literal["assistant", "user"]) -> Call: ...

    def env_call(self, call: EnvCall) -> Any: ...

    def sync(self) -> None: ...


SOLO_USER = {"kind": "none", "note": "solo mode: the agent works from the task's ticket, with no user"}
"""Who played the user in a solo episode, as its breakdown says it."""

_gold: dict[tuple[int, str], tuple[Store, Store | None]] = {}
_gold_lock = threading.Lock()


def score(env: Episode, termination: Termination) -> dict[str, Any]:
    """The reward of `env`'s episode and its breakdown (JSON values): `reward`, `basis`, `parts` (each with its
    `reward` and `why`), `checks` (each `{"part", "check", "met", "basis"}`), `checks_reward`, `ended` and
    `termination`, `scored`, `official`, `faults` (the failed attempts of the user's and the judge's endpoints,
    retried ones included, as `user_...` and `judge_...` kinds), `calls` (every call of the trajectory, the
    conversation's before the task and the episode's, the agent's and the user's own, in the order they ran, each
    `{"requestor", "name", "arguments", "result", "error"}`: what tau2-bench's evaluator replays, and what the
    agent's transcript lacks of it, the user's calls), and `note` where something is left out.

    Raises:
        JudgeEndpointError: The judge failed, or the task's reward has nothing but assertions to judge and no judge
            was given: the episode cannot be scored.
    """
    task = env.task
    assert task is not None
    breakdown: dict[str, Any] = {
        "task": task.id,
        "ended": ENDINGS[termination],
        "termination": termination,
        "scored": termination in SCORED,
        "user": SOLO_USER if env.solo else env.user.describe(),
        "faults": env.chat.reported_faults() if env.chat is not None else {},
        "calls": [
            {"requestor": call.requestor, "name": call.name, "arguments": call.arguments, "result": call.result,
             "error": call.error}
            for call in env.calls
        ],
    }  # fmt: skip
    if isinstance(env.user, ScriptedUser) and not env.solo:
        breakdown["user_note"] = (
            "the user is scripted (no model plays it): not τ²-bench's simulated user, so the reward is not "
            "comparable with the leaderboard's; give a user model (user=..., --user-base-url) for that"
        )
    criteria = task.evaluation_criteria
    if termination not in SCORED:
        return {**breakdown, "reward": 0.0, "basis": [], "parts": {}, "official": True, "checks": [],
                "checks_reward": 0.0,
                "note": f"{ENDINGS[termination]}: tau2-bench scores an episode that did not end by the agent or "
                "the user stopping 0"}  # fmt: skip
    if criteria is None:
        return {**breakdown, "reward": 1.0, "basis": [], "parts": {}, "official": True, "checks": [],
                "checks_reward": 1.0, "note": "the task has no evaluation criteria"}  # fmt: skip
    basis = set(criteria.reward_basis)
    found: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {
        "DB": _db(env, task),
        "ENV_ASSERTION": _assertions(env, task),
        "ACTION": _actions(env, task),
        "COMMUNICATE": _communicate(env, task),
    }
    left_out: list[str] = []
    judged: Counter[str] = Counter()
    if "NL_ASSERTION" in basis:
        if env.judge is None and criteria.nl_assertions:
            left_out.append("NL_ASSERTION")
        else:
            found["NL_ASSERTION"] = _nl_assertions(env, task, judged)
    parts = {part: found[part][0] for part in dict.fromkeys(criteria.reward_basis) if part in found}
    if left_out and not parts:
        raise JudgeEndpointError(
            f"the task's reward is {' x '.join(criteria.reward_basis)}, and {', '.join(left_out)} needs a judge, "
            "but none was given: with no part left to measure, the episode has no reward; give a judge with "
            "judge={'base_url': ..., 'model': ...} (on the command line --judge-base-url and --judge-model)"
        )
    checks = [{**check, "basis": part in basis} for part, (_, listed) in found.items() for check in listed]
    counted = [check["met"] for check in checks if check["basis"]]
    breakdown["faults"].update(judge_faults(judged))
    reward = math.prod(item["reward"] for item in parts.values())
    breakdown.update(
        reward=float(reward),
        basis=list(criteria.reward_basis),
        parts=parts,
        official=not left_out,
        checks=checks,
        checks_reward=sum(counted) / len(counted) if counted else 1.0,
    )
    if left_out:
        kept = " x ".join(parts) or "nothing"
        breakdown["note"] = (
            f"not the official metric: the task's reward is {' x '.join(criteria.reward_basis)}, but "
            f"{', '.join(left_out)} needs a judge and none was given, so the reward here is {kept} only; give one "
            "with judge={'base_url': ..., 'model': ...} (on the command line --judge-base-url and --judge-model)"
        )
    return breakdown


Part = tuple[dict[str, Any], list[dict[str, Any]]]
"""A part of the reward (its `reward` and `why`), and the checks behind it (each its `part`, `check` and `met`)."""


def gold(env: Episode, task: Task) -> tuple[Store, Store | None]:
    """The databases the task's reference actions leave, from its initial state: computed once per process and
    task (a reference call that fails is passed over, as upstream logs and passes over it; the two sides of a
    domain whose user has a database, telecom's, are not linked after each, as upstream's are not). Sets nothing on
    `env`."""
    key = (id(env.data), task.id)
    with _gold_lock:
        found = _gold.get(key)
        if found is None:
            replayer = type(env).__new__(type(env))
            replayer.data = env.data
            replayer.initial_state(task)
            # Upstream's gold environment makes the reference calls with `make_tool_call`, which never links the
            # two sides (src/tau2/evaluator/evaluator_env.py, lines 105-115); nor do these.
            replayer.sync = _unlinked  # type: ignore[method-assign]
            criteria = task.evaluation_criteria
            for action in (criteria.actions or []) if criteria else []:
                replayer.replay(action.name, action.arguments, action.requestor)
            found = _gold[key] = (replayer.db, replayer.user_db)
        return found


def _unlinked() -> None:
    """The gold replay's `sync`: nothing."""


def _check(part: str, check: str, met: bool) -> dict[str, Any]:
    return {"part": part, "check": check, "met": met}


DB_CHECK = "the database equals the one the reference actions leave"


def _db(env: Episode, task: Task) -> Part:
    criteria = task.evaluation_criteria
    if criteria is not None and criteria.actions is None and criteria.env_assertions is None:
        why = "the task has no reference actions to compare the database with"
        return {"reward": 1.0, "why": why}, [_check("DB", DB_CHECK, True)]
    target, user_target = gold(env, task)
    same = env.db.same_as(target) and (
        user_target is None or (env.user_db is not None and env.user_db.same_as(user_target))
    )
    if same:
        return {"reward": 1.0, "why": DB_CHECK}, [_check("DB", DB_CHECK, True)]
    return {
        "reward": 0.0,
        "why": "the database differs from the one the reference actions leave",
        "changed": {name: sorted(keys) for name, keys in env.db.changed().items()},
        "expected_changed": {name: sorted(keys) for name, keys in target.changed().items()},
    }, [_check("DB", DB_CHECK, False)]


def _assertions(env: Episode, task: Task) -> Part:
    criteria = task.evaluation_criteria
    assertions = criteria.env_assertions if criteria else None
    if not assertions:
        return {"reward": 1.0, "why": "the task has no assertions"}, []
    failed, checks = [], []
    for assertion in assertions:
        said = (
            assertion.message or f"{assertion.func_name}({assertion.arguments}) is {assertion.assert_value}"
        )
        try:
            held = env.env_call(assertion) == assertion.assert_value
        except Exception as error:
            held = False
            failed.append(f"{assertion.func_name}({assertion.arguments}) raised {error}")
        else:
            if not held:
                failed.append(
                    assertion.message
                    or f"{assertion.func_name}({assertion.arguments}) is not {assertion.assert_value}"
                )
        checks.append(_check("ENV_ASSERTION", said, held))
    return {"reward": 0.0 if failed else 1.0, "why": "; ".join(failed) or "every assertion holds"}, checks


def _communicate(env: Episode, task: Task) -> Part:
    criteria = task.evaluation_criteria
    wanted = criteria.communicate_info if criteria else None
    if not wanted:
        return {"reward": 1.0, "why": "the task has nothing the agent must say"}, []
    said = [
        text.lower().replace(",", "") for text in (env.chat.agent_words() if env.chat is not None else [])
    ]
    met = {info: any(info.lower() in text for text in said) for info in wanted}
    checks = [_check("COMMUNICATE", info, found) for info, found in met.items()]
    missing = [info for info in wanted if not met[info]]
    if missing:
        return {"reward": 0.0, "why": f"never said to the user: {missing}"}, checks
    return {"reward": 1.0, "why": f"said to the user: {wanted}"}, checks


def _actions(env: Episode, task: Task) -> Part:
    criteria = task.evaluation_criteria
    actions = criteria.actions if criteria else None
    if not actions:
        return {"reward": 1.0, "why": "the task has no actions to match"}, []
    met = [any(action.matches(call.name, call.arguments) for call in env.calls) for action in actions]
    checks = [
        _check("ACTION", f"{action.name}({_arguments(action.arguments)})", found)
        for action, found in zip(actions, met, strict=True)
    ]
    unmatched = [
        action.action_id or action.name for action, found in zip(actions, met, strict=True) if not found
    ]
    if unmatched:
        return {"reward": 0.0, "why": f"no call matches the reference action(s) {unmatched}"}, checks
    return {"reward": 1.0, "why": "every reference action was called"}, checks


def _arguments(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items())


def _nl_assertions(env: Episode, task: Task, faults: Counter[str]) -> Part:
    criteria = task.evaluation_criteria
    assertions = criteria.nl_assertions if criteria else None
    if not assertions:
        return {"reward": 1.0, "why": "the task has no assertions to judge"}, []
    assert env.judge is not None
    transcript = "\n".join(f"{role}: {text}" for role, text in env.transcript)
    verdicts = env.judge.judge(transcript, assertions, faults)
    unmet = [verdict.assertion for verdict in verdicts if not verdict.met]
    checks = [_check("NL_ASSERTION", verdict.assertion, verdict.met) for verdict in verdicts]
    return {
        "reward": 0.0 if unmet else 1.0,
        "why": f"not met: {unmet}" if unmet else "every assertion met",
        "verdicts": [{"assertion": v.assertion, "met": v.met, "reasoning": v.reasoning} for v in verdicts],
    }, checks
