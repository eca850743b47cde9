"""A τ²-bench domain as data: its tasks, splits, policy and the database every task starts from, read once per
process and shared by all its episodes."""

from __future__ import annotations

import json
import os
import re
import textwrap
import threading
import tomllib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError

from agent_env.envs.tau2.data import domain_folder, named_root, unreadable, unusable
from agent_env.envs.tau2.first_person import customer_opening
from agent_env.envs.tau2.shared import share
from agent_env.errors import SplitNotFoundError
from agent_env.users import Scenario


class _Loose(BaseModel):
    """A model of tau2-bench's files that ignores the fields agent_env does not use."""

    model_config = ConfigDict(extra="ignore")


class Instructions(_Loose):
    """A structured scenario: why the user calls, what it knows and does not, and how to behave."""

    domain: str | None = None
    reason_for_call: str
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str


class UserScenario(_Loose):
    persona: str | None = None
    instructions: Instructions | str


class Action(_Loose):
    """A reference tool call: replayed for the target database, and matched against the episode's calls where the
    task's reward counts ACTION."""

    action_id: str = ""
    requestor: Literal["assistant", "user"] = "assistant"
    name: str
    arguments: dict[str, Any]
    compare_args: list[str] | None = None

    def matches(self, name: str, arguments: Any) -> bool:
        """Whether a call matches this action, as tau2-bench compares them: the same name, and the same values for
        `compare_args` (by default, every argument the call itself sent)."""
        if name != self.name:
            return False
        sent = arguments if isinstance(arguments, dict) else {}
        keys = self.compare_args if self.compare_args is not None else list(sent)
        if not keys:
            return True
        return {key: sent[key] for key in sent if key in keys} == {
            key: self.arguments[key] for key in self.arguments if key in keys
        }


class EnvCall(_Loose):
    """A call of a domain function (a tool, or a helper such as `assert_task_status`) on the agent's side or the
    user's."""

    env_type: Literal["assistant", "user"]
    func_name: str
    arguments: dict[str, Any]


class EnvAssertion(EnvCall):
    assert_value: bool = True
    message: str | None = None


class HistoryCall(_Loose):
    id: str = ""
    name: str
    arguments: dict[str, Any]
    requestor: Literal["assistant", "user"] = "assistant"


class HistoryMessage(_Loose):
    """A message of a conversation that happened before the task starts."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[HistoryCall] | None = None
    id: str | None = None
    requestor: Literal["assistant", "user"] = "assistant"


class InitializationData(_Loose):
    agent_data: dict[str, Any] | None = None
    user_data: dict[str, Any] | None = None


class InitialState(_Loose):
    initialization_data: InitializationData | None = None
    initialization_actions: list[EnvCall] | None = None
    message_history: list[HistoryMessage] | None = None


RewardPart = Literal["DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"]


def _default_basis() -> list[RewardPart]:
    """tau2-bench's default reward basis, the original τ-bench's."""
    return ["DB", "COMMUNICATE"]


class EvaluationCriteria(_Loose):
    actions: list[Action] | None = None
    env_assertions: list[EnvAssertion] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[RewardPart] = Field(default_factory=_default_basis)


class Task(_Loose):
    """One task: the user's scenario, where the episode starts, and how it is scored."""

    id: str
    user_scenario: UserScenario
    ticket: str | None = None
    """The task as a support ticket, which an agent in solo mode (no user) works from."""
    initial_state: InitialState | None = None
    evaluation_criteria: EvaluationCriteria | None = None

    def history(self) -> list[HistoryMessage]:
        """The conversation before the task starts (most tasks have none)."""
        return list(self.initial_state.message_history or []) if self.initial_state else []

    _scenario: Scenario | None = PrivateAttr(default=None)

    def scenario(self) -> Scenario:
        """What the simulated user is told, and what a scripted user says (see `scripted_turns`): made once per
        task, as every reset asks for it."""
        if self._scenario is None:
            self._scenario = Scenario(
                instructions=scenario_text(self.user_scenario.instructions),
                persona=self.user_scenario.persona,
                script=scripted_turns(self.user_scenario.instructions),
            )
        return self._scenario


def scenario_text(instructions: Instructions | str) -> str:
    """A scenario as the simulated user reads it: each part under its own heading."""
    if isinstance(instructions, str):
        return instructions
    parts = [("Why you are contacting the agent", instructions.reason_for_call)]
    if instructions.known_info:
        parts.append(("What you know", instructions.known_info))
    if instructions.unknown_info:
        parts.append(("What you do not know", instructions.unknown_info))
    parts.append(("How to behave", instructions.task_instructions))
    return "\n\n".join(f"{title}:\n{textwrap.indent(text.strip(), '    ')}" for title, text in parts)


CONFIRM = "Yes, please go ahead."
THANKS = "Thank you, that is all I needed."


