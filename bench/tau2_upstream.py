"""agent_env's τ²-bench domains against tau2-bench's own code: the same call sequences through both, and scripted
episodes scored by both, with every difference printed.

1. Tools, call by call. For each domain (airline, retail, mock, telecom), the same sequences run through agent_env (a
   `LocalSession` over the domain's environment, as a trainer drives it) and through tau2-bench's environment
   (`Environment.get_response`, what its live episodes and its evaluator's replay call), each from the task's
   initial state: every task's reference actions; each of their writes dropped, and each argument of each write
   changed; and seeded fuzzed sequences over real ids (sold-out cabins, flown and cancelled flights, gift card and
   certificate balances, orders in every status, repeated items, other users' payment methods, unknown ids; telecom's
   lines, bills and refuels on the agent's side and every phone setting on the user's, from any task's initial
   state). telecom's 2,285 tasks each get their reference; the base split's 114 the variants and the episodes.
   Compared per call: success or failure, and the result's text (or the error's). After each sequence: the whole
   database, as tau2-bench hashes it (each entity's JSON, keys sorted), entity by entity; and the user's database
   where the domain has one.
2. The reward, episode by episode. Scripted episodes played here (each task's reference actions, with and without
   the messages the task wants said, and with them said only beside a call in one message, as tau2-bench's default
   protocol takes such a reply; each write dropped or changed) are scored by agent_env and again by
   tau2-bench's `evaluate_simulation` on the same messages, with strict replay (every replayed write's text must
   match the recorded one). Compared: the reward and each part of the reward basis. telecom's episodes are played
   with its scripted user making its own calls when asked (one message each, and all in one), with the calls made
   directly, with each write dropped or changed, and in solo mode; and the DB check its basis does not count is
   compared too. Retail's NL assertions need
   an LLM on both sides; where a task has them, both score it without them (agent_env says so in its note).
3. Episodes `agent-env eval` plays (`bench/_tau2_played.py`): transfers (halfway then finishing the task; then a
   write the reference never makes, task 13's shape; then stopping) and replies whose calls pass a limit, each
   played through the real `evaluate` against a scripted server, for every task. tau2-bench's own orchestrator
   plays the same agent replies and user words with its own environment: how the episode ended, each tool message,
   the reward and each part must be the same; and its `evaluate_simulation` scores the episode eval recorded, which
   must give eval's reward.
4. The prompts: every row's system message is what upstream's `LLMAgent.system_prompt` gives, and every task's user
   prompt what its `UserSimulator.system_prompt` gives (the installed tau2-bench's code, on the same files).
5. agent_env's shared base database equals a fresh parse of db.json after all of it, and both sides start from the
   same database (every entity's hash compared first).

A call that fails after changing the database (a gift card drawn down before a certificate listed twice is found
used) changes nothing here, by design, where tau2-bench keeps the change: such a sequence or episode is compared again
with the change kept (`Tau2Environment._undo_failures` off), where it must match, and counted apart.

What the schema refuses before a tool runs (an enum value, an unknown key) is counted apart when tau2-bench fails
the call too: both failed, and the text differs by design (docs/tau2.md, "Differences"). Every other difference is
printed, and the exit status is 1 when there is any.

tau2-bench is not a dependency of agent_env and none of its code is here: install it apart, in a venv of its own
(it needs Python >= 3.12) from its repository at the pinned commit (PyPI's `tau2` is an unrelated package):

    uv venv /tmp/tau2-venv --python 3.12
    VIRTUAL_ENV=/tmp/tau2-venv uv pip install \\
        "git+https://github.com/sierra-research/tau2-bench@a2c024725189473d2d7cea3a5cfdbcc67478e41f"
    # or: python3.12 -m venv /tmp/tau2-venv && /tmp/tau2-venv/bin/pip install "git+https://...@a2c0247..."

Run (agent_env's Python; tau2-bench's side runs in its own interpreter, `bench/_tau2_upstream_side.py`):

    PYTHONPATH=. uv run python bench/tau2_upstream.py --tau2 /tmp/tau2-venv [--domains airline retail mock]
        [--fuzz 3000] [--seed 0] [--no-episodes]

`--tau2` names tau2-bench's venv, its Python, or a checkout (its `.venv`, else this Python with its `src`). Both
sides read the same data: agent_env's (`AGENT_ENV_TAU2_DATA` or the cache, downloaded at the pinned commit),
handed to tau2-bench through `TAU2_DATA_DIR`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, TextIO

from agent_env.envs.tau2 import COMMIT
from agent_env.envs.tau2.airline import Tau2Airline
from agent_env.envs.tau2.environment import Tau2Environment
from agent_env.envs.tau2.mock import Tau2Mock
from agent_env.envs.tau2.retail import Tau2Retail
from agent_env.envs.tau2.store import Store, canonical
from agent_env.envs.tau2.tasks import Task, database_reader
from agent_env.envs.tau2.telecom import Tau2Telecom, Tau2TelecomSolo
from agent_env.errors import AgentEnvError, ToolArgumentError
from agent_env.session import LocalSession
from agent_env.users import ASIDE, STOP, USER_CHANNEL, ScriptedUser
from bench._tau2_played import Player, plans, scripts, upstream_messages
from bench._tau2_sequences import (
    FUZZ,
    Call,
    Step,
    episodes,
    failing_after_changes,
    reference,
    telecom_episodes,
    variants,
)

ENVIRONMENTS: dict[str, type[Tau2Environment]] = {
    "airline": Tau2Airline,
    "retail": Tau2Retail,
    "mock": Tau2Mock,
    "telecom": Tau2Telecom,
}
SOLO: dict[str, type[Tau2Environment]] = {"telecom": Tau2TelecomSolo}
NEW_BILL = re.compile(r"\bB[0-9a-f]{8}\b")
"""The id of a bill telecom's refuel opens: random in tau2-bench, derived from the account here; read as one."""
IN_BAND: dict[str, str] = {"set_network_mode_preference": "Failed to set network mode: "}
"""Tools that answer a value outside the schema's enum with their own refusal, as text rather than an error: the
schema refuses the value here first (docs/tau2.md)."""
SIDE_SCRIPT = Path(__file__).with_name("_tau2_upstream_side.py")
INSTALL = (
    'pip install "git+https://github.com/sierra-research/tau2-bench@a2c024725189473d2d7cea3a5cfdbcc67478e41f" '
    "into a venv of Python >= 3.12 (PyPI's `tau2` is an unrelated package)"
)
GREETING = "Hi! How can I help you today?"
"""What tau2-bench's agent says first in every conversation."""

