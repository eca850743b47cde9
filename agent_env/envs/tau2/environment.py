"""τ²-bench as an `Environment`: a domain's tools on a copy-on-write database, a simulated user the agent serves,
and the reward as tau2-bench's evaluator computes it.

A domain (`airline.py`, `retail.py`, `mock.py`, `telecom.py`) subclasses `Tau2Environment`, names its data and
database model, and writes its tools as `@tool` methods that read `self.db` and change it only through `Table.edit`
and `Table.insert`. A domain whose user has tools of its own names a `UserSide` too. Everything else is here, the one
place a domain plugs into: the rows and the official prompts (`prompts`), the episode's start from the task's initial
state, each tool call run as one transaction (a call that fails changes nothing), the record of calls and of the
conversation, the steps and limits counted as tau2-bench's orchestrator counts them, and the reward (`scoring.py`).
Its hooks, each a no-op or the common case by default: `files` (which files hold the data), `policy` (the agent's
policy), `sync` (the two sides' databases linked after every call and step, as telecom's are), `UserSide.cues` (what
a scripted user makes when asked); and `solo_environment`, a domain's solo mode.

How an episode runs follows tau2-bench's half-duplex `Orchestrator` (src/tau2/orchestrator/orchestrator.py at the
pinned commit): every message is one step (the user's, the agent's, and the environment's answer to all the calls of
one message: `step`, lines 835-895); the limits are checked after each step that does not wait for the environment
(`_check_termination`, lines 734-750: `max_steps` first, then `max_errors`, each overriding an ending the step
already had); a failed call is one error (`_execute_tool_calls`, lines 313-329); the user's ending markers end it as
the user stopping (lines 841-843). The user's own calls count as the agent's do: each message of them one step, the
environment's answer to it another, each failed call an error (the same `_execute_tool_calls`); the user's turn ends
with its words, one more step. A transfer (`transfer_to_human_agents`) only answers: the agent may go on, and the
user, once told, writes its transfer marker. Under `agent-env eval` the environment learns where each of the
agent's replies begins and how many calls it holds (`agent_env.users.ASIDE`), so a reply's calls are one message;
under TRL, which never says, each call is a message of its own.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from agent_env.environment import Environment
from agent_env.envs.tau2.judge import Judge, JudgeSetting, judge_from
from agent_env.envs.tau2.prompts import Prompts, load_prompts
from agent_env.envs.tau2.scoring import score
from agent_env.envs.tau2.store import Store
from agent_env.envs.tau2.tasks import Domain, DomainFiles, EnvCall, HistoryMessage, Task, load_domain
from agent_env.envs.tau2.trajectory import SCORED, Call, Termination
from agent_env.errors import DatasetRowsError, ToolDefinitionError, ToolError, UserEndpointError
from agent_env.tools import END_TURN, Tool, ToolSet, tool
from agent_env.users import (
    ASIDE,
    STOP,
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

DEFAULT_MAX_STEPS = 200
DEFAULT_MAX_ERRORS = 10
TRANSFER_TOOL = "transfer_to_human_agents"
REWARDS = ("official", "checks")
RewardSetting = Literal["official", "checks"]
"""What an episode's `reward()` returns: τ²-bench's reward (`official`, the default), or the fraction of τ²-bench's
checks met (`checks`: partial credit for training, not the benchmark's metric; see `scoring`)."""
T = TypeVar("T")


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
        data_dir: A folder holding the domain's files (`<domain>/<file>`, as tau2-bench's data/tau2/domains) and
            the prompts' (`agent/llm_agent.py`, `user_simulator/<file>` beside them); default `$AGENT_ENV_TAU2_DATA`,
            else downloaded at the pinned commit into the cache (see `data`).
        user: Who plays the customer: an `agent_env.users.User`, "scripted" (the default: no model), or an
            `LLMUser`'s settings as a mapping (`{"base_url": ..., "model": ..., "api_key_env": ...}`).
        judge: The endpoint that judges natural-language assertions, as a mapping of its settings or a `Judge`;
            None (the default) judges none: a reward that needs them leaves them out and says so, and one with no
            other part to measure is not scored.
        max_steps: The most steps (each message: the user's, the agent's, the environment's answer to one message's
            calls) before the episode ends unscored (0), as tau2-bench's `max_steps`.
        max_errors: The most calls that fail before the episode ends unscored (0), as tau2-bench's `max_errors`.
        reward: What `reward()` returns: "official" (τ²-bench's reward, the default) or "checks" (the fraction of
            τ²-bench's checks met, for training: not the benchmark's metric). The breakdown gives both, and
            `agent-env eval` always reports the official one.
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
    evaluation_split: ClassVar[str | None] = "base"
    """What `agent-env eval` plays untold: tau2-bench's default split for every domain (its `--task-split-name`,
    `src/tau2/cli.py`), and the leaderboard's."""
    _undo_failures: ClassVar[bool] = True
    """Whether what a failed call changed is undone: always, but where bench/tau2_upstream.py holds the tools' own
    behaviour to tau2-bench's, which keeps it."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if _run_in_transactions(cls):
            cls.tools = ToolSet.collect(cls)

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        user: UserSetting = None,
        judge: JudgeSetting = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_errors: int = DEFAULT_MAX_ERRORS,
        reward: RewardSetting = "official",
    ) -> None:
        if max_steps < 1 or max_errors < 1:
            raise ValueError(f"max_steps and max_errors must be at least 1; got {max_steps} and {max_errors}")
        if reward not in REWARDS:
            raise ValueError(
                f"reward={reward!r} names no reward: 'official' (τ²-bench's, the default) or 'checks' (the fraction "
                "of τ²-bench's checks met, for training)"
            )
        self.data: Domain = load_domain(
            self.domain, self.base_model, self.user_base_model, data_dir, files=self.files
        )
        self.prompts: Prompts = load_prompts(data_dir)
        self.user: User = user_from(user)
        self.judge: Judge | None = judge_from(judge)
        self.max_steps, self.max_errors = max_steps, max_errors
        self.reward_setting: RewardSetting = reward
        self.task: Task | None = None
        self.db = self.store(self.data.base)
        self.user_db: Store | None = None
        self.calls: list[Call] = []
        self.transcript: list[tuple[str, str]] = []
        self.steps = self.errors = 0
        self.termination: Termination | None = None
        self._breakdown: dict[str, Any] | None = None
        self._reply: int | None = None  # how many calls of the reply eval announced are still to come
        self._asked_user = False  # message_user's call counted the agent's message and asked the user
        self._unanswered: str | None = None  # why the episode ended before the user could answer
        self._user_calls = 0  # the user's own calls while it answers

    # Rows and the start of an episode.

    def dataset_rows(self, split: str) -> list[dict[str, Any]]:
        """The split's tasks (`train`, `test`, `base`), each a row with its `task_id` and the `prompt` the agent
        starts from: the system prompt with the policy, any conversation before the task, and the user's turn.

        A scripted user's opening is known without a model, so it is in the row. Any other user (a model) opens
        when the episode starts: the row's user turn is empty, `reset` asks the user and returns its opening, and
        TRL (like `agent-env eval`) puts it in that turn, so each episode gets its own. In solo mode there is no
        user and no user turn: the system prompt holds the task's ticket."""
        fixed = self.user if isinstance(self.user, ScriptedUser) and not self.solo else None
        system = None if self.solo else self.system_prompt()
        return [
            {
                "prompt": self.prompt(
                    task, fixed.opening(task.scenario()) if fixed is not None else "", system
                ),
                "task_id": task.id,
            }
            for task in self.data.split(split)
        ]

    def system_prompt(self, task: Task | None = None) -> str:
        """What the agent is told: τ²-bench's own instruction around the domain's policy, as its `LLMAgent` frames
        them; in solo mode its solo instruction around the policy and `task`'s ticket, as its `LLMSoloAgent` frames
        them, naming `end_turn` as the tool that ends the episode (`prompts`).

        Raises:
            ValueError: In solo mode, no task, or a task without a ticket (which cannot be played solo).
        """
        if not self.solo:
            return self.prompts.agent(self.policy())
        if task is None or not task.ticket:
            raise ValueError(
                f"{'no task' if task is None else f'task {task.id!r}'} of τ²-bench {self.data.name} has no ticket, "
                "so it cannot be played in solo mode (its agent works from the ticket)"
            )
        return self.prompts.solo(self.policy(), task.ticket, stop_function=END_TURN, stop_token=STOP)

    def prompt(self, task: Task, opening: str, system_prompt: str | None = None) -> list[dict[str, Any]]:
        """The messages an episode of `task` starts from, its user's opening last (none in solo mode)."""
        system = {"role": "system", "content": system_prompt or self.system_prompt(task)}
        history = [_chat_message(message) for message in task.history() if message.role != "system"]
        if self.solo:  # τ²-bench's solo agent is asked with its system prompt and the history alone
            return [system, *history]
        return [system, *history, {"role": "user", "content": opening}]

    def policy(self) -> str:
        """The policy the agent follows, as tau2-bench's environment gives it: the domain's policy file, or what a
        domain puts together from its documents (telecom)."""
        return self.data.policy

    def reset(self, task_id: str | None = None, prompt: Any = None, **row: Any) -> str | None:
        """Start task `task_id` from its initial state. When the row's `prompt` (as TRL passes it) ends with the
        user's opening, that is the opening and nothing is returned; otherwise (no prompt, or an empty user turn)
        the user opens now and its opening is returned, for TRL to put in that turn.

        Raises:
            ValueError: No `task_id`.
            LookupError: No task has that id.
            DatasetRowsError: The row's user turn is the scripted user's opening, but a model plays the user here.
        """
        if task_id is None:
            raise ValueError(
                f"reset needs a task: pass task_id (one of τ²-bench {self.data.name}'s, e.g. "
                f"{next(iter(self.data.tasks))!r}); env.dataset(split) gives rows that carry it"
            )
        task = self.data.task(task_id)
        given = _last_user_text(prompt)
        scripted = task.scenario().script
        if (
            given is not None
            and not isinstance(self.user, ScriptedUser)
            and scripted
            and given == scripted[0]
        ):
            raise DatasetRowsError(
                f"the row of task {task.id} opens with the scripted user's words (its rows were built with the "
                f"scripted user), but {type(self.user).__name__} plays the user here, and would answer a "
                "conversation it never opened. Build the rows with this environment (env.dataset(split), or "
                "agent-env eval --split, with the same user=...), whose user turn is left empty for the user's own "
                "opening, or leave the rows' last user turn empty"
            )
        self.task, self.termination, self._breakdown = task, None, None
        # The first step is the user's opening; in solo mode the agent's first message is made as the episode
        # starts, uncounted (orchestrator.py, lines 636-650), so its calls' answer is step 1.
        self.steps, self.errors = (-1 if self.solo else 1), 0
        self._reply, self._asked_user, self._unanswered, self._user_calls = None, False, None, 0
        self.calls = self.initial_state(task)
        self.transcript = _transcript_history(task.history())
        if self.solo:  # no user: the agent's system prompt holds the ticket
            self.system_prompt(task)  # refuses a task without one
            self.chat = None
            return None
        opening = self.start_chat(self.scenario(task), given, _chat_history(task.history()))
        if self.chat is not None:  # its own calls before it wrote, as in any reply: a step each way a round
            rounds = sum(1 for message in self.chat.messages[-1].tool_messages if message.get("tool_calls"))
            self._stepped(2 * (rounds or self._user_calls))
            self._user_calls = 0
        self.transcript.append(("user", opening))
        return None if given is not None else opening

    def scenario(self, task: Task) -> Scenario:
        """What the user is told, says and does: the task's scenario, with the system prompt τ²-bench's user
        simulator is told (`prompts`: its guidelines, for a user with tools when this domain's user has any, around
        the task's scenario as upstream writes it), and the reference calls on the user's side a scripted user makes
        when the agent asks for them (each with its cue words, `UserSide.cues`)."""
        key = (id(self.prompts), self.data.name, task.id)
        found = _scenarios.get(key)
        if found is None:
            found = _scenarios[key] = replace(
                task.scenario(),
                prompt=self.prompts.user(task.user_scenario, self.user_side is not None),
                actions=self._user_actions(task),
            )
        return found

    def _user_actions(self, task: Task) -> tuple[UserAction, ...]:
        criteria = task.evaluation_criteria
        if self.user_side is None or criteria is None or not criteria.actions:
            return ()
        return tuple(
            UserAction(action.name, dict(action.arguments), cues)
            for action in criteria.actions
            if action.requestor == "user" and (cues := self.user_side.cues(action.name, action.arguments))
        )

    def sync(self) -> None:
        """Bring what one side's database says about the other over to it, as tau2-bench's `sync_tools` does (in
        telecom, whether the line is active, may roam, has data left, and a bill to pay). Run where tau2-bench runs
        it: after every call that succeeds, inside its transaction (`Environment.get_response`: a sync that fails
        fails the call), after every step of the episode (`Orchestrator.step`), after each of a task's
        initialization actions and assertions (`run_env_function_call`), and once the initial state is set
        (`set_state`). Nothing by default."""

    def initial_state(self, task: Task) -> list[Call]:
        """Set fresh databases for `task` (`db`, `user_db`, which the tools act on) as tau2-bench sets its state:
        the initialization data merged in, the initialization actions run, then the calls of the conversation before
        the task replayed. Returns those calls, as the episode's record starts with them."""
        self.db = self.store(self.data.base)
        self.user_db = self.user_store(self.data.user_base) if self.data.user_base is not None else None
        state = task.initial_state
        if state is None:
            self.sync()
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
        return calls

    # Each call, one transaction.

    def transaction(self, run: Callable[[], T]) -> T:
        """Run `run` as one transaction of the episode's databases: when it raises, everything it changed is undone
        (a failed call changes nothing, whatever it did before it failed), and a value a domain model refuses
        (pydantic's `ValidationError`) or a number the domain cannot compute with (`ArithmeticError`) is the
        model's error, a `ToolError` in tau2-bench's words (its environment gives the agent `Error: ` and the
        exception's text), never a failure of the tool. The two sides are linked (`sync`) once `run` succeeds,
        inside the transaction, as tau2-bench's `get_response` syncs inside its `try`: what the link brought over is
        undone with the rest should it fail. Every tool of a domain runs this way."""
        stores = [self.db] if self.user_db is None else [self.db, self.user_db]
        for store in stores:
            store.savepoint()
        try:
            result = run()
            self.sync()
        except (ValidationError, ArithmeticError) as error:
            self._close(stores, undo=self._undo_failures)
            raise ToolError(str(error) or type(error).__name__) from None
        except BaseException:
            self._close(stores, undo=self._undo_failures)
            raise
        self._close(stores, undo=False)
        return result

    @staticmethod
    def _close(stores: list[Store], *, undo: bool) -> None:
        for store in stores:
            if undo:
                store.undo()
            else:
                store.release()

    # What tasks call directly: their actions, replays, helpers and assertions.

    def replay(self, name: str, arguments: Mapping[str, Any], side: Literal["assistant", "user"]) -> Call:
        """Run a call as the live episode would (validated, then run, as one transaction), on the agent's side or
        the user's; its failure is recorded, not raised, as tau2-bench replays a call that fails."""
        tool = self._tool(name, side)
        if tool is None:
            return Call(name, dict(arguments), side, f"Error: Tool '{name}' not found.", True)
        owner = self._owner(side)
        try:
            if side == "user":
                text = tool_text(self.transaction(lambda: tool.function(owner, **tool.bind(arguments))))
            else:  # the agent's tools run in a transaction of their own
                text = tool_text(tool.function(owner, **tool.bind(arguments)))
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
        """Run a call of the user's own, kept in the record and counted (a failure too) as the agent's are. Arguments
        that are no JSON object (text that is not JSON, a list) run nothing: a failed call."""
        if isinstance(arguments, Mapping):
            call = self.replay(name, arguments, "user")
        else:
            said = (
                f"are not JSON: {arguments[:80]!r}" if isinstance(arguments, str) else "are not a JSON object"
            )
            call = Call(name, {}, "user", f"Error: Invalid arguments for tool '{name}': they {said}", True)
        self.calls.append(call)
        self._user_calls += 1
        self.errors += call.error
        return call.result

    # The episode's record, its steps and limits, and its end.

    def before_user_reply(self) -> str | None:
        """The agent's message to the user is one step, after which tau2-bench checks its limits before the user
        answers: the episode may end there, the user never asked."""
        self._asked_user = True
        self._unanswered = self._close_reply()
        if self._unanswered is None:
            self._stepped(1)
            self._unanswered = self._check()
        return self._unanswered

    def after_call(
        self, name: str, arguments: Any, result: str | None, error: Exception | None
    ) -> str | None:
        """Keep the call in the episode's record and count its steps and errors as tau2-bench's orchestrator does;
        end the episode when the user has ended the conversation or a limit is reached (see the module's docstring).

        A reply eval announced (`ASIDE`: its text, the agent's words in the record, and how many calls follow) is one
        message: its calls count one step with their answers, and the limits are checked once they have all been
        heard. Any other call is a message of its own (TRL's), checked at once."""
        if name == ASIDE:
            return self._announced(arguments) if error is None else None
        if name == USER_CHANNEL and self.solo:  # tau2-bench ends a solo episode whose agent writes text
            self.termination = "agent_error"
            return "the agent wrote to the user, and in solo mode there is none to write to"
        if name == USER_CHANNEL and self._asked_user:
            return self._user_answered(arguments, error)
        if name == END_TURN:
            ended = self._close_reply()
            if self.termination is None:
                self.termination = "agent_stop"
            return ended
        text = result if result is not None else f"Error: {error}"
        if error is not None:
            self.errors += 1
        self.calls.append(Call(name, arguments, "assistant", text, error is not None))
        self.transcript += [("assistant", f"[calls {name}({_compact(arguments)})]"), ("tool", text)]
        if name == TRANSFER_TOOL and error is None and self.chat is not None:
            self.chat.transferred = True  # the user, told by the agent's next message, writes its marker
        if self._reply is not None:
            self._reply -= 1
            return self._close_reply() if self._reply <= 0 else None
        self._stepped(2)  # a message of its own, and the environment's answer
        return self._check()

    def _announced(self, arguments: Any) -> str | None:
        """A reply with calls begins (eval's announcement): its text is the agent's words; the message is one step,
        its refused calls are errors, and the reply closes once its calls have been heard."""
        ended = self._close_reply()
        if ended is not None:
            return ended
        text, calls, refused = _announcement(arguments)
        if text:
            self.transcript.append(("assistant", text))
        self._stepped(1)
        self.errors += refused
        self._reply = calls
        return self._close_reply() if calls == 0 else None

    def _close_reply(self) -> str | None:
        """The environment's answer to an announced reply's calls: one step, then the limits."""
        if self._reply is None:
            return None
        self._reply = None
        self._stepped(1)
        return self._check()

    def _user_answered(self, arguments: Any, error: Exception | None) -> str | None:
        """The user's reply to the agent's message: a step per message it wrote (its own tool calls, each message of
        them with their answers, then its words), then its ending and the limits."""
        self._asked_user = False
        user_calls, self._user_calls = self._user_calls, 0
        chat = self.chat
        if self._unanswered is not None:  # the episode ended before the user could answer
            if chat is not None:
                self.transcript.append(("assistant", chat.messages[-1].text))
            return self._unanswered
        if chat is not None and chat.failure:
            self.termination = "user_error"
            return chat.failure
        if error is not None or chat is None:
            return None
        said, answer = chat.messages[-2:]
        rounds = sum(1 for message in answer.tool_messages if message.get("tool_calls")) or user_calls
        self._stepped(2 * rounds + 1)
        self.transcript += [("assistant", said.text), ("user", answer.text)]
        if chat.ended is not None:
            self.termination = "user_stop"
        limit = self._check()
        return limit or chat.ended

    def _stepped(self, steps: int) -> None:
        """Count `steps` more, then link the two sides, as tau2-bench's orchestrator syncs after every step (a no-op
        after a failed call: what it changed is undone, and the state before it was linked already)."""
        self.steps += steps
        self.sync()

    def _check(self) -> str | None:
        """tau2-bench's limits, checked as its orchestrator checks them after a step (steps first, then errors, each
        overriding the ending the step had); why the episode ended, or None."""
        said = None
        if self.steps >= self.max_steps:
            self.termination = "max_steps"
            said = f"the episode took {self.steps} steps, the most it allows (max_steps={self.max_steps})"
        if self.errors >= self.max_errors:
            self.termination = "too_many_errors"
            said = f"{self.errors} calls failed, the most an episode allows (max_errors={self.max_errors})"
        return said

    # The reward.

    def reward(self) -> float:
        """The episode's reward: τ²-bench's, as its evaluator computes it for the task's reward basis, or with
        `reward="checks"` the fraction of its checks met (see `reward_breakdown` for each part, each check and why).

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
        self._close_reply()
        found = score(self, self.termination or "agent_stop")
        official = found["reward"]
        found["official_reward"] = official
        if self.reward_setting == "checks":
            found["reward"] = found["checks_reward"]
            found["reward_note"] = (
                "the environment's reward is the fraction of τ²-bench's checks met (reward='checks'), for "
                "training: not the benchmark's metric, which is official_reward"
            )
        found["prompts_note"] = self.prompts.note(
            None if isinstance(self.user, ScriptedUser) else self.user_side is not None
        )
        self._breakdown = found
        reward: float = found["reward"]
        return reward

    def reward_breakdown(self) -> dict[str, Any] | None:
        return self._breakdown


_scenarios: dict[tuple[int, str, str], Scenario] = {}
"""Each task's scenario with its user's system prompt, made once per process."""


def _announcement(arguments: Any) -> tuple[str, int, int]:
    """An announced reply's text, how many calls follow, and how many were refused before reaching the environment."""
    found = arguments if isinstance(arguments, Mapping) else {}
    text, calls, refused = found.get("text", ""), found.get("calls", 0), found.get("refused", 0)
    return (
        text if isinstance(text, str) else "",
        calls if isinstance(calls, int) else 0,
        refused if isinstance(refused, int) else 0,
    )


