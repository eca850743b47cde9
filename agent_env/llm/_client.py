"""One OpenAI-compatible chat-completions endpoint through the official `openai` client, with
bounded retries that count every fault they meet, and an API key that nothing written or shown carries.

The client's own retries are off (`max_retries=0`): `complete` retries what the client would (429, 408, 409, 5xx,
timeouts, lost connections) with the client's policy (exponential backoff from `backoff` seconds up to
`max_backoff`, less up to a quarter of jitter, a `Retry-After` of up to a minute honoured), and counts each failed
attempt against the episode it belongs to. The client's retry loop is private and changed transport (httpx, then
httpx2) between the versions this supports, so counting there would tie the harness to one of them.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from agent_env.errors import AgentEnvError
from agent_env.llm._replies import Reply, reply_of

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
NO_KEY = "EMPTY"
"""The key sent when the key's variable is unset: local servers (vLLM, SGLang, transformers serve) ask for none."""
MAX_RETRY_AFTER = 60.0
"""The longest `Retry-After` honoured; past it the usual backoff applies."""
RETRIED_FAULTS = ("rate_limited", "server_error", "timeout", "connection", "empty_choices")
"""What a failed attempt is counted as: 429; 5xx or 409; a timeout or 408; a connection refused or lost; an answer
with no choice in it."""


class EndpointError(AgentEnvError, ConnectionError):
    """The endpoint cannot be used (unreachable, the key refused, no model named); found before any episode starts."""

    code = "endpoint"


class NoModelListError(EndpointError):
    """The server answers `/models` with no model list (none there, another status, not a list of models): fatal
    only when the model to ask is not named, since then the list is what names it."""

    code = "no_model_list"


ENDING_FAULTS = ("request_refused", "not_a_completion", "retries_exhausted")
"""What a request that failed for good is counted as, once, against the episode it ended: a 4xx that asking again
would not change (a bad request, an unknown model); an answer that is not a chat completion; retries run out."""


class RequestFailedError(AgentEnvError, RuntimeError):
    """A chat request failed for good (refused, unreadable, or retried to the limit); it ends its episode, never
    the run.

    Attributes:
        fault: What it is counted as: one of `ENDING_FAULTS`.
    """

    code = "request_failed"

    def __init__(self, message: str, fault: str) -> None:
        super().__init__(message)
        self.fault = fault


@dataclass(frozen=True)
class Endpoint:
    """Where the model is and how to talk to it.

    Attributes:
        base_url: The API root, usually ending in `/v1`.
        model: The model to ask; None takes the one model the server lists.
        api_key_env: The environment variable holding the API key (never the key itself).
        timeout: Seconds one request may take.
        max_retries: Retries of a failed request before its episode ends.
        backoff: Seconds before the first retry, doubled for each next one up to `max_backoff`.
        max_backoff: The longest wait between retries (but a shorter `Retry-After` wins).
    """

    base_url: str = DEFAULT_BASE_URL
    model: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    timeout: float = 300.0
    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0


TURN_SEED_STEP = 1_000_003
"""How far apart the seeds of an episode's successive replies are (a prime, past any run's count of episodes)."""


@dataclass(frozen=True)
class Sampling:
    """The sampling settings every request carries; those left None are the server's own.

    Attributes:
        temperature: Sampling temperature.
        top_p: Nucleus sampling mass.
        max_tokens: Most tokens a reply may have.
        seed: The first episode's seed; episode i's first reply is asked with `seed + i`, its later replies each
            with a seed of their own (`fields`), the same in every arm.
        extra_body: More fields for the request body, as the server takes them (e.g. `{"top_k": 20}`).
    """

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int = 0
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def fields(self, position: int, turn: int = 1) -> dict[str, Any]:
        """The request body's sampling fields for reply `turn` (from 1) of the episode at `position`: its seed is
        `seed + position`, plus `TURN_SEED_STEP` for each reply before it. A server seeds a request's sampling with
        it (vLLM does), so one seed for every reply would draw each reply with the same random numbers."""
        chosen = {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}
        fields: dict[str, Any] = {k: v for k, v in chosen.items() if v is not None}
        seed = self.seed + position + TURN_SEED_STEP * (turn - 1)
        return {**fields, "seed": seed, **self.extra_body}

    def settings(self) -> dict[str, Any]:
        """The settings as JSON, for the run's record."""
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "extra_body": dict(self.extra_body),
        }


