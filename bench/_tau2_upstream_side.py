"""tau2-bench's side of `bench/tau2_upstream.py`: drives tau2-bench's own domain environments and evaluator, one
JSON request a line on stdin, one JSON answer a line on stdout.

It runs under the interpreter where tau2-bench is installed (which may be another Python than agent_env's), imports
tau2-bench and the standard library only, and holds none of tau2-bench's code: it calls it. Requests:

- `{"op": "init", "domain": d}`: the domain's tools (which change state, on which side), its tasks' ids, and the
  SHA-256 of every entity of its databases as tau2-bench dumps them (JSON, keys sorted).
- `{"op": "run", "domain": d, "task": id or null, "calls": [[requestor, name, arguments], ...]}`: each call through
  `Environment.get_response` (what a live episode and the evaluator's replay call) on the task's initial state (or
  the base database), answered as `[error, content]`, and the entities that differ from the base afterwards, from
  a dump of the whole database.
- `{"op": "evaluate", "domain": d, "task": id, "messages": [...], "termination": t, "without": [part, ...],
  "solo": bool}`: `evaluate_simulation` on those messages (after the task's own history), strict replay, the task's
  reward basis without the parts named (an NL assertion needs an LLM; none is called here), in solo mode or not.
- `{"op": "orchestrate", "domain": d, "task": id, "agent": [message, ...], "user": [text, ...], "max_steps": n,
  "max_errors": n, "without": [part, ...]}`: tau2-bench's own half-duplex `Orchestrator` plays the task with its own
  environment, the agent's messages and the user's texts replayed in order (a participant asked for more than its
  script holds ends the run as an error, named); answered with how it ended, its step count, each tool message
  (content and error) and the user's messages, and `evaluate_simulation`'s reward and parts on its trajectory.
- `{"op": "prompts", "domain": d}`: what upstream's `LLMAgent.system_prompt` gives for the domain's policy, and what
  `UserSimulator.system_prompt` gives for each task (with the domain's user tools, when it has any), as
  `runner/build.py` builds them.

telecom's databases are lists and single entities; each entity is keyed by its id field (a list's) or by `user`
(the user's one phone and one surroundings), as agent_env keys them. Its user toolkit's VPN default is a class
attribute that `break_vpn` changes in place for the rest of the process; it is put back before each run, so that
each run sees what a fresh process would.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.metadata
import json
import os
import sys
import traceback
from typing import Any

SIDES = ("db", "user_db")


def canonical(entity: Any) -> str:
    """An entity as tau2-bench's database hash reads it: its dump as JSON, keys sorted, anything else as `str`."""
    return json.dumps(entity.model_dump(), sort_keys=True, default=str)


def toolkits(env: Any) -> dict[str, Any]:
    return {"db": env.tools, "user_db": env.user_tools}


def keyed(table: Any) -> list[tuple[str, Any]]:
    """A table's entities by key: a mapping's keys, a list's entities by their id field (the first field named
    `..._id`), a single entity as `user`."""
    if isinstance(table, dict):
        return list(table.items())
    if isinstance(table, list):
        return [(getattr(entity, id_field(entity)), entity) for entity in table]
    return [("user", table)]


def id_field(entity: Any) -> str:
    return next(name for name in type(entity).model_fields if name.endswith("_id"))


def dump(env: Any) -> dict[str, dict[str, dict[str, str]] | None]:
    """Every entity of each of `env`'s databases, by table and key, as canonical JSON."""
    found: dict[str, dict[str, dict[str, str]] | None] = {}
    for side, kit in toolkits(env).items():
        db = getattr(kit, "db", None)
        if db is None:
            found[side] = None
            continue
        found[side] = {
            table: {key: canonical(entity) for key, entity in keyed(getattr(db, table))}
            for table in type(db).model_fields
        }
    return found


def fresh_vpn_default() -> None:
    """Put telecom's VPN default back as a fresh process has it (`break_vpn` changes the class's own object)."""
    try:
        from tau2.domains.telecom.user_data_model import PerformanceLevel
        from tau2.domains.telecom.user_tools import TelecomUserTools
    except ImportError:
        return
    TelecomUserTools.default_vpn_details.server_performance = PerformanceLevel.EXCELLENT


