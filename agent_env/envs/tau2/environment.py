"""τ²-bench as an `Environment`: a domain's tools on a copy-on-write database, a simulated user the agent serves,
and the reward as tau2-bench's evaluator computes it.

A domain (`airline.py`, `retail.py`, `mock.py`, `telecom.py`) subclasses `Tau2Environment`, names its data and
database model, and writes its tools as `@tool` methods that read `self.db` and change it only through `Table.edit`
and `Table.insert`. A domain whose user has tools of its own names a `UserSide` too. Everything else is here: the
rows, the episode's start from the task's initial state, the record of calls and of the conversation, the limits,
and the reward (`scoring.py`). Its hooks, each a no-op or the common case by default: `files` (which files hold the
data), `policy` (the agent's policy), `sync` (the two sides' databases linked after every step, as telecom's are),
`UserSide.cues` (what a scripted user makes when asked); and `solo_environment`, a domain's solo mode.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from agent_env.environment import Environment
from agent_env.envs.tau2.judge import Judge, JudgeSetting, judge_from
from agent_env.envs.tau2.scoring import score
from agent_env.envs.tau2.store import Store
from agent_env.envs.tau2.tasks import Domain, DomainFiles, EnvCall, HistoryMessage, Task, load_domain
from agent_env.envs.tau2.trajectory import SCORED, Call, Termination
from agent_env.errors import ToolDefinitionError, ToolError, UserEndpointError
from agent_env.tools import END_TURN, Tool, ToolSet, tool
from agent_env.users import (
    ASIDE,
    USER_CHANNEL,
    ChatMessage,
    Scenario,
    ScriptedUser,
    User,
    UserAction,
    UserChat,
    UserSetting,
    user_from,
)

SYSTEM_PROMPT = """<instructions>
You are a customer service agent. Help the user as the policy below allows, and never beyond it.
Each turn, do one of two things: send the user a message, or make tool calls; never both in one turn.
Follow the policy in everything you do, and send valid JSON in every tool call.
</instructions>
<policy>
{policy}
</policy>"""
"""The agent's system prompt, around the domain's policy, as tau2-bench's runs frame it."""

SOLO_SYSTEM_PROMPT = """<instructions>
You are a customer service agent working a support ticket, given below it, as the policy below allows.
There is no user to talk to: work the ticket by calling tools only, planning the calls it needs.
Once you consider the ticket solved, call `{stop}` alone, with no other call in the same turn.
Follow the policy in everything you do, and send valid JSON in every tool call.
</instructions>
<policy>
{policy}
</policy>"""
"""The agent's system prompt in solo mode (no user; the ticket is its first user turn), as tau2-bench's solo runs
frame it."""

DEFAULT_MAX_STEPS = 200
DEFAULT_MAX_ERRORS = 10
TRANSFER_TOOL = "transfer_to_human_agents"


class UserSide:
    """The user's own tools, and the helpers tasks call on the user's side, in a domain whose user has a database of
    its own (the mock domain's inbox, telecom's phone). `@tool` methods are what the simulated user may call."""

    tools: ClassVar[ToolSet]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.tools = ToolSet.collect(cls)

    def __init__(self, db: Store) -> None:
        self.db = db

    @classmethod
    def cues(cls, name: str, arguments: Mapping[str, Any]) -> tuple[tuple[str, ...], ...] | None:
        """The words by which an agent's message asks the user to make this call of its own tools
        (`agent_env.users.UserAction.cues`), so that a scripted user makes a task's user-side reference calls when
        asked; None (the default) for a call a scripted user never makes."""
        return None