class ChatClient:
    """One endpoint, its API key read from the environment variable the endpoint names (never shown: `scrub`)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._secret = os.environ.get(endpoint.api_key_env) or None
        self.has_key = self._secret is not None
        """Whether the key's variable was set."""
        self._client = openai.AsyncOpenAI(
            base_url=endpoint.base_url,
            api_key=self._secret or NO_KEY,
            max_retries=0,
            timeout=endpoint.timeout,
        )

    def scrub(self, text: str) -> str:
        """`text` with the API key cut out: as is, as JSON writes it, and however its characters are escaped
        (`\\u0073k-...` in a tool call's raw arguments), in text that is JSON or not (arguments cut off at
        `max_tokens`, or with an escape JSON has not: the escapes are read leniently, and the key is cut from the
        text as written). For free text the server or an error wrote, never for the run's own fields: a
        placeholder key ("EMPTY", "test") is an ordinary word. A key shorter than `SHORT_KEY` characters is cut only
        where it stands as a word of its own (`x` as a key leaves "Excellent" whole); a longer one wherever it is."""
        secret = self._secret
        if secret is None:
            return text
        for form in (secret, json.dumps(secret)[1:-1]):
            text = _cut(text, form) if len(secret) < SHORT_KEY else text.replace(form, SCRUBBED)
        if "\\" in text:
            text = scrub_escaped(text, secret)
        return text

    async def check(self) -> tuple[str, list[str]]:
        """The model to ask and any notes on it, from the server's `/models`; raises `EndpointError` naming the fix
        when the server cannot be reached, refuses the key, or leaves the model to name unclear, or answers no model
        list (`NoModelListError`) when the endpoint names no model. With the model named, a server without a model
        list is asked for it as named, and a note says the listing was skipped."""
        url = self.endpoint.base_url.rstrip("/")
        named = self.endpoint.model
        try:
            served = self._served(url, await self._listing(url))
        except NoModelListError as missing:
            if named is None:
                said = str(missing)
                raise NoModelListError(
                    f"{said}{'' if said.endswith('?') else '.'} If the server has no model list, name the model with "
                    "--model: it is then asked for without the listing"
                ) from None
            return named, [f"{missing}; the listing was skipped and --model {named!r} asked for as named"]
        return self._model(served)

    async def _listing(self, url: str) -> Any:
        """The server's `/models` answer as JSON values."""
        try:
            # As JSON values, not the client's typed page: that one takes any answer (an HTML page, `{"data": "x"}`)
            # and fails later, far from /models, or reads a string as a list of one-letter models.
            listing = await self._client.with_options(timeout=min(self.endpoint.timeout, 30.0)).get(
                "/models", cast_to=object
            )
        except openai.APITimeoutError:
            raise EndpointError(
                f"{url}/models did not answer in time: is the server up, and is --base-url its API root?"
            ) from None
        except openai.APIConnectionError as error:
            raise EndpointError(
                f"cannot reach {url} ({self.scrub(str(error.__cause__ or error))}): start the server (vllm "
                "serve, python -m sglang.launch_server, transformers serve, llama-server) or fix --base-url"
            ) from None
        except openai.AuthenticationError:
            raise EndpointError(self._key_refused(url)) from None
        except openai.NotFoundError:
            raise NoModelListError(
                f"{url}/models was not found (HTTP 404): --base-url must be the API root, usually ending in /v1 "
                "(e.g. http://127.0.0.1:8000/v1), unless the server has no model list"
            ) from None
        except openai.APIStatusError as error:
            raise NoModelListError(
                f"{url}/models answered HTTP {error.status_code}: {self._said(error_text(error))}"
            ) from None
        except json.JSONDecodeError as error:  # a body sent as JSON that is not JSON
            raise NoModelListError(self._no_model_list(url, f"its answer is not JSON: {error}")) from None
        return listing

    def _served(self, url: str, listing: Any) -> list[str]:
        """The ids of the models a `/models` answer lists; `EndpointError` when it is no model list."""
        if isinstance(listing, str):  # the client hands on a body that is not sent as JSON as its text
            raise NoModelListError(
                self._no_model_list(url, f"it answered text, not JSON: {self._said(listing)}")
            )
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list) or not all(
            isinstance(model, dict) and isinstance(model.get("id"), str) for model in data
        ):
            body = json.dumps(listing, default=str)
            raise NoModelListError(
                self._no_model_list(url, f'its "data" is not a list of models with ids: {self._said(body)}')
            )
        return [model["id"] for model in data]

    def _no_model_list(self, url: str, problem: str) -> str:
        return (
            f"{url}/models did not return a model list ({self.scrub(problem)}): is --base-url the OpenAI-compatible "
            "API root (usually ending in /v1, e.g. http://127.0.0.1:8000/v1)?"
        )

    def _model(self, served: list[str]) -> tuple[str, list[str]]:
        """The model to ask, and notes; the ids the server lists are its text, scrubbed wherever they are shown
        (the one it lists alone is asked for as it is, and scrubbed by whoever shows it)."""
        listed = ", ".join(self.scrub(model) for model in served[:8]) + (", ..." if len(served) > 8 else "")
        if self.endpoint.model is not None:
            if served and self.endpoint.model not in served:
                return self.endpoint.model, [
                    f"the server does not list model {self.endpoint.model!r} ({listed})"
                ]
            return self.endpoint.model, []
        if len(served) == 1:
            return served[0], []
        raise EndpointError(
            f"name the model with --model: the server lists {len(served)} ({listed or 'none'})"
        )

    def _key_refused(self, url: str) -> str:
        variable = self.endpoint.api_key_env
        if self._secret is None:
            return (
                f"{url} wants an API key: set it in ${variable} (or name another variable with --api-key-env)"
            )
        return f"{url} refused the API key in ${variable}: set the right one there"

    async def complete(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        fields: Mapping[str, Any],
        faults: Counter[str],
    ) -> Reply:
        """The model's reply to `messages` with `tools`, retrying what can be retried, each failed attempt counted in
        `faults`.

        Raises:
            RequestFailedError: The server refused the request (a 4xx other than 408, 409, 429), answered what the
                client cannot read, or failed `max_retries + 1` times.
        """
        endpoint = self.endpoint
        last = ""
        for attempt in range(endpoint.max_retries + 1):
            retry_after = None
            try:
                # The client's documented way to send a body as it is (`chat.completions.create` walks every
                # message and tool schema through its type transforms first: 60% of a turn's time on the desk).
                # No tools, no `tools` field: vLLM refuses an empty list (HTTP 400).
                offered = {"tools": tools} if tools else {}
                completion = await self._client.post(
                    "/chat/completions",
                    cast_to=ChatCompletion,
                    body={"model": model, "messages": messages, **offered, **fields},
                )
            except openai.APITimeoutError:
                fault, last = "timeout", f"no answer within {endpoint.timeout:g} s"
            except openai.APIConnectionError as error:
                fault, last = "connection", f"connection failed ({self.scrub(str(error.__cause__ or error))})"
            except openai.APIStatusError as error:
                last = f"HTTP {error.status_code}: {self._said(error_text(error))}"
                retried = status_fault(error.status_code)
                if retried is None:
                    raise RequestFailedError(
                        f"the server refused the request ({last})", "request_refused"
                    ) from None
                fault = retried
                retry_after = retry_after_seconds(error.response.headers)
            except openai.OpenAIError as error:
                raise self._not_a_completion(str(error)) from None
            except json.JSONDecodeError as error:  # a body sent as JSON that is not JSON
                raise self._not_a_completion(f"it is not JSON: {error}") from None
            else:
                reply = self._first_reply(completion)
                if reply is not None:
                    return reply
                fault, last = "empty_choices", "an answer with an empty choices list"
            faults[fault] += 1
            if attempt < endpoint.max_retries:
                await asyncio.sleep(self._delay(attempt, retry_after))
        raise RequestFailedError(
            f"gave up after {endpoint.max_retries + 1} attempts; the last: {last}", "retries_exhausted"
        )

    def _first_reply(self, completion: Any) -> Reply | None:
        """The reply in `completion`'s first choice; None when its choice list is empty (asked again).

        Raises:
            RequestFailedError: The answer is not a chat completion (text, no choices list, a choice without a
                message): the server's fault, not the environment's.
        """
        if isinstance(completion, str):  # the client hands on a body that is not sent as JSON as its text
            raise self._not_a_completion(f"it is text, not JSON: {self._said(completion)}")
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list):
            raise self._not_a_completion("it has no choices list")
        if not choices:
            return None
        if getattr(choices[0], "message", None) is None:
            raise self._not_a_completion("its choice has no message")
        try:
            return reply_of(completion, choices[0])
        except (AttributeError, TypeError, ValueError) as error:  # a message of another shape
            raise self._not_a_completion(f"{type(error).__name__}: {error}") from None

    def _not_a_completion(self, problem: str) -> RequestFailedError:
        return RequestFailedError(
            f"the server's answer is not a chat completion ({self.scrub(problem)})", "not_a_completion"
        )

    def _said(self, text: str) -> str:
        """What the server said, scrubbed, then cut short: cut first, a key across the cut would show in part."""
        return cut(self.scrub(text))

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and 0 < retry_after <= MAX_RETRY_AFTER:
            return retry_after
        delay = min(self.endpoint.backoff * 2.0**attempt, self.endpoint.max_backoff)
        return delay * (1 - 0.25 * random.random())

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self._client.close()

    def __repr__(self) -> str:
        return f"ChatClient({self.endpoint.base_url!r}, key from ${self.endpoint.api_key_env})"