def _run_in_transactions(cls: type[Tau2Environment]) -> bool:
    """Wrap each tool method `cls` defines itself so that it runs as one transaction (`Tau2Environment.transaction`);
    whether any was wrapped (the class's tools are then collected again, from the wrapped methods)."""
    wrapped = False
    for found in list(cls.tools.values()):
        function = found.function
        name = function.__name__
        if vars(cls).get(name) is not function or getattr(function, "__tau2_transaction__", False):
            continue
        if name in (USER_CHANNEL, END_TURN):
            continue
        setattr(cls, name, _transactional(function))
        wrapped = True
    return wrapped


def _transactional(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def run(self: Tau2Environment, *args: Any, **kwargs: Any) -> Any:
        return self.transaction(lambda: function(self, *args, **kwargs))

    run.__tau2_transaction__ = True  # type: ignore[attr-defined]
    return run


def solo_environment(environment: type[Tau2Environment], name: str) -> type[Tau2Environment]:
    """`environment` in τ²-bench's solo mode, its ablation without a user: the agent works from the task's ticket
    (in its system prompt, upstream's solo instruction's) and holds the user's tools beside its own (each run on the
    user's side of the episode, in the call's transaction), and there is no one to message (`message_user` is
    hidden and refuses). The agent ends the episode with `end_turn`, which its instruction names where upstream's
    names its solo agent's `done`, or a limit does; reading the reward ends it too. A class of its own, since it publishes
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


__all__ = ["SCORED", "Call", "Tau2Environment", "ToolError", "UserSide", "solo_environment", "tool_text"]
