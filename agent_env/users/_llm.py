"""A simulated user played by a model behind any OpenAI-compatible endpoint, configured apart from the agent's."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent_env._loop import on_background_loop, run_sync
from agent_env.errors import UserEndpointError
from agent_env.users._chat import GREETING, OUT_OF_SCOPE, STOP, TRANSFER, Chat, ChatMessage, Scenario
from agent_env.users._user import UserTool

if TYPE_CHECKING:
    from agent_env.llm import ChatClient, Endpoint, Sampling


GUIDELINES = f"""You are playing a customer who has contacted a company's customer service agent. Stay in character \
and follow the scenario below; the agent must never learn that you are simulated.

How to write:
- One message at a time, as a customer would write it: plain conversational text.
- Do exactly what the scenario says. What it does not tell you, you do not know: say so, never make it up.
- Give information only when the agent asks for it or when the conversation needs it; never recite the scenario,
  and put what it says in your own words.

How to end:
- Once your goal in the scenario is met, or the scenario says to stop, write {STOP}.
- Once the agent has transferred you to another agent or a human, write {TRANSFER}.
- If the scenario does not tell you enough to go on, write {OUT_OF_SCOPE}."""

TOOL_GUIDELINES = """
You have tools of your own, for what the agent asks you to do or check on your side:
- Call one only when the agent asked for it, or when you need its result to answer the agent.
- Ground what you tell the agent in what your tools return; never invent a result.
- The agent does not see your tool calls, only your messages. If a call fails, fix it and try again."""

MAX_TOOL_ROUNDS = 100
"""How many rounds of its own calls an `LLMUser` may make before it must write, by default (see `LLMUser`)."""


def system_prompt(scenario: Scenario, has_tools: bool) -> str:
    """What the user's model is told: the prompt its environment gives (`Scenario.prompt`: τ²-bench's own), else
    this room's guidelines, then the scenario (its persona first, when it has one)."""
    if scenario.prompt is not None:
        return scenario.prompt
    parts = [GUIDELINES + (TOOL_GUIDELINES if has_tools else "")]
    if scenario.persona:
        parts.append(f"<persona>\n{scenario.persona}\n</persona>")
    parts.append(f"<scenario>\n{scenario.instructions}\n</scenario>")
    return "\n\n".join(parts)