class Domain:
    """One domain of tau2-bench: its environment constructor, its tasks, and a base environment reused (and put
    back) between runs of tasks that have no initial state of their own."""

    def __init__(self, name: str) -> None:
        module = importlib.import_module(f"tau2.domains.{name}.environment")
        self.name = name
        self.get_environment = module.get_environment
        self.tasks = {task.id: task for task in module.get_tasks(None)}
        fresh_vpn_default()
        self.env = self.get_environment()
        self.base = dump(self.env)
        self.pristine = {
            side: copy.deepcopy(kit.db) for side, kit in toolkits(self.env).items() if kit is not None
        }

    def describe(self) -> dict[str, Any]:
        tools: dict[str, dict[str, bool]] = {}
        for side, kit in (("assistant", self.env.tools), ("user", self.env.user_tools)):
            if kit is not None:
                tools[side] = {name: bool(kit.tool_mutates_state(name)) for name in kit.get_tools()}
        digests = {
            side: None
            if tables is None
            else {
                table: {key: hashlib.sha256(text.encode()).hexdigest() for key, text in entities.items()}
                for table, entities in tables.items()
            }
            for side, tables in self.base.items()
        }
        return {"tools": tools, "tasks": list(self.tasks), "base": digests}

    def fresh(self, task_id: str | None) -> tuple[Any, bool]:
        """An environment at the task's initial state, set as the evaluator sets it; and whether it is the reused
        base environment (to be put back after the run)."""
        task = self.tasks[task_id] if task_id is not None else None
        state = task.initial_state if task is not None else None
        fresh_vpn_default()
        if state is None and self.name != "mock":
            return self.env, True
        env = self.get_environment()
        if state is not None:
            env.set_state(
                initialization_data=state.initialization_data,
                initialization_actions=state.initialization_actions,
                message_history=list(state.message_history or []),
            )
        return env, False

    def run(self, task_id: str | None, calls: list[list[Any]]) -> dict[str, Any]:
        from tau2.data_model.message import ToolCall

        env, reused = self.fresh(task_id)
        results = []
        for index, (requestor, name, arguments) in enumerate(calls):
            call = ToolCall(id=f"call_{index}", name=name, arguments=arguments, requestor=requestor)
            message = env.get_response(call)
            results.append([bool(message.error), message.content])
        now = dump(env)
        changed: dict[str, Any] = {}
        shared = env.user_tools is not None and env.user_tools.db is env.tools.db
        for side in SIDES:
            current = now[side]
            if current is None:
                continue
            base = self.base[side] or {}
            tables = {}
            for table, entities in current.items():
                before = base.get(table, {})
                diff: dict[str, str | None] = {k: v for k, v in entities.items() if before.get(k) != v}
                diff.update({k: None for k in before if k not in entities})
                if diff:
                    tables[table] = diff
            if set(current) != set(base):
                tables["(tables)"] = {"": json.dumps(sorted(current))}
            changed[side] = tables
        if reused:
            self.put_back(changed)
        return {"results": results, "changed": changed, "user_db_is_agent_db": shared}

    def put_back(self, changed: dict[str, Any]) -> None:
        """Put the reused environment back to the base: each entity that differs, copied from a pristine copy."""
        for side, tables in changed.items():
            db, pristine = toolkits(self.env)[side].db, self.pristine[side]
            for table, keys in tables.items():
                if table == "(tables)":
                    raise RuntimeError("a tool added or removed a whole table; the base cannot be put back")
                mapping, original = getattr(db, table), getattr(pristine, table)
                for key in keys:
                    if key in original:
                        mapping[key] = copy.deepcopy(original[key])
                    else:
                        del mapping[key]

    def evaluate(
        self, task_id: str, messages: list[dict[str, Any]], termination: str, without: list[str], solo: bool
    ) -> Any:
        from tau2.data_model.simulation import SimulationRun, TerminationReason
        from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

        task = self.tasks[task_id].model_copy(deep=True)
        criteria = task.evaluation_criteria
        if criteria is not None and without:
            criteria.reward_basis = [part for part in criteria.reward_basis if part.value not in without]
        history = list(task.initial_state.message_history or []) if task.initial_state else []
        simulation = SimulationRun(
            id=f"agent_env-{task_id}",
            task_id=task_id,
            start_time="2024-05-15T15:00:00",
            end_time="2024-05-15T15:00:00",
            duration=0.0,
            termination_reason=TerminationReason(termination),
            messages=history + [message_of(item) for item in messages],
        )
        fresh_vpn_default()
        try:
            info = evaluate_simulation(
                simulation, task, EvaluationType.ALL, solo_mode=solo, domain=self.name, strict_replay=True
            )
        except Exception as error:
            return {"error": f"{type(error).__name__}: {error}"}
        parts = {
            getattr(key, "value", str(key)): value for key, value in (info.reward_breakdown or {}).items()
        }
        db_check = info.db_check.db_reward if info.db_check is not None else None
        return {"reward": info.reward, "parts": parts, "db_check": db_check}

    def orchestrate(self, request: dict[str, Any]) -> Any:
        from tau2.agent.base_agent import HalfDuplexAgent
        from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage
        from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
        from tau2.orchestrator.orchestrator import Orchestrator
        from tau2.user.user_simulator_base import HalfDuplexUser

        class ScriptRanOut(Exception):
            pass

        agent_script = list(request["agent"])
        user_script = list(request["user"])

        class ReplayAgent(HalfDuplexAgent):  # says the recorded replies, in order, whatever it reads
            def get_init_state(self, message_history: Any = None) -> Any:
                return None

            def generate_next_message(self, message: Any, state: Any) -> Any:
                if not agent_script:
                    raise ScriptRanOut(
                        "tau2-bench's orchestrator asked the agent for a reply the episode never had"
                    )
                item = agent_script.pop(0)
                calls = [
                    ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"])
                    for c in item.get("tool_calls") or []
                ]
                return AssistantMessage(
                    role="assistant", content=item.get("content") or None, tool_calls=calls or None
                ), state

            def set_seed(self, seed: int) -> None:
                pass

        class ReplayUser(HalfDuplexUser):  # says the recorded user's words, in order
            def get_init_state(self, message_history: Any = None) -> Any:
                return None

            def generate_next_message(self, message: Any, state: Any) -> Any:
                if not user_script:
                    raise ScriptRanOut(
                        "tau2-bench's orchestrator asked the user for an answer the episode never had"
                    )
                return UserMessage(role="user", content=user_script.pop(0)), state

            def set_seed(self, seed: int) -> None:
                pass

        task = self.tasks[request["task"]].model_copy(deep=True)
        without = request.get("without") or []
        if task.evaluation_criteria is not None and without:
            task.evaluation_criteria.reward_basis = [
                part for part in task.evaluation_criteria.reward_basis if part.value not in without
            ]
        fresh_vpn_default()
        env = self.get_environment()
        orchestrator = Orchestrator(
            domain=self.name,
            agent=ReplayAgent(tools=env.get_tools(), domain_policy=env.get_policy()),
            user=ReplayUser(),
            environment=env,
            task=task,
            max_steps=request["max_steps"],
            max_errors=request["max_errors"],
        )
        try:
            simulation = orchestrator.run()
        except ScriptRanOut as error:
            return {"error": str(error), "steps": orchestrator.step_count}
        history = task.initial_state.message_history or [] if task.initial_state is not None else []
        messages = simulation.messages[len(history) :]  # the episode's own, after the conversation before it
        tools = [
            [message.content, bool(message.error)] for message in messages if isinstance(message, ToolMessage)
        ]
        users = [message.content for message in messages if isinstance(message, UserMessage)]
        played = {
            "termination": getattr(
                simulation.termination_reason, "value", str(simulation.termination_reason)
            ),
            "steps": orchestrator.step_count,
            "tools": tools,
            "users": users,
            "left": {"agent": len(agent_script), "user": len(user_script)},
        }
        try:
            info = evaluate_simulation(
                simulation, task, EvaluationType.ALL, solo_mode=False, domain=self.name, strict_replay=True
            )
        except Exception as error:  # its evaluator raises on an assertion about a task never created
            return {**played, "evaluate_error": f"{type(error).__name__}: {error}"}
        parts = {
            getattr(key, "value", str(key)): value for key, value in (info.reward_breakdown or {}).items()
        }
        return {**played, "reward": info.reward, "parts": parts}

    def prompts(self, stop_function: str) -> Any:
        from tau2.agent.llm_agent import LLMAgent, LLMSoloAgent
        from tau2.user.user_simulator import UserSimulator

        fresh_vpn_default()
        env = self.get_environment()
        agent = LLMAgent(tools=env.get_tools(), domain_policy=env.get_policy(), llm="none")
        try:
            user_tools = env.get_user_tools() or None
        except Exception:
            user_tools = None
        users = {
            task_id: UserSimulator(
                llm="none", instructions=str(task.user_scenario), tools=user_tools
            ).system_prompt
            for task_id, task in self.tasks.items()
        }
        solo: dict[str, str] = {}
        if (
            self.name == "telecom"
        ):  # its solo mode: LLMSoloAgent's prompt, its stop tool named as agent_env's is
            policy = self.get_environment(solo_mode=True).get_policy()

            class Solo(LLMSoloAgent):
                STOP_FUNCTION_NAME = stop_function

            for task_id, task in self.tasks.items():
                if task.ticket:
                    soloist = Solo.__new__(Solo)  # its system_prompt reads only these (and the class's names)
                    soloist.domain_policy, soloist.task = policy, task
                    solo[task_id] = soloist.system_prompt
        return {"agent": agent.system_prompt, "users": users, "solo": solo}