SCRUBBED = "[API key]"
"""What stands where the API key was."""
SHORT_KEY = 16
"""Keys shorter than this (placeholders such as "EMPTY", "x"; no service issues secrets so short) are cut from text
only where they stand as a word of their own: cut from inside words, they would cut letters out of the text."""
_WORD = re.compile(r"\w")
ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
"""A JSON escape: `\\uXXXX`, or one of the one-letter ones."""
_ONE_LETTER = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
ESCAPED_DEPTH = 3
"""How many times over text is read for escapes (JSON in a JSON string in a JSON string)."""


def _occurrences(text: str, secret: str) -> list[int]:
    """Where `secret` starts in `text`; for a short key only where it stands as a word of its own (no letter or
    digit right before or after it that it does not begin or end with one of)."""
    found, start = [], text.find(secret)
    while start != -1:
        end = start + len(secret)
        whole = len(secret) >= SHORT_KEY or (
            not (start > 0 and _WORD.match(text[start - 1]) and _WORD.match(secret[0]))
            and not (end < len(text) and _WORD.match(text[end]) and _WORD.match(secret[-1]))
        )
        if whole:
            found.append(start)
        start = text.find(secret, end if whole else start + 1)
    return found


def _cut(text: str, form: str) -> str:
    """`text` with each occurrence of `form` (the key as written) that `_occurrences` finds written as `SCRUBBED`."""
    for start in reversed(_occurrences(text, form)):
        text = text[:start] + SCRUBBED + text[start + len(form) :]
    return text