class LLMUser:
    """A user that a model plays, asked through `agent_env.llm.ChatClient` (bounded retries, every failed attempt
    counted in the chat's `faults`, the key read from a variable and never shown). Needs the `llm` extra.

    Picklable: it travels as its settings, and each process makes its own client on first use. A request that fails
    for good, or an answer with no text, raises `UserEndpointError`: the episode ends unscored, never with a reward
    the agent did not earn.

    Args:
        endpoint: Where the user's model is (`base_url`, `model`, `api_key_env`, timeout, retries): apart from the
            agent's. With no `model`, the one model the server lists.
        sampling: How it samples; τ²-bench's runs use temperature 0, the default here.
        max_tool_rounds: The most rounds of its own tool calls before it must write a message: a guard against a
            model that never writes, not a limit of the benchmark's. τ²-bench's user calls as many as it likes,
            bounded only by the episode's steps, so the default (100) lies past what an episode's default
            `max_steps` (200, two steps a round) allows: the episode's limit ends such a turn first.
    """

    def __init__(
        self,
        endpoint: Endpoint | None = None,
        sampling: Sampling | None = None,
        max_tool_rounds: int = MAX_TOOL_ROUNDS,
    ) -> None:
        from agent_env.llm import Endpoint, Sampling

        self.endpoint = endpoint or Endpoint()
        self.sampling = sampling or Sampling(temperature=0.0)
        self.max_tool_rounds = max_tool_rounds
        self._client: ChatClient | None = None
        self._model: str | None = self.endpoint.model

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> LLMUser:
        """A user from JSON settings, as a command line or a server's configuration gives them: the `Endpoint`
        fields (`base_url`, which is required, `model`, `api_key_env`, `timeout`, `max_retries`) and the `Sampling`
        ones (`temperature`, `top_p`, `max_tokens`, `seed`, `extra_body`), in one mapping.

        Raises:
            ValueError: A key that is neither, or no `base_url`.
        """
        endpoint, sampling = endpoint_settings(settings, "user", extra={"max_tool_rounds"})
        return cls(endpoint, sampling, max_tool_rounds=int(settings.get("max_tool_rounds", MAX_TOOL_ROUNDS)))

    def opening(
        self,
        scenario: Scenario,
        history: Sequence[ChatMessage] = (),
        faults: Counter[str] | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        run_tool: UserTool | None = None,
    ) -> str | ChatMessage:
        """Its answer to the greeting, offered its own tools as any reply is (τ²-bench's user answers the greeting
        as any message): the message with its calls when it made some, else its text."""
        chat = Chat(scenario, list(history) or [ChatMessage("agent", GREETING)])
        if faults is not None:
            chat.faults = faults
        answer = self.reply(chat, tools, run_tool)
        return answer if answer.tool_messages else answer.text

    def reply(
        self, chat: Chat, tools: Sequence[Mapping[str, Any]] = (), run_tool: UserTool | None = None
    ) -> ChatMessage:
        return run_sync(self.areply(chat, tools, run_tool))

    async def areply(
        self, chat: Chat, tools: Sequence[Mapping[str, Any]] = (), run_tool: UserTool | None = None
    ) -> ChatMessage:
        """`reply` for async callers, from any event loop (the request runs on agent_env's background loop, where
        this process's client lives)."""
        return await on_background_loop(self._answer(chat, tools, run_tool))

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "llm",
            "base_url": self.endpoint.base_url,
            "model": self._model,
            "api_key_env": self.endpoint.api_key_env,
            "sampling": self.sampling.settings(),
        }

    async def _answer(
        self, chat: Chat, tools: Sequence[Mapping[str, Any]], run_tool: UserTool | None
    ) -> ChatMessage:
        from agent_env.llm import EndpointError, RequestFailedError

        client = self._ensure_client()
        offered = [_as_function(tool) for tool in tools] if run_tool is not None else []
        messages = [
            {"role": "system", "content": system_prompt(chat.scenario, bool(offered))},
            *_flipped(chat),
        ]
        own: list[dict[str, Any]] = []
        try:
            model = await self._resolve_model(client)
            for _ in range(self.max_tool_rounds + 1):
                reply = await client.complete(
                    model, [*messages, *own], offered, self.sampling.fields(0), chat.faults
                )
                if not (reply.tool_calls and run_tool is not None):
                    break
                own.append(reply.message)
                for call in reply.tool_calls:
                    own.append({"role": "tool", "tool_call_id": call.id, "content": _run(run_tool, call)})
            else:
                raise self._failure(chat, "it kept calling its own tools and never wrote to the agent")
        except RequestFailedError as error:
            chat.faults[error.fault] += 1
            raise self._failure(chat, str(error)) from None
        except EndpointError as error:  # no model named, and its server's list could not name one
            chat.faults["model_list"] += 1
            raise self._failure(chat, f"{error} ({options_of('user')})") from None
        # The user's key, should its model write it, is cut as the agent's is: its words reach the agent, every
        # transcript and the judge.
        text = client.scrub(reply.content.strip())
        if not text:
            chat.faults["empty_answer"] += 1
            raise self._failure(chat, "it answered with no text")
        return ChatMessage("user", text, tuple(own))

    def _failure(self, chat: Chat, problem: str) -> UserEndpointError:
        """Mark `chat` failed (which ends its episode, unscored) and return the error to raise."""
        chat.failure = f"the simulated user's endpoint ({self.endpoint.base_url}) failed: {problem}"
        return UserEndpointError(chat.failure, faults=chat.reported_faults())

    async def _resolve_model(self, client: ChatClient) -> str:
        """The model to ask: the one named, else the one its server lists (`EndpointError` when it lists none)."""
        if self._model is None:
            self._model, _ = await client.check()
        return self._model

    def _ensure_client(self) -> ChatClient:
        if self._client is None:
            self._client = shared_client(self.endpoint)
        return self._client

    def __getstate__(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "sampling": self.sampling, "max_tool_rounds": self.max_tool_rounds}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["endpoint"], state["sampling"], state["max_tool_rounds"])  # type: ignore[misc]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LLMUser) and self.__getstate__() == other.__getstate__()

    def __hash__(self) -> int:
        return hash((self.endpoint, self.max_tool_rounds))

    def __repr__(self) -> str:
        model = self.endpoint.model or "the one the server lists"
        return f"LLMUser({self.endpoint.base_url!r}, model={model!r}, key from ${self.endpoint.api_key_env})"