def message_of(item: dict[str, Any]) -> Any:
    """A tau2-bench message from its JSON form."""
    from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage

    if item["role"] == "tool":
        return ToolMessage(
            id=item["id"],
            role="tool",
            content=item["content"],
            requestor=item["requestor"],
            error=item["error"],
        )
    calls = [ToolCall(**call) for call in item.get("tool_calls") or []] or None
    kind = AssistantMessage if item["role"] == "assistant" else UserMessage
    return kind(role=item["role"], content=item.get("content"), tool_calls=calls)


def installed() -> dict[str, Any]:
    """What tau2 this is: its version, and the commit it was installed from where pip recorded one."""
    try:
        distribution = importlib.metadata.distribution("tau2")
    except importlib.metadata.PackageNotFoundError:
        return {"version": None, "commit": None, "url": None}
    direct = json.loads(distribution.read_text("direct_url.json") or "{}")
    return {
        "version": distribution.version,
        "commit": (direct.get("vcs_info") or {}).get("commit_id"),
        "url": direct.get("url"),
    }


def refuse_llm_judging() -> None:
    """No NL assertion is judged here: a request that would need an LLM fails instead of calling one."""
    from tau2.evaluator.evaluator_nl_assertions import NLAssertionsEvaluator

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "an NL assertion would be judged by an LLM here; the harness leaves NL_ASSERTION out"
        )

    NLAssertionsEvaluator.evaluate_nl_assertions = classmethod(refuse)