def scrub_escaped(text: str, secret: str) -> str:
    """`text` with every run of it that reads as `secret` once its JSON escapes are decoded (read leniently, by a
    regular expression, so text that is no JSON, cut off or with an escape JSON has not, is read too; and again,
    for escapes that were escaped) written as `SCRUBBED`, the rest of it exactly as it was."""
    current, spans = text, [(index, index + 1) for index in range(len(text))]
    found: list[tuple[int, int]] = []
    for _ in range(ESCAPED_DEPTH):
        decoded, inner = _unescaped(current)
        if decoded == current:
            break
        spans = [(spans[start][0], spans[end - 1][1]) for start, end in inner]  # back to `text`'s own places
        current = decoded
        for start in _occurrences(current, secret):
            found.append((spans[start][0], spans[start + len(secret) - 1][1]))
    for start, end in sorted(_merged(found), reverse=True):
        text = text[:start] + SCRUBBED + text[end:]
    return text


def _unescaped(text: str) -> tuple[str, list[tuple[int, int]]]:
    """`text` with its JSON escapes decoded (any other backslash kept as it is), and the span of `text` each
    character of it comes from."""
    characters: list[str] = []
    spans: list[tuple[int, int]] = []
    position = 0
    for escape in ESCAPE.finditer(text):
        for index in range(position, escape.start()):
            characters.append(text[index])
            spans.append((index, index + 1))
        characters.append(chr(int(escape[1], 16)) if escape[1] else _ONE_LETTER[escape[2]])
        spans.append(escape.span())
        position = escape.end()
    for index in range(position, len(text)):
        characters.append(text[index])
        spans.append((index, index + 1))
    return "".join(characters), spans


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def status_fault(status: int) -> str | None:
    """The fault an HTTP status is counted as when it is retried; None for one that is not (a 4xx request error)."""
    if status == 429:
        return "rate_limited"
    if status == 408:
        return "timeout"
    if status == 409 or status >= 500:
        return "server_error"
    return None


def retry_after_seconds(headers: Any) -> float | None:
    """The wait a `Retry-After` (or `retry-after-ms`) header asks for, in seconds, when it gives one as a number."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name) if headers is not None else None
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            continue
    return None


def cut(text: str, limit: int = 300) -> str:
    """`text` cut to `limit` characters, marked when it was."""
    return text if len(text) <= limit else text[:limit] + "..."


def error_text(error: openai.APIStatusError) -> str:
    """What a refusal says (whole: scrub it, then cut it)."""
    body = error.body
    if isinstance(body, dict):
        body = body.get("message") or body.get("detail") or body.get("error") or body
    return (
        body
        if isinstance(body, str)
        else json.dumps(body, default=str)
        if body is not None
        else error.message
    )