class Tau2Environment(UserChat, Environment):
    """One τ²-bench domain, one task per episode, with a simulated user on the other side.

    Args:
        data_dir: A folder holding the domain's files (`<domain>/<file>`, as tau2-bench's data/tau2/domains);
            default `$AGENT_ENV_TAU2_DATA`, else downloaded at the pinned commit into the cache (see `data`).
        user: Who plays the customer: an `agent_env.users.User`, "scripted" (the default: no model), or an
            `LLMUser`'s settings as a mapping (`{"base_url": ..., "model": ..., "api_key_env": ...}`).
        judge: The endpoint that judges natural-language assertions, as a mapping of its settings or a `Judge`;
            None (the default) judges none: a reward that needs them leaves them out and says so, and one with no
            other part to measure is not scored.
        max_steps: The most steps (each call and its answer, each message and its reply) before the episode ends
            unscored (0), as tau2-bench's `max_steps`.
        max_errors: The most calls that fail before the episode ends unscored (0), as tau2-bench's `max_errors`.
    """

    domain: ClassVar[str]
    base_model: ClassVar[type[BaseModel]]
    store: ClassVar[type[Store]] = Store
    user_side: ClassVar[type[UserSide] | None] = None
    user_base_model: ClassVar[type[BaseModel] | None] = None
    user_store: ClassVar[type[Store]] = Store
    files: ClassVar[DomainFiles] = DomainFiles()
    solo: ClassVar[bool] = False
    """τ²-bench's solo mode: no user; the agent holds the user's tools beside its own (see `solo_environment`)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        user: UserSetting = None,
        judge: JudgeSetting = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_errors: int = DEFAULT_MAX_ERRORS,
    ) -> None:
        if max_steps < 1 or max_errors < 1:
            raise ValueError(f"max_steps and max_errors must be at least 1; got {max_steps} and {max_errors}")
        self.data: Domain = load_domain(
            self.domain, self.base_model, self.user_base_model, data_dir, files=self.files
        )
        self.user: User = user_from(user)
        self.judge: Judge | None = judge_from(judge)
        self.max_steps, self.max_errors = max_steps, max_errors
        self.task: Task | None = None
        self.db = self.store(self.data.base)
        self.user_db: Store | None = None
        self.calls: list[Call] = []
        self.transcript: list[tuple[str, str]] = []
        self.steps = self.errors = 0
        self.termination: Termination | None = None
        self._breakdown: dict[str, Any] | None = None

    # Rows and the start of an episode.

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The split's tasks (`train`, `test`, `base`), each a row with its `task_id` and the `prompt` the agent
        starts from: the system prompt with the policy, any conversation before the task, and the user's turn.

        A scripted user's opening is known without a model, so it is in the row. Any other user (a model) opens
        when the episode starts: the row's user turn is empty, `reset` asks the user and returns its opening, and
        TRL (like `agent-env eval`) puts it in that turn, so each episode gets its own."""
        fixed = isinstance(self.user, ScriptedUser) or self.solo
        return [
            {
                "prompt": self.prompt(task, self.opening(task) if fixed else ""),
                "task_id": task.id,
            }
            for task in self.data.split(split)
        ]

    def prompt(self, task: Task, opening: str) -> list[dict[str, Any]]:
        """The messages an episode of `task` starts from, its user's opening last."""
        if self.solo:
            system = {
                "role": "system",
                "content": SOLO_SYSTEM_PROMPT.format(policy=self.policy(), stop=END_TURN),
            }
        else:
            system = {"role": "system", "content": SYSTEM_PROMPT.format(policy=self.policy())}
        history = [_chat_message(message) for message in task.history() if message.role != "system"]
        return [system, *history, {"role": "user", "content": opening}]

    def policy(self) -> str:
        """The policy the agent follows, as tau2-bench's environment gives it: the domain's policy file, or what a
        domain puts together from its documents (telecom)."""
        return self.data.policy

    def opening(self, task: Task) -> str:
        """The first user turn a row carries when it is known without a model: the scripted user's opening, or in
        solo mode the task's ticket (`ValueError` for a task without one, which cannot be played solo)."""
        if self.solo:
            if not task.ticket:
                raise ValueError(
                    f"task {task.id!r} of τ²-bench {self.data.name} has no ticket, so it cannot be played in solo "
                    "mode (its agent works from the ticket)"
                )
            return f"<ticket>\n{task.ticket}\n</ticket>"
        return self.user.opening(task.scenario())

    def scenario(self, task: Task) -> Scenario:
        """What the user is told, says and does: the task's scenario, with the reference calls on the user's side
        a scripted user makes when the agent asks for them (each with its cue words, `UserSide.cues`)."""
        scenario = task.scenario()
        criteria = task.evaluation_criteria
        if self.user_side is None or criteria is None or not criteria.actions:
            return scenario
        actions = tuple(
            UserAction(action.name, dict(action.arguments), cues)
            for action in criteria.actions
            if action.requestor == "user" and (cues := self.user_side.cues(action.name, action.arguments))
        )
        return dataclasses.replace(scenario, actions=actions) if actions else scenario

    def sync(self) -> None:
        """Bring what one side's database says about the other over to it, as tau2-bench's `sync_tools` does (in
        telecom, whether the line is active, may roam, has data left, and a bill to pay). Run where tau2-bench runs
        it: after every call of the episode (the agent's and the user's, failed ones too), after each of a task's
        initialization actions and assertions, and once the initial state is set. Nothing by default."""

    def reset(self, task_id: str | None = None, prompt: Any = None, **row: Any) -> str | None:
        """Start task `task_id` from its initial state. When the row's `prompt` (as TRL passes it) ends with the
        user's opening, that is the opening and nothing is returned; otherwise (no prompt, or an empty user turn)
        the user opens now and its opening is returned, for TRL to put in that turn.

        Raises:
            ValueError: No `task_id`.
            LookupError: No task has that id.
        """
        if task_id is None:
            raise ValueError(
                f"reset needs a task: pass task_id (one of τ²-bench {self.data.name}'s, e.g. "
                f"{next(iter(self.data.tasks))!r}); env.dataset(split) gives rows that carry it"
            )
        task = self.data.task(task_id)
        self.task, self.termination, self._breakdown = task, None, None
        self.steps, self.errors = 1, 0
        self.calls = self.initial_state(task)
        self.transcript = _transcript_history(task.history())
        given = _last_user_text(prompt)
        if self.solo:  # no user: the ticket is the first user turn
            self.chat = None
            return None if given is not None else self.opening(task)
        opening = self.start_chat(self.scenario(task), given, _chat_history(task.history()))
        self.transcript.append(("user", opening))
        return None if given is not None else opening

    def initial_state(self, task: Task) -> list[Call]:
        """Set fresh databases for `task` (`db`, `user_db`, which the tools act on) as tau2-bench sets its state:
        the initialization data merged in, the initialization actions run, then the calls of the conversation before
        the task replayed. Returns those calls, as the episode's record starts with them."""
        self.db = self.store(self.data.base)
        self.user_db = self.user_store(self.data.user_base) if self.data.user_base is not None else None
        state = task.initial_state
        if state is None:
            return []
        data = state.initialization_data
        if data is not None and data.agent_data:
            self.db.update(data.agent_data)
        if data is not None and data.user_data and self.user_db is not None:
            self.user_db.update(data.user_data)
        for action in state.initialization_actions or []:
            self.env_call(action)
        calls = []
        for message in task.history():
            for call in message.tool_calls or []:
                side = "user" if message.role == "user" else call.requestor
                calls.append(self.replay(call.name, call.arguments, side))
                self.sync()
        self.sync()
        return calls

    # What tasks call directly: their actions, replays, helpers and assertions.

    def replay(self, name: str, arguments: Mapping[str, Any], side: Literal["assistant", "user"]) -> Call:
        """Run a call as the live episode would (validated, then run), on the agent's side or the user's; its
        failure is recorded, not raised, as tau2-bench replays a call that fails."""
        tool = self._tool(name, side)
        if tool is None:
            return Call(name, dict(arguments), side, f"Error: Tool '{name}' not found.", True)
        try:
            text = tool_text(tool.function(self._owner(side), **tool.bind(arguments)))
        except Exception as error:
            return Call(name, dict(arguments), side, f"Error: {error}", True)
        return Call(name, dict(arguments), side, text, False)

    def env_call(self, call: EnvCall) -> Any:
        """A task's call of a domain function (a tool or a helper, such as an assertion), with the arguments as
        written; its errors are raised."""
        owner = self._owner(call.env_type)
        function = getattr(owner, call.func_name, None)
        if function is None or call.func_name.startswith("_"):
            raise LookupError(f"τ²-bench {self.data.name} has no {call.env_type} function {call.func_name!r}")
        tool = self._tool(call.func_name, call.env_type)
        if tool is not None:
            found = tool.function(owner, **tool.bind(call.arguments))
        else:
            found = function(**call.arguments)
        self.sync()
        return found

    def _owner(self, side: str) -> Any:
        if side == "user":
            if self.user_side is None or self.user_db is None:
                raise LookupError(f"the user of τ²-bench {self.data.name} has no functions of its own")
            return self.user_side(self.user_db)
        return self

    def _tool(self, name: str, side: str) -> Tool | None:
        tools = self.user_side.tools if side == "user" and self.user_side is not None else type(self).tools
        return tools.get(name)

    # The user's own tools.

    def user_tools(self) -> Sequence[Mapping[str, Any]]:
        return self.user_side.tools.published if self.user_side is not None else ()

    def run_user_tool(self, name: str, arguments: Any) -> str:
        """Run a call of the user's own, kept in the record and counted (a failure too) as the agent's are."""
        call = self.replay(name, arguments if isinstance(arguments, Mapping) else {}, "user")
        self.sync()
        self.calls.append(call)
        self.steps += 2
        self.errors += call.error
        return call.result

    # The episode's record, its limits and its end.

    def after_call(
        self, name: str, arguments: Any, result: str | None, error: Exception | None
    ) -> str | None:
        """Keep the call in the episode's record; end the episode when the user has ended the conversation, the
        agent transferred the user, or a limit was reached. An aside (`ASIDE`: the text of a reply that also
        called tools) is the agent's words in the record, not a step or a call of its own, as upstream counts it."""
        if name == ASIDE:
            if error is None and isinstance(arguments, Mapping):
                self.transcript.append(("assistant", str(arguments.get("text", ""))))
            return None
        self.sync()
        self.steps += 2
        text = result if result is not None else f"Error: {error}"
        if error is not None:
            self.errors += 1
        if name == USER_CHANNEL and self.chat is not None and error is None:
            said, answer = self.chat.messages[-2:]
            self.transcript += [("assistant", said.text), ("user", answer.text)]
        elif name != END_TURN:
            self.calls.append(Call(name, arguments, "assistant", text, error is not None))
            self.transcript += [("assistant", f"[calls {name}({_compact(arguments)})]"), ("tool", text)]
        ended = super().after_call(name, arguments, result, error)
        if ended is not None:
            self.termination = "user_error" if self.chat is not None and self.chat.failure else "user_stop"
            return ended
        if name == TRANSFER_TOOL and error is None:
            self.termination = "agent_stop"
            return "the agent transferred the user to a human agent"
        if self.errors >= self.max_errors:
            self.termination = "too_many_errors"
            return f"{self.errors} calls failed, the most an episode allows (max_errors={self.max_errors})"
        if self.steps >= self.max_steps:
            self.termination = "max_steps"
            return f"the episode took {self.steps} steps, the most it allows (max_steps={self.max_steps})"
        if name == END_TURN:
            self.termination = "agent_stop"
        return None

    # The reward.

    def reward(self) -> float:
        """The episode's reward, as tau2-bench's evaluator computes it for the task's reward basis (see
        `reward_breakdown` for each part and why).

        Raises:
            UserEndpointError: The user's endpoint failed: the episode cannot be scored.
            JudgeEndpointError: The judge's endpoint failed, or the reward is nothing but assertions to judge and no
                judge was given: the episode cannot be scored.
        """
        if self.task is None:
            raise ValueError("no episode to score: reset(task_id=...) first")
        if (
            self.chat is not None and self.chat.failure
        ):  # the session refuses this already; said for direct callers
            raise UserEndpointError(self.chat.failure)
        self._breakdown = score(self, self.termination or "agent_stop")
        reward: float = self._breakdown["reward"]
        return reward

    def reward_breakdown(self) -> dict[str, Any] | None:
        return self._breakdown