def options_of(whose: str) -> str:
    """What an endpoint error's advice means for `whose` endpoint ("user", "judge"), whose options are not the
    agent's that the advice names."""
    return (
        f"for the {whose}'s endpoint the options are --{whose}-base-url, --{whose}-model and --{whose}-api-key-env, "
        f"or base_url, model and api_key_env in its {whose}={{...}} settings"
    )


_clients: dict[tuple[Endpoint, str | None], ChatClient] = {}
_clients_lock = threading.Lock()


def shared_client(endpoint: Endpoint) -> ChatClient:
    """This process's client of `endpoint` (with the key its variable holds now), for the models environments ask
    on agent_env's background loop: every episode's user and judge share it and its connections, where a client of
    their own would cost each episode a new TLS context and connection (a third of an eval's time on τ²-airline)."""
    from agent_env.llm import ChatClient

    key = (endpoint, os.environ.get(endpoint.api_key_env) or None)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = ChatClient(endpoint)
        return client


def endpoint_settings(
    settings: Mapping[str, Any], whose: str, extra: frozenset[str] | set[str] = frozenset()
) -> tuple[Endpoint, Sampling]:
    """The endpoint and sampling (temperature 0 unless set) that `whose` model's JSON settings name.

    Raises:
        ValueError: A key that is neither an `Endpoint` nor a `Sampling` field (nor one of `extra`), or no
            `base_url`: the agent's default URL would silently be asked instead.
    """
    from dataclasses import fields

    from agent_env.llm import Endpoint, Sampling

    endpoint_keys = {item.name for item in fields(Endpoint)}
    sampling_keys = {item.name for item in fields(Sampling)}
    unknown = sorted(set(settings) - endpoint_keys - sampling_keys - set(extra))
    if unknown:
        raise ValueError(
            f"unknown {whose} setting{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; a "
            f"{whose} takes {', '.join(sorted(endpoint_keys | sampling_keys | set(extra)))}"
        )
    if not settings.get("base_url"):
        given = f" (given: {', '.join(sorted(settings))})" if settings else ""
        raise ValueError(
            f"the {whose}'s settings name no base_url{given}: say where its model is served, apart from the "
            f"agent's, e.g. {{'base_url': 'http://127.0.0.1:8001/v1', 'model': 'gpt-4.1'}} "
            f"(on the command line --{whose}-base-url, or base_url in -c {whose}='{{...}}')"
        )
    sampling = {key: settings[key] for key in sampling_keys & set(settings)}
    return (
        Endpoint(**{key: settings[key] for key in endpoint_keys & set(settings)}),
        Sampling(**{"temperature": 0.0, **sampling}),
    )


def _flipped(chat: Chat) -> list[dict[str, Any]]:
    """The conversation as the user's model reads it: the agent's messages are its `user` turns, its own are its
    `assistant` turns, each after the calls of its own tools that led to it."""
    messages: list[dict[str, Any]] = []
    for message in chat.messages:
        if message.role == "agent":
            messages.append({"role": "user", "content": message.text})
        else:
            messages.extend(message.tool_messages)
            messages.append({"role": "assistant", "content": message.text})
    return messages


def _as_function(tool: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "parameters": tool["inputSchema"],
        },
    }


def _run(run_tool: UserTool, call: Any) -> str:
    """One of the user's own calls, run: its result, or what went wrong, as the text the user reads. Arguments that
    are not JSON go to the environment as written, which refuses them as a failed call, as it refuses any bad one."""
    raw = call.arguments
    try:
        try:
            arguments = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
        except ValueError:
            arguments = raw
        return run_tool(call.name, arguments if arguments is not None else {})
    except Exception as error:  # the user's mistake to fix, as an agent's is
        return f"Error: {error}"