def main() -> None:
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything tau2-bench prints goes to stderr, never into the answers
    sys.stdout = sys.stderr
    try:
        from loguru import logger

        logger.remove()
        logger.add(sys.stderr, level="ERROR")
        import tau2.domains  # noqa: F401  (PyPI's unrelated `tau2` has no domains)
        from tau2.registry import registry  # noqa: F401  (what evaluate_simulation needs)

        refuse_llm_judging()
        logger.remove()
        logger.add(sys.stderr, level="ERROR")
    except Exception as error:
        answers.write(
            json.dumps({"fatal": f"{type(error).__name__}: {error}", "installed": installed()}) + "\n"
        )
        answers.flush()
        return
    answers.write(json.dumps({"ready": True, "installed": installed()}) + "\n")
    answers.flush()
    domains: dict[str, Domain] = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            domain = domains.get(request["domain"])
            if domain is None:
                domain = domains[request["domain"]] = Domain(request["domain"])
            if request["op"] == "init":
                answer = domain.describe()
            elif request["op"] == "run":
                answer = domain.run(request.get("task"), request["calls"])
            elif request["op"] == "orchestrate":
                answer = domain.orchestrate(request)
            elif request["op"] == "prompts":
                answer = domain.prompts(request.get("stop_function", "done"))
            else:
                answer = domain.evaluate(
                    request["task"],
                    request["messages"],
                    request["termination"],
                    request.get("without") or [],
                    bool(request.get("solo")),
                )
        except Exception as error:
            answer = {"fatal": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