def solo_environment(environment: type[Tau2Environment], name: str) -> type[Tau2Environment]:
    """`environment` in τ²-bench's solo mode, its ablation without a user: the agent works from the task's ticket
    and holds the user's tools beside its own (each run on the user's side of the episode), and there is no one to
    message (`message_user` is hidden and refuses). The agent ends the episode with `end_turn` (tau2-bench's solo
    agent calls `done`), or a limit does; reading the reward ends it too. A class of its own, since it publishes
    other tools: every provider lists a class's tools before any episode starts.

    Raises:
        ToolDefinitionError: The domain's user has no tools, or one of them has the name of one of the agent's
            (tau2-bench refuses the overlap too).
    """
    side = environment.user_side
    if side is None or not side.tools:
        raise ToolDefinitionError(f"{environment.__name__} has no user tools, so it has no solo mode")
    overlap = sorted(set(side.tools) & set(environment.tools))
    if overlap:
        raise ToolDefinitionError(f"{environment.__name__}'s user tools have the names of its own: {overlap}")
    namespace: dict[str, Any] = {
        "__module__": environment.__module__,
        "__qualname__": name,
        "__doc__": f"{environment.__doc__}\n\nIn τ²-bench's solo mode (`solo_environment`).",
        "solo": True,
        "message_user": _no_user,
    }
    for tool_name, user_tool in side.tools.items():
        namespace[tool_name] = _on_user_side(user_tool.function)
    return type(name, (environment,), namespace)