def scripted_turns(instructions: Instructions | str) -> tuple[str, ...]:
    """What a scripted user says when no model plays it: the scenario's reason for the call and what it knows, said
    as the customer would say them (in the first person, without the sentences that tell the user how to act:
    `customer_opening`), then a confirmation of whatever the agent proposes, then thanks. A stand-in for tests and
    for training without a user model, not τ²-bench's user: it reveals at once what a real user would disclose
    progressively, and some scenarios' hidden intentions with it."""
    if isinstance(instructions, str):
        opening = instructions.strip()
    else:
        opening = "\n\n".join(
            text.strip() for text in (instructions.reason_for_call, instructions.known_info) if text
        )
    return (customer_opening(opening), CONFIRM, CONFIRM, THANKS)


@dataclass(frozen=True)
class DomainFiles:
    """Which of a domain's files hold its databases and its policy: airline's, retail's and mock's layout by default
    (`db.json`, `user_db.json`, `policy.md`). A database file is read by its suffix: JSON, or TOML (`.toml`)."""

    database: str = "db.json"
    user_database: str = "user_db.json"
    policy: str | None = "policy.md"
    """The file that is the agent's policy, or None where the environment puts the policy together (telecom)."""
    documents: tuple[str, ...] = ()
    """More text files the environment reads (telecom's policies), kept by name in `Domain.documents`."""


@dataclass(frozen=True)
class Domain:
    """One domain's data, shared by every episode in this process: never change any of it (its bases refuse it).

    Attributes:
        name: `airline`, `retail`, `mock` or `telecom`.
        folder: Where its files were read from.
        policy: The policy the agent follows, from the domain's policy file; empty for a domain whose environment
            puts it together from `documents` (telecom).
        tasks: Every task, by id, in the file's order (`TaskFile`).
        splits: Each split's task ids (`train`, `test`, `base` where the domain has them).
        base: The database every task starts from, read-only (`shared.share`).
        user_base: The user's own database, for a domain whose user has tools (mock, telecom), read-only too.
        documents: The text of each of `DomainFiles.documents`, by file name.
    """

    name: str
    folder: Path
    policy: str
    tasks: Mapping[str, Task]
    splits: dict[str, list[str]]
    base: BaseModel
    user_base: BaseModel | None
    documents: Mapping[str, str] = field(default_factory=dict)

    def task(self, task_id: str) -> Task:
        """The task `task_id`; `LookupError` naming a few real ids when there is none."""
        found = self.tasks.get(str(task_id))
        if found is None:
            some = ", ".join(list(self.tasks)[:5])
            raise LookupError(f"τ²-bench {self.name} has no task {task_id!r}; its task ids are like {some}")
        return found

    def split(self, split: str) -> list[Task]:
        """The tasks of a split, in the split file's order; `SplitNotFoundError` naming the splits there are."""
        ids = self.splits.get(split)
        if ids is None:
            raise SplitNotFoundError(
                f"τ²-bench {self.name} has no split {split!r}; its splits are {', '.join(self.splits)}",
                splits=list(self.splits),
            )
        return [self.task(task_id) for task_id in ids]


class TaskFile(Mapping[str, Task]):
    """A domain's tasks by id, in the file's order, each read from its JSON when asked for.

    Every task is parsed and validated when the file is read, so a file that is not tau2-bench's fails there; but
    only the tasks episodes ask for are kept as objects (the `KEPT` most recently asked for), the rest as their
    JSON. telecom's 2,285 tasks (14 MB of JSON) take about 80 MB of objects, against 13 MB of JSON; reading one
    again takes tens of microseconds. Safe to share between threads.
    """

    KEPT = 512

    def __init__(self, sources: dict[str, bytes]) -> None:
        self._sources = sources
        self._kept: OrderedDict[str, Task] = OrderedDict()
        self._lock = threading.Lock()

    def __getitem__(self, task_id: str) -> Task:
        with self._lock:
            found = self._kept.get(task_id)
            if found is not None:
                self._kept.move_to_end(task_id)
                return found
        task = Task.model_validate_json(self._sources[task_id])
        with self._lock:
            found = self._kept.setdefault(task_id, task)
            self._kept.move_to_end(task_id)
            while len(self._kept) > self.KEPT:
                self._kept.popitem(last=False)
        return found

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._sources

    def __iter__(self) -> Iterator[str]:
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def read_tasks(raw: bytes) -> TaskFile:
    """A tasks.json's tasks (see `TaskFile`).

    Raises:
        UnicodeDecodeError, json.JSONDecodeError, pydantic.ValidationError: The file is not UTF-8, not JSON, or not
            a list of tau2-bench's tasks; the error says where, as a parse of the whole file would.
    """
    text = raw.decode("utf-8")
    try:
        return TaskFile(_task_sources(text))
    except (ValueError, IndexError):  # where and why, as a parse of the whole file says it
        _TASKS.validate_python(json.loads(text))
        raise