IDS = re.compile(r"\b(?:[A-Za-z_#]*[0-9][A-Za-z0-9_.#-]*|[A-Z0-9]{6})\b")
"""What a failure kind blanks: ids, numbers and reservation codes."""
Dumps = dict[str, dict[str, str]]
"""A database by table and key, each entity as canonical JSON."""


# tau2-bench's side, in its own interpreter.


def tau2_python(path: Path) -> tuple[str, dict[str, str]]:
    """The interpreter that runs tau2-bench's side, and what its environment adds, from `--tau2`: a venv, a Python,
    or a checkout (its `.venv`, else this Python with the checkout's `src` on the path)."""
    if path.is_file() and os.access(path, os.X_OK):
        return str(path), {}
    for candidate in (path / "bin" / "python", path / "Scripts" / "python.exe"):
        if candidate.is_file():
            return str(candidate), {}
    if (path / "src" / "tau2").is_dir():
        venv = path / ".venv" / "bin" / "python"
        if venv.is_file():
            return str(venv), {}
        return sys.executable, {"PYTHONPATH": str(path / "src")}
    raise SystemExit(f"--tau2 {path}: neither a venv, a Python nor a tau2-bench checkout; {INSTALL}")


class Upstream:
    """tau2-bench's side: a process running `_tau2_upstream_side.py`, asked one JSON request at a time."""

    def __init__(self, path: Path, data: Path) -> None:
        python, extra = tau2_python(path)
        env = {**os.environ, **extra, "TAU2_DATA_DIR": str(data), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        self.log = tempfile.NamedTemporaryFile("w+", prefix="tau2-upstream-", suffix=".log", delete=False)  # noqa: SIM115
        self.process = subprocess.Popen(
            [python, str(SIDE_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
            cwd=data,
        )
        hello = self._read()
        if "fatal" in hello:
            raise SystemExit(
                f"tau2-bench cannot be imported by {python} ({hello['fatal']}); {INSTALL}\n{self.log_tail()}"
            )
        self.installed: dict[str, Any] = hello["installed"]

    def ask(self, **request: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self._read()
        if "fatal" in answer:
            raise RuntimeError(
                f"tau2-bench's side failed on {request.get('op')}: {answer['fatal']}\n{answer}"
            )
        return answer

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"tau2-bench's side ended (exit {self.process.wait()}):\n{self.log_tail()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def log_tail(self) -> str:
        self.log.flush()
        return "".join(Path(self.log.name).read_text().splitlines(keepends=True)[-30:])

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)


def shared_data(root: Path) -> Path:
    """A folder laid out as tau2-bench reads its data (`TAU2_DATA_DIR/tau2/domains/<domain>`, and
    `TAU2_DATA_DIR/tau2/user_simulator`), each a link to the folder agent_env reads, so both read the same files."""
    from agent_env.envs.tau2.data import domain_folder

    domains = root / "tau2" / "domains"
    domains.mkdir(parents=True)
    for domain in ENVIRONMENTS:
        (domains / domain).symlink_to(domain_folder(domain).resolve(), target_is_directory=True)
    guidelines = domain_folder("user_simulator").resolve()
    (root / "tau2" / "user_simulator").symlink_to(guidelines, target_is_directory=True)
    return root


UNDONE: list[bool] = []
"""Whether each failed call undone since the last look had changed anything (`Store.undo`'s answers)."""


def watch_undo() -> None:
    """Note each `Store.undo`'s answer in `UNDONE`: a sequence or an episode where a failed call had changed the
    database is compared again with the change kept, as tau2-bench keeps it."""
    undo = Store.undo

    def noted(store: Store) -> bool:
        found = undo(store)
        UNDONE.append(found)
        return found

    Store.undo = noted  # type: ignore[method-assign]


def keeping(environment: type[Tau2Environment]) -> type[Tau2Environment]:
    """`environment` as tau2-bench's code behaves: what a failed call changed before it failed is kept."""
    return type(f"Keeping{environment.__name__}", (environment,), {"_undo_failures": False})


KEPT = "a failed call had changed the database: undone here, kept by tau2-bench (compared again with it kept: alike)"


# agent_env's side.


def table_dumps(model: Any) -> Dumps:
    return {
        name: {key: canonical(entity) for key, entity in getattr(model, name).items()}
        for name in type(model).model_fields
    }


def digests(dumps: Dumps | None) -> dict[str, dict[str, str]] | None:
    if dumps is None:
        return None
    return {
        table: {key: hashlib.sha256(text.encode()).hexdigest() for key, text in e.items()}
        for table, e in dumps.items()
    }


@dataclasses.dataclass
class Outcome:
    """One call as a side ran it."""

    error: bool
    text: str
    refused: bool = False
    """Refused by agent_env's schema before the tool ran."""
    note: str = ""


class Ours:
    """agent_env's side of one domain: one environment, a session over it, and its base database's dumps."""

    def __init__(self, domain: str, keep: bool = False) -> None:
        environment = keeping(ENVIRONMENTS[domain]) if keep else ENVIRONMENTS[domain]
        self.env = environment(
            user=ScriptedUser(turns=["Hello."], then="OK."), max_steps=10**9, max_errors=10**9
        )
        self.session = LocalSession(self.env)
        self.base = {"db": table_dumps(self.env.data.base)}
        if self.env.data.user_base is not None:
            self.base["user_db"] = table_dumps(self.env.data.user_base)

    def run(self, task_id: str, calls: list[Call]) -> tuple[list[Outcome], dict[str, Any]]:
        """Each call as the live episode runs it (the agent's through the session, the user's through the user's
        channel), and the entities that differ from the base afterwards. The whole database is the shared base with
        the episode's own entities over it (the base itself is held to a fresh parse at the end)."""
        self.session.reset(task_id=task_id)
        outcomes = [self.call(requestor, name, arguments) for requestor, name, arguments in calls]
        changed = {}
        for side, store in (("db", self.env.db), ("user_db", self.env.user_db)):
            if store is not None:
                changed[side] = own_changes(store, self.base[side])
        return outcomes, changed

    def call(self, requestor: str, name: str, arguments: dict[str, Any]) -> Outcome:
        env, before = self.env, len(self.env.calls)
        if requestor == "user":
            refused = False
            user_tool = env.user_side.tools.get(name) if env.user_side is not None else None
            if user_tool is not None:
                try:
                    user_tool.bind(arguments)
                except ToolArgumentError:
                    refused = True
            env.run_user_tool(name, arguments)
            record = env.calls[-1]
            return Outcome(record.error, record.result, refused=refused)
        if self.session.ended() is not None:
            record = env.replay(name, arguments, "assistant")
            return Outcome(
                record.error, record.result, note=f"run after the episode ended ({self.session.ended()})"
            )
        refused, live = False, None
        try:
            live = self.session.call_tool(name, arguments)
        except ToolArgumentError:
            refused = True
        except AgentEnvError:
            pass
        if len(env.calls) != before + 1:
            return Outcome(True, "", note="the call left no record in the episode")
        record = env.calls[-1]
        note = "" if live is None or live == record.result else f"the session answered {live!r}"
        return Outcome(record.error, record.result, refused=refused, note=note)


def own_changes(store: Store, base: Dumps) -> dict[str, dict[str, str | None]]:
    changed: dict[str, dict[str, str | None]] = {}
    for name, table in store.tables.items():
        diff: dict[str, str | None] = {}
        for key in table.changed():
            text = canonical(table[key])
            if base[name].get(key) != text:
                diff[key] = text
        if diff:
            changed[name] = diff
    return changed


# Comparing.


@dataclasses.dataclass
class Tally:
    """What one domain's comparison found."""

    sequences: int = 0
    calls: int = 0
    both_ok: int = 0
    both_failed: int = 0
    schema_first: int = 0
    in_band: int = 0
    """Refused by agent_env's schema where tau2-bench answered the same value with a refusal of its own, as text."""
    quirks: dict[str, int] = dataclasses.field(default_factory=dict)
    differences: list[str] = dataclasses.field(default_factory=list)
    episodes: int = 0
    episodes_matched: int = 0
    played: int = 0
    played_matched: int = 0
    played_kinds: dict[str, int] = dataclasses.field(default_factory=dict)
    """The eval-played episodes matched, by shape, how they ended and their reward."""
    prompts: int = 0
    prompts_matched: int = 0
    rewards: dict[float, int] = dataclasses.field(default_factory=dict)
    """The matched episodes' rewards: how many scored each."""
    episode_notes: list[str] = dataclasses.field(default_factory=list)
    tools: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    """Each tool's calls that both sides ran alike: [succeeded, failed]."""
    failures: dict[str, int] = dataclasses.field(default_factory=dict)
    """The failures both sides gave alike, by kind (the error text with its ids and numbers blanked)."""

    def agreed(self, name: str, error: bool, text: str) -> None:
        counts = self.tools.setdefault(name, [0, 0])
        counts[error] += 1
        if error:
            self.both_failed += 1
            kind = f"{name}: {IDS.sub('…', text.splitlines()[0] if text else text)}"
            self.failures[kind] = self.failures.get(kind, 0) + 1
        else:
            self.both_ok += 1


def short(value: Any, limit: int = 240) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def entity_diff(ours: str | None, theirs: str | None) -> str:
    """Which fields of an entity differ, with each side's value."""
    if ours is None or theirs is None:
        return f"ours {'absent' if ours is None else short(ours)} | tau2-bench {'absent' if theirs is None else short(theirs)}"
    mine, other = json.loads(ours), json.loads(theirs)
    fields = sorted(k for k in set(mine) | set(other) if mine.get(k, "(absent)") != other.get(k, "(absent)"))
    return "; ".join(
        f"{k}: ours {short(mine.get(k, '(absent)'), 160)} | tau2-bench {short(other.get(k, '(absent)'), 160)}"
        for k in fields
    )


def compare_sequence(
    tally: Tally,
    label: str,
    calls: list[Call],
    ours: list[Outcome],
    ours_changed: dict[str, Any],
    theirs: dict[str, Any],
) -> None:
    tally.sequences += 1
    refused_ran = False
    shared = bool(theirs.get("user_db_is_agent_db"))
    if any(NEW_BILL.search(text) for _, text in theirs["results"]) or NEW_BILL.search(
        json.dumps(theirs["changed"])
    ):
        note = "a bill a refuel opened: its id is read as one on both sides (tau2-bench draws it at random)"
        tally.quirks[note] = tally.quirks.get(note, 0) + 1
        theirs = json.loads(NEW_BILL.sub("B<new>", json.dumps(theirs)))
        ours = [dataclasses.replace(o, text=NEW_BILL.sub("B<new>", o.text)) for o in ours]
        ours_changed = json.loads(NEW_BILL.sub("B<new>", json.dumps(ours_changed)))
    for index, ((requestor, name, arguments), mine, (error, text)) in enumerate(
        zip(calls, ours, theirs["results"], strict=True)
    ):
        tally.calls += 1
        where = f"{label}, call {index} {name}({short(arguments, 160)})"
        if shared and requestor == "user":
            # tau2-bench's set_state points the user's toolkit at the agent's database once initialization data
            # for the agent is merged (environment.py), so every user tool fails there on a missing attribute.
            note = "a user call not compared: tau2-bench's user toolkit holds the agent's database (its set_state)"
            tally.quirks[note] = tally.quirks.get(note, 0) + 1
            continue
        if mine.refused and error:
            tally.schema_first += 1
            continue
        if mine.refused and name in IN_BAND and text.startswith(IN_BAND[name]):
            tally.in_band += 1
            continue
        if mine.refused:
            refused_ran = True
        if mine.error != error or mine.text != text:
            tally.differences.append(
                f"{where}: ours {'fails' if mine.error else 'succeeds'} {short(mine.text)!r}"
                f"{' (refused by the schema)' if mine.refused else ''} | tau2-bench {'fails' if error else 'succeeds'} {short(text)!r}"
            )
        else:
            tally.agreed(name, error, text)
        if mine.note:
            tally.differences.append(f"{where}: {mine.note}")
    theirs_changed = dict(theirs["changed"])
    if shared:  # its user database is then the agent's: there is no inbox to compare
        note = "a sequence whose user database is not compared: tau2-bench's is the agent's (its set_state)"
        tally.quirks[note] = tally.quirks.get(note, 0) + 1
        theirs_changed.pop("user_db", None)
        ours_changed = {k: v for k, v in ours_changed.items() if k != "user_db"}
    for side in sorted(set(ours_changed) | set(theirs_changed)):
        mine_side, their_side = ours_changed.get(side, {}), theirs_changed.get(side, {})
        for table in sorted(set(mine_side) | set(their_side)):
            mine_t, their_t = mine_side.get(table, {}), their_side.get(table, {})
            for key in sorted(set(mine_t) | set(their_t)):
                if mine_t.get(key, "(base)") != their_t.get(key, "(base)"):
                    tally.differences.append(
                        f"{label}: after the sequence, {side}.{table}[{key!r}] differs"
                        f"{' (a call our schema refused ran there)' if refused_ran else ''}: "
                        f"{entity_diff(mine_t.get(key, ours_base(table, key)), their_t.get(key, ours_base(table, key)))}"
                    )


_BASE: dict[str, Dumps] = {}


def ours_base(table: str, key: str) -> str | None:
    """An entity as the base has it (for showing what a side left unchanged)."""
    return _BASE.get("db", {}).get(table, {}).get(key) or _BASE.get("user_db", {}).get(table, {}).get(key)


def compare_tools(domain: str, upstream: Upstream, fuzz: int, seed: int, tally: Tally, out: TextIO) -> None:
    ours = Ours(domain)
    _BASE.clear()
    _BASE.update(ours.base)
    described = upstream.ask(op="init", domain=domain)
    for side, theirs in described["base"].items():
        mine = digests(ours.base.get(side))
        if mine != theirs:
            tally.differences.append(
                f"the base {side} differs between the sides before any call: {base_difference(mine, theirs)}"
            )
    writes = {name for name, mutates in described["tools"].get("assistant", {}).items() if mutates}
    writes |= {name for name, mutates in described["tools"].get("user", {}).items() if mutates}
    env, base = ours.env, ours.env.data.base
    tasks = list(env.data.tasks.values())
    # telecom: every task's reference (2,285), the base split's variants, and fuzzing from any task's initial state
    varied = (
        {task.id for task in env.data.split("base")} if domain == "telecom" else {task.id for task in tasks}
    )
    plain = [task.id for task in tasks if task.initial_state is None] or [tasks[0].id]
    rng = random.Random(f"{seed}-{domain}")
    sequences: list[tuple[str, str, list[Call]]] = []
    for task in tasks:
        sequences.append((f"task {task.id}: reference actions", task.id, reference(task)))
        sequences += [
            (f"task {task.id}: {what}", task.id, calls)
            for what, calls in (variants(domain, task, base, writes) if task.id in varied else ())
        ]
    for number in range(fuzz):
        task_id = (
            rng.choice([task.id for task in tasks]) if domain in ("mock", "telecom") else rng.choice(plain)
        )
        sequences.append((f"fuzzed sequence {number} (task {task_id})", task_id, FUZZ[domain](base, rng)))
    sequences += [(label, plain[0], calls) for label, calls in failing_after_changes(domain, base)]
    started = time.perf_counter()
    kept = Ours(domain, keep=True)
    for number, (label, task_id, calls) in enumerate(sequences, 1):
        UNDONE.clear()
        outcomes, changed = ours.run(task_id, calls)
        theirs = upstream.ask(op="run", domain=domain, task=task_id, calls=[list(call) for call in calls])
        if any(UNDONE):
            tally.quirks[KEPT] = tally.quirks.get(KEPT, 0) + 1
            outcomes, changed = kept.run(task_id, calls)
        compare_sequence(tally, label, calls, outcomes, changed, theirs)
        if number % 500 == 0:
            print(
                f"  {domain}: {number}/{len(sequences)} sequences, {time.perf_counter() - started:.0f} s",
                file=out,
                flush=True,
            )


def base_difference(mine: dict[str, dict[str, str]] | None, theirs: dict[str, dict[str, str]] | None) -> str:
    if mine is None or theirs is None:
        return f"ours {'none' if mine is None else 'present'}, tau2-bench's {'none' if theirs is None else 'present'}"
    found = [
        f"{table}[{key!r}]"
        for table in sorted(set(mine) | set(theirs))
        for key in sorted(set(mine.get(table, {})) | set(theirs.get(table, {})))
        if mine.get(table, {}).get(key) != theirs.get(table, {}).get(key)
    ]
    return f"{len(found)} entities: {', '.join(found[:20])}{' ...' if len(found) > 20 else ''}"


# Episodes, scored by both.


def play(
    domain: str,
    task: Task,
    steps: list[Step],
    user_stops: bool,
    *,
    solo: bool = False,
    scripted: bool = False,
    keep: bool = False,
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """Play an episode here; its score's breakdown, the messages as tau2-bench records them, and how it ended.
    `scripted`: the user is the scenario's own scripted user (who makes its calls when asked), not a fixed script;
    `solo`: the domain in solo mode (no user, no greeting); `keep`: what a failed call changed is kept, as
    tau2-bench keeps it."""
    user = (
        ScriptedUser()
        if scripted
        else ScriptedUser(turns=["Hello, I need some help.", "OK, thank you."], then=STOP)
    )
    environment = (SOLO if solo else ENVIRONMENTS)[domain]
    env = (keeping(environment) if keep else environment)(user=user)
    session = LocalSession(env)
    session.reset(task_id=task.id)
    messages: list[dict[str, Any]] = (
        [] if task.history() or solo else [{"role": "assistant", "content": GREETING}]
    )
    if not solo:
        messages.append({"role": "user", "content": env.transcript[-1][1]})
    aside: str | None = None
    for index, (kind, requestor, name, arguments) in enumerate(steps):
        if session.ended() is not None:
            break
        if kind == "say":
            reply = session.call_tool("message_user", {"message": name})
            messages += [{"role": "assistant", "content": name}, {"role": "user", "content": reply}]
            continue
        if (
            kind == "ask"
        ):  # the user makes its own calls in its reply: they are its messages, before its words
            before = len(env.calls)
            reply = session.call_tool(USER_CHANNEL, {"message": name})
            made = env.calls[before:]
            messages.append({"role": "assistant", "content": name})
            if made:
                ids = [f"ask_{index}_{number}" for number in range(len(made))]
                messages.append(
                    {
                        "role": "user",
                        "content": None,
                        "tool_calls": [
                            {"id": i, "name": c.name, "arguments": c.arguments, "requestor": "user"}
                            for i, c in zip(ids, made, strict=True)
                        ],
                    }
                )
                messages += [
                    {"role": "tool", "id": i, "content": c.result, "requestor": "user", "error": c.error}
                    for i, c in zip(ids, made, strict=True)
                ]
            messages.append({"role": "user", "content": reply})
            continue
        if kind == "aside":  # as agent-env eval announces a reply of text and a call
            session.call_tool(ASIDE, {"text": name, "calls": 1})
            aside = name
            continue
        call_id = f"call_{index}"
        if requestor == "user":
            env.run_user_tool(name, arguments)
        else:
            with contextlib.suppress(AgentEnvError):
                session.call_tool(name, arguments)
        record = env.calls[-1]
        role = "user" if requestor == "user" else "assistant"
        said, aside = (aside, None) if role == "assistant" else (None, aside)
        messages += [
            {
                "role": role,
                "content": said,
                "tool_calls": [{"id": call_id, "name": name, "arguments": arguments, "requestor": requestor}],
            },
            {
                "role": "tool",
                "id": call_id,
                "content": record.result,
                "requestor": requestor,
                "error": record.error,
            },
        ]
    if session.ended() is None:
        if user_stops:
            closing = "Is there anything else I can help you with?"
            for _ in range(10):  # the script answers a few times more, then stops
                if session.ended() is not None:
                    break
                reply = session.call_tool("message_user", {"message": closing})
                messages += [{"role": "assistant", "content": closing}, {"role": "user", "content": reply}]
            else:
                raise RuntimeError(f"task {task.id}: the scripted user never stopped: {reply!r}")
        else:
            session.call_tool("end_turn", {})
    score = session.score()
    assert score.breakdown is not None and env.termination is not None
    return score.breakdown, messages, env.termination


def compare_episodes(domain: str, upstream: Upstream, tally: Tally) -> None:
    described = upstream.ask(op="init", domain=domain)
    writes = {name for tools in described["tools"].values() for name, mutates in tools.items() if mutates}
    env = ENVIRONMENTS[domain]()
    if domain == "telecom":  # its base split, each played with its scripted user making its calls, and solo
        played: Any = (
            (task, what, steps, user_stops, solo)
            for task in env.data.split("base")
            for what, steps, user_stops, solo in telecom_episodes(task, env.data.base, writes)
        )
    else:
        played = (
            (task, what, steps, user_stops, False)
            for task in env.data.tasks.values()
            for what, steps, user_stops in episodes(domain, task, env.data.base, writes)
        )
    for task, what, steps, user_stops, solo in played:
        criteria = task.evaluation_criteria
        judged = bool(criteria and "NL_ASSERTION" in criteria.reward_basis and criteria.nl_assertions)
        scripted = domain == "telecom"
        UNDONE.clear()
        breakdown, messages, termination = play(domain, task, steps, user_stops, solo=solo, scripted=scripted)
        if any(UNDONE):
            tally.quirks[KEPT] = tally.quirks.get(KEPT, 0) + 1
            breakdown, messages, termination = play(
                domain, task, steps, user_stops, solo=solo, scripted=scripted, keep=True
            )
        theirs = upstream.ask(
            op="evaluate", domain=domain, task=task.id, messages=messages, termination=termination,
            without=["NL_ASSERTION"] if judged else [], solo=solo,
        )  # fmt: skip
        compare_episode(tally, f"task {task.id} episode ({what}, {termination})", breakdown, theirs)


def compare_episode(tally: Tally, label: str, breakdown: dict[str, Any], theirs: dict[str, Any]) -> None:
    tally.episodes += 1
    mine_parts = {part: item["reward"] for part, item in breakdown["parts"].items()}
    if "error" in theirs:
        raised = [
            f"{p}: {item['why']}"
            for p, item in breakdown["parts"].items()
            if "raised" in str(item.get("why", ""))
        ]
        if raised:
            tally.episode_notes.append(
                f"{label}: tau2-bench's evaluator raises ({short(theirs['error'], 160)}); agent_env scores "
                f"{breakdown['reward']} with {'; '.join(raised)} (documented: an assertion that raises)"
            )
        else:
            tally.differences.append(
                f"{label}: tau2-bench's evaluator raises {short(theirs['error'], 400)}; agent_env scores {breakdown['reward']} {mine_parts}"
            )
        return
    # tau2-bench leaves out of its breakdown a DB part it scores 1 without comparing (a task with no reference
    # actions and no assertions); agent_env lists it, scored 1, with why.
    unlisted = {p: r for p, r in mine_parts.items() if p not in theirs["parts"]}
    # The DB check a task's basis does not count, which both compute (telecom's): listed here among the checks,
    # outside the basis; reported there beside the reward.
    uncounted = [check for check in breakdown["checks"] if check["part"] == "DB" and not check["basis"]]
    mine_check = (1.0 if uncounted[0]["met"] else 0.0) if uncounted else None
    checks_agree = mine_check is None or theirs.get("db_check") is None or mine_check == theirs["db_check"]
    if (
        theirs["reward"] == breakdown["reward"]
        and all(mine_parts.get(p) == r for p, r in theirs["parts"].items())
        and all(r == 1.0 for r in unlisted.values())
        and checks_agree
    ):
        tally.episodes_matched += 1
        tally.rewards[breakdown["reward"]] = tally.rewards.get(breakdown["reward"], 0) + 1
        if unlisted:
            note = f"a part scored 1 that tau2-bench's breakdown leaves out ({', '.join(unlisted)})"
            tally.quirks[note] = tally.quirks.get(note, 0) + 1
        if mine_check is not None and theirs.get("db_check") is not None:
            note = f"the uncounted DB check agrees ({'met' if mine_check == 1.0 else 'not met'})"
            tally.quirks[note] = tally.quirks.get(note, 0) + 1
    else:
        tally.differences.append(
            f"{label}: agent_env {breakdown['reward']} {mine_parts} db_check {mine_check} | tau2-bench "
            f"{theirs['reward']} {theirs['parts']} db_check {theirs.get('db_check')}"
            f"; agent_env's why: {short({p: i['why'] for p, i in breakdown['parts'].items()}, 400)}"
        )


def compare_played(domain: str, upstream: Upstream, tally: Tally, out: TextIO) -> None:
    """Episodes eval plays (`_tau2_played`), each replayed by tau2-bench's own orchestrator and scored by its
    evaluator on eval's record."""
    env = ENVIRONMENTS[domain]()
    player = Player(domain)
    started = time.perf_counter()
    try:
        tasks = env.data.split("base") if domain == "telecom" else env.data.tasks.values()
        for task in tasks:
            criteria = task.evaluation_criteria
            judged = bool(criteria and "NL_ASSERTION" in criteria.reward_basis and criteria.nl_assertions)
            without = ["NL_ASSERTION"] if judged else []
            for plan in plans(domain, task, env.data.base):
                UNDONE.clear()
                record = player.play(task, plan)
                label = f"task {task.id}, eval-played ({plan.shape})"
                tally.played += 1
                breakdown = record.get("breakdown") or {}
                termination = breakdown.get("termination")
                if record["ended_by"] != "ended" or termination is None or any(UNDONE):
                    tally.differences.append(
                        f"{label}: eval ended it {record['ended_by']} ({record.get('error') or record.get('ending')})"
                    )
                    continue
                messages = upstream_messages(record)
                agent, user = scripts(messages)
                theirs = upstream.ask(
                    op="orchestrate", domain=domain, task=task.id, agent=agent, user=user,
                    max_steps=plan.config.get("max_steps", 200), max_errors=plan.config.get("max_errors", 10),
                    without=without,
                )  # fmt: skip
                scored = upstream.ask(op="evaluate", domain=domain, task=task.id, messages=messages,
                                      termination=termination, without=without)  # fmt: skip
                mine = {part: item["reward"] for part, item in breakdown["parts"].items()}
                ours_tools = [[m["content"], m["error"]] for m in messages if m["role"] == "tool"]
                found = []
                if "error" in theirs:
                    found.append(
                        f"tau2-bench's orchestrator: {theirs['error']} (after {theirs['steps']} steps)"
                    )
                else:
                    if theirs["termination"] != termination:
                        found.append(f"ended {termination} here, {theirs['termination']} there")
                    if theirs["tools"] != ours_tools:
                        found.append(
                            f"tool messages differ: ours {short(ours_tools)} | there {short(theirs['tools'])}"
                        )
                    if theirs["users"] != user:
                        found.append(f"the user said {short(user)} here, {short(theirs['users'])} there")
                    if "evaluate_error" in theirs:
                        if not _raised(breakdown):
                            found.append(f"tau2-bench's evaluator raises {short(theirs['evaluate_error'])}")
                    elif (theirs["reward"], theirs["parts"]) != (
                        breakdown["reward"],
                        _listed(mine, theirs["parts"]),
                    ):
                        found.append(
                            f"reward {breakdown['reward']} {mine} here, {theirs['reward']} {theirs['parts']} there"
                        )
                    if theirs["left"] != {"agent": 0, "user": 0}:
                        found.append(
                            f"tau2-bench's orchestrator ended with the script unfinished ({theirs['left']})"
                        )
                if "error" in scored:
                    if _raised(breakdown):  # documented: an assertion that raises scores its part 0 here
                        note = f"eval-played ({plan.shape}): tau2-bench's evaluator raises on an assertion that agent_env scores 0"
                        tally.quirks[note] = tally.quirks.get(note, 0) + 1
                    else:
                        found.append(f"evaluate_simulation raised {short(scored['error'])}")
                elif (scored["reward"], scored["parts"]) != (
                    breakdown["reward"],
                    _listed(mine, scored["parts"]),
                ):
                    found.append(
                        f"evaluate_simulation on eval's record: {scored['reward']} {scored['parts']}"
                    )
                if found:
                    tally.differences.append(f"{label}: {'; '.join(found)}")
                else:
                    tally.played_matched += 1
                    key = f"{plan.shape}: {termination}, reward {breakdown['reward']:g}"
                    tally.played_kinds[key] = tally.played_kinds.get(key, 0) + 1
    finally:
        player.close()
    print(
        f"  {domain}: {tally.played} eval-played episodes, {time.perf_counter() - started:.0f} s",
        file=out,
        flush=True,
    )


def _raised(breakdown: dict[str, Any]) -> bool:
    """Whether a part of the breakdown is 0 because an assertion raised (upstream's evaluator raises there)."""
    return any("raised" in str(item.get("why", "")) for item in breakdown.get("parts", {}).values())


def _listed(mine: dict[str, float], theirs: dict[str, float]) -> dict[str, float]:
    """Our parts as tau2-bench lists them: it leaves out a part it scores 1 without comparing (see compare_episodes)."""
    return {part: reward for part, reward in mine.items() if part in theirs or reward != 1.0}


def compare_prompts(domain: str, upstream: Upstream, tally: Tally) -> None:
    """Every row's system message and every task's user prompt, against what upstream's code gives."""
    theirs = upstream.ask(op="prompts", domain=domain, stop_function="end_turn")
    env = ENVIRONMENTS[domain]()
    rows = env.dataset_rows("base")
    tally.prompts += len(rows) + len(env.data.tasks)
    wrong = [row["task_id"] for row in rows if row["prompt"][0]["content"] != theirs["agent"]]
    if wrong:
        tally.differences.append(
            f"the rows' system message differs from LLMAgent.system_prompt: tasks {wrong[:10]}"
        )
    else:
        tally.prompts_matched += len(rows)
    for task in env.data.tasks.values():
        if env.scenario(task).prompt == theirs["users"][task.id]:
            tally.prompts_matched += 1
        else:
            tally.differences.append(
                f"task {task.id}: the user's system prompt differs from UserSimulator.system_prompt"
            )
    if domain in SOLO:  # solo rows: LLMSoloAgent's prompt, with end_turn where upstream names its done tool
        solo_rows = SOLO[domain]().dataset_rows("base")
        tally.prompts += len(solo_rows)
        wrong = [row["task_id"] for row in solo_rows if row["prompt"] != [
            {"role": "system", "content": theirs["solo"].get(row["task_id"])}]]  # fmt: skip
        if wrong:
            tally.differences.append(
                f"the solo rows differ from LLMSoloAgent.system_prompt alone: tasks {wrong[:10]}"
            )
        else:
            tally.prompts_matched += len(solo_rows)


def base_unchanged(domain: str) -> str | None:
    """Whether agent_env's shared base still equals a fresh parse of the domain's files, after everything."""
    env = ENVIRONMENTS[domain]()
    data, files = env.data, env.files
    read = database_reader(files.database, type(data.base))
    if table_dumps(read((data.folder / files.database).read_bytes())) != table_dumps(data.base):
        return f"{domain}: agent_env's shared base no longer equals {files.database}"
    if data.user_base is not None:
        read = database_reader(files.user_database, type(data.user_base))
        if table_dumps(read((data.folder / files.user_database).read_bytes())) != table_dumps(data.user_base):
            return f"{domain}: agent_env's shared user base no longer equals {files.user_database}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tau2", type=Path, required=True, help="tau2-bench's venv, its Python, or a checkout"
    )
    parser.add_argument("--domains", nargs="+", default=list(ENVIRONMENTS), choices=list(ENVIRONMENTS))
    parser.add_argument("--fuzz", type=int, default=3000, help="fuzzed sequences per domain (mock: a tenth)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-episodes", action="store_true", help="compare the tools only")
    args = parser.parse_args(argv)
    out = sys.stdout
    warnings.filterwarnings("ignore", category=SyntaxWarning)  # calculate's eval of "(1)(2)", on purpose
    # A count sent as 2.0 is stored as sent, as tau2-bench stores it; pydantic warns as it dumps it.
    warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)
    watch_undo()
    with tempfile.TemporaryDirectory(prefix="tau2-data-") as root:
        upstream = Upstream(args.tau2.expanduser(), shared_data(Path(root)))
        installed = upstream.installed
        print(
            f"tau2-bench {installed['version']} ({installed['commit'] or installed['url'] or 'commit unknown'}); agent_env pins {COMMIT[:12]}",
            file=out,
        )
        if installed["commit"] and installed["commit"] != COMMIT:
            print(
                f"  warning: tau2-bench was installed from {installed['commit'][:12]}, not the pinned commit",
                file=out,
            )
        tallies: dict[str, Tally] = {}
        started = time.perf_counter()
        try:
            for domain in args.domains:
                tally = tallies[domain] = Tally()
                fuzz = args.fuzz // 10 if domain == "mock" else args.fuzz
                compare_tools(domain, upstream, fuzz, args.seed, tally, out)
                compare_prompts(domain, upstream, tally)
                if not args.no_episodes:
                    compare_episodes(domain, upstream, tally)
                    compare_played(domain, upstream, tally, out)
                changed = base_unchanged(domain)
                if changed:
                    tally.differences.append(changed)
                report(domain, tally, out)
        finally:
            upstream.close()
    print(
        f"\n{'domain':8} {'sequences':>9} {'calls':>7} {'both ok':>8} {'both fail':>9} {'schema 1st':>10} {'in band':>7} {'episodes':>9} {'matched':>8} {'eval-played':>11} {'matched':>8} {'prompts':>8} {'matched':>8} {'diffs':>6}",
        file=out,
    )
    for domain, tally in tallies.items():
        print(
            f"{domain:8} {tally.sequences:>9,} {tally.calls:>7,} {tally.both_ok:>8,} {tally.both_failed:>9,} {tally.schema_first:>10,} {tally.in_band:>7,} {tally.episodes:>9,} {tally.episodes_matched:>8,} {tally.played:>11,} {tally.played_matched:>8,} {tally.prompts:>8,} {tally.prompts_matched:>8,} {len(tally.differences):>6,}",
            file=out,
        )
    total = sum(len(tally.differences) for tally in tallies.values())
    print(f"{total} difference(s) in {time.perf_counter() - started:.0f} s", file=out)
    return 1 if total else 0


def report(domain: str, tally: Tally, out: TextIO) -> None:
    print(
        f"\n{domain}: {tally.sequences:,} sequences, {tally.calls:,} calls: {tally.both_ok:,} succeed on both, {tally.both_failed:,} fail on both with the same text, {tally.schema_first:,} refused by agent_env's schema where tau2-bench fails too, {tally.in_band:,} refused by agent_env's schema where tau2-bench answers its own refusal as text",
        file=out,
    )
    tools = ", ".join(f"{name} {ok:,}/{failed:,}" for name, (ok, failed) in sorted(tally.tools.items()))
    print(f"  by tool (succeeded/failed alike): {tools}", file=out)
    print(f"  {len(tally.failures)} kinds of failure given alike:", file=out)
    for kind, count in sorted(tally.failures.items()):
        print(f"    {count:>6,}  {short(kind, 150)}", file=out)
    for quirk, count in tally.quirks.items():
        print(f"  noted ({count:,}x): {quirk}", file=out)
    if tally.episodes:
        rewards = ", ".join(f"{count} at {reward:g}" for reward, count in sorted(tally.rewards.items()))
        print(
            f"  episodes: {tally.episodes_matched} of {tally.episodes} scored the same (reward and every part) by tau2-bench's evaluate_simulation ({rewards})",
            file=out,
        )
    for note in tally.episode_notes:
        print(f"  noted: {note}", file=out)
    if tally.played:
        print(
            f"  eval-played episodes: {tally.played_matched} of {tally.played} played alike by tau2-bench's orchestrator (how each ended, every tool message, the reward and its parts) and scored alike by its evaluate_simulation on eval's record:",
            file=out,
        )
        for kind, count in sorted(tally.played_kinds.items()):
            print(f"    {count:>5}  {kind}", file=out)
    if tally.prompts:
        print(
            f"  prompts: {tally.prompts_matched} of {tally.prompts} equal upstream's (rows' system messages, users' prompts)",
            file=out,
        )
    print(f"  {len(tally.differences)} difference(s)", file=out)
    for difference in tally.differences:
        print(f"  - {difference}", file=out)


if __name__ == "__main__":
    raise SystemExit(main())