@tool(name=USER_CHANNEL, hidden=True)
def _no_user(self: Tau2Environment, message: str) -> str:
    """There is no user in solo mode.

    Args:
        message: What would have been said.
    """
    raise ToolError("there is no user in solo mode: work the ticket with your tools, then call end_turn")


def _on_user_side(function: Callable[..., Any]) -> Callable[..., Any]:
    """One of the user's tools as one of the agent's: the same schema and description, run on the user's side."""

    @functools.wraps(function)
    def call(self: Tau2Environment, **arguments: Any) -> Any:
        return function(self._owner("user"), **arguments)

    return call


def tool_text(value: Any) -> str:
    """A tool's result as tau2-bench writes it for the agent: text as it is; models, lists and mappings as JSON,
    each model as its dump and each number or bool inside a list or mapping as its text."""
    if isinstance(value, str):
        return value
    return json.dumps(_jsonable(value), default=str)


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, bool | int | float):
        return str(value)
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    return value


def _chat_message(message: HistoryMessage) -> dict[str, Any]:
    """A message of the conversation before the task, as a chat message (tool arguments as JSON text)."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.id or "", "content": message.content or ""}
    found: dict[str, Any] = {"role": message.role, "content": message.content or ""}
    if message.tool_calls:
        found["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
    return found


def _chat_history(history: Sequence[HistoryMessage]) -> list[ChatMessage]:
    """What the user saw of the conversation before the task: its text messages."""
    return [
        ChatMessage("agent" if message.role == "assistant" else "user", message.content)
        for message in history
        if message.role in ("assistant", "user") and message.content and not message.tool_calls
    ]


def _transcript_history(history: Sequence[HistoryMessage]) -> list[tuple[str, str]]:
    """The conversation before the task as the judge reads it: (role, text) lines, a call as `[calls name(args)]`."""
    lines: list[tuple[str, str]] = []
    for message in history:
        if message.tool_calls:
            lines += [
                (message.role, f"[calls {call.name}({_compact(call.arguments)})]")
                for call in message.tool_calls
            ]
        elif message.role != "system":
            lines.append((message.role, message.content or ""))
    return lines


def _last_user_text(prompt: Any) -> str | None:
    """The text of the last user message of a row's prompt, when it has one."""
    if not isinstance(prompt, list) or not prompt:
        return None
    last = prompt[-1]
    if not isinstance(last, Mapping) or last.get("role") != "user":
        return None
    content = last.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return content if isinstance(content, str) and content else None


def _compact(arguments: Any) -> str:
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)


__all__ = [
    "SCORED",
    "SOLO_SYSTEM_PROMPT",
    "SYSTEM_PROMPT",
    "Call",
    "Tau2Environment",
    "ToolError",
    "UserSide",
    "solo_environment",
    "tool_text",
]