def _task_sources(text: str) -> dict[str, bytes]:
    """Each task's JSON by its id, every one validated, from a JSON list of tasks."""
    index = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if text[index] != "[":
        raise ValueError("not a list")
    index = _SPACE.match(text, index + 1).end()  # type: ignore[union-attr]
    sources: dict[str, bytes] = {}
    while text[index] != "]":
        item, end = _DECODER.raw_decode(text, index)
        sources[Task.model_validate(item).id] = text[index:end].encode("utf-8")
        index = _SPACE.match(text, end).end()  # type: ignore[union-attr]
        if text[index] == ",":
            index = _SPACE.match(text, index + 1).end()  # type: ignore[union-attr]
        elif text[index] != "]":
            raise ValueError("a task is not followed by ',' or ']'")
    if _SPACE.match(text, index + 1).end() != len(text):  # type: ignore[union-attr]
        raise ValueError("more after the list")
    return sources


_domains: dict[tuple[str, str, str], Domain] = {}
_domains_lock = threading.Lock()


def load_domain(
    name: str,
    base_model: type[BaseModel],
    user_model: type[BaseModel] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    files: DomainFiles = DomainFiles(),
) -> Domain:
    """A domain's data, read once per process and folder (downloaded first where it must be; see `data`), from the
    files `files` names.

    Raises:
        Tau2DataError: A file is missing, or cannot be read or parsed: the message names it, what is wrong with it,
            and the ways out.
    """
    folder = domain_folder(name, data_dir)
    key = (name, str(folder.resolve()), base_model.__qualname__)
    with _domains_lock:
        found = _domains.get(key)
        if found is None:
            reader = _Reader(name, folder, named=named_root(data_dir) is not None)
            found = _domains[key] = reader.domain(base_model, user_model, files)
        return found


_TASKS = TypeAdapter(list[Task])
_SPLITS = TypeAdapter(dict[str, list[str | int]])
T = TypeVar("T")


@dataclass(frozen=True)
class _Reader:
    """Reads a domain's files, each failure to read or parse one a `Tau2DataError` naming the file."""

    name: str
    folder: Path
    named: bool

    def domain(
        self, base_model: type[BaseModel], user_model: type[BaseModel] | None, files: DomainFiles
    ) -> Domain:
        tasks = self.parsed("tasks.json", read_tasks)
        splits = self.parsed("split_tasks.json", _SPLITS.validate_json)
        base = self.parsed(files.database, database_reader(files.database, base_model))
        user_base = (
            None
            if user_model is None
            else self.parsed(files.user_database, database_reader(files.user_database, user_model))
        )
        for shared in (base, user_base):
            if shared is not None:
                share(shared)  # every episode reads it: a change in place raises, pointing to Table.edit
        documents = {name: self.parsed(name, _text) for name in files.documents}
        return Domain(
            name=self.name,
            folder=self.folder,
            policy=self.parsed(files.policy, _text) if files.policy is not None else "",
            tasks=tasks,
            splits={split: [str(task_id) for task_id in ids] for split, ids in splits.items()},
            base=base,
            user_base=user_base,
            documents=documents,
        )

    def parsed(self, file: str, parse: Callable[[bytes], T]) -> T:
        path = self.folder / file
        try:
            text = path.read_bytes()
        except OSError as error:
            raise unusable(path, self.name, unreadable(error), named=self.named) from None
        try:
            return parse(text)
        except ValidationError as error:
            raise unusable(path, self.name, _validation_problem(error), named=self.named) from None
        except json.JSONDecodeError as error:
            raise unusable(path, self.name, f"it is not valid JSON ({error})", named=self.named) from None
        except tomllib.TOMLDecodeError as error:
            raise unusable(path, self.name, f"it is not valid TOML ({error})", named=self.named) from None
        except UnicodeDecodeError as error:
            raise unusable(path, self.name, f"it is not UTF-8 text ({error})", named=self.named) from None


def _text(raw: bytes) -> str:
    """A text file as tau2-bench reads it (Python's universal newlines)."""
    return raw.decode("utf-8").replace("\r\n", "\n")


def database_reader(file: str, model: type[BaseModel]) -> Callable[[bytes], BaseModel]:
    """How a database file is parsed into `model`: TOML for a `.toml` file (as tau2-bench's telecom keeps its
    databases), JSON otherwise."""
    if file.endswith(".toml"):
        return lambda raw: model.model_validate(tomllib.loads(raw.decode("utf-8")))
    return model.model_validate_json


def _validation_problem(error: ValidationError) -> str:
    """A pydantic error in one line: its first problem and where, and how many more there are."""
    first = error.errors(include_url=False, include_input=False)[0]
    more = error.error_count() - 1
    and_more = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    if first["type"] == "json_invalid":
        reason = str(first.get("ctx", {}).get("error") or first["msg"])
        return f"it is not valid JSON ({reason}){and_more}"
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
    return f"it is not in tau2-bench's form (at {where or 'the top'}: {first['msg']}){and_more}"
