"""The judge of τ²-bench's natural-language assertions: a model behind an OpenAI-compatible endpoint, asked only when
one is given (the retail domain's default reward needs it; without one, its reward is DB only and says so)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_env._loop import on_background_loop, run_sync
from agent_env.errors import JudgeEndpointError

if TYPE_CHECKING:
    from agent_env.llm import ChatClient, Endpoint, Sampling

INSTRUCTIONS = """You grade a customer service conversation against expected outcomes.

You get the conversation (between an agent and a customer, with the agent's tool calls and their results) and a \
list of expected outcomes. For each outcome, decide from the conversation alone whether the agent met it.

Answer with one JSON object and nothing else:
{"results": [{"expectedOutcome": "<the outcome, as given>", "reasoning": "<one or two sentences>", \
"metExpectation": true or false}, ...]}
with one entry per expected outcome, in the order given."""


@dataclass(frozen=True)
class Verdict:
    """One assertion judged."""

    assertion: str
    met: bool
    reasoning: str


class Judge:
    """Judges assertions about a conversation with a model (temperature 0 by default, as τ²-bench's runs).

    Picklable: it travels as its settings; each process makes its own client on first use.
    """

    def __init__(self, endpoint: Endpoint, sampling: Sampling | None = None) -> None:
        from agent_env.llm import Sampling

        self.endpoint = endpoint
        self.sampling = sampling or Sampling(temperature=0.0)
        self._client: ChatClient | None = None
        self._model = endpoint.model

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Judge:
        """A judge from JSON settings, as an LLM user takes them (`agent_env.users.LLMUser.from_settings`).

        Raises:
            ValueError: A key that is not an endpoint's or sampling's, or no `base_url`.
        """
        from agent_env.users._llm import endpoint_settings

        return cls(*endpoint_settings(settings, "judge"))

    def judge(
        self, transcript: str, assertions: Sequence[str], faults: Counter[str] | None = None
    ) -> list[Verdict]:
        """Each assertion's verdict on `transcript`; the endpoint's failed attempts, retried ones included, are
        counted in `faults`.

        Raises:
            JudgeEndpointError: The endpoint failed for good, or its answer is not one verdict per assertion.
        """
        counted = faults if faults is not None else Counter()
        return run_sync(on_background_loop(self._judge(transcript, list(assertions), counted)))

    def describe(self) -> dict[str, Any]:
        """What this judge is, as JSON values for records (never the key)."""
        return {
            "base_url": self.endpoint.base_url,
            "model": self._model,
            "api_key_env": self.endpoint.api_key_env,
        }

    async def _judge(self, transcript: str, assertions: list[str], faults: Counter[str]) -> list[Verdict]:
        from agent_env.llm import EndpointError, RequestFailedError
        from agent_env.users._llm import options_of, shared_client

        if self._client is None:
            self._client = shared_client(self.endpoint)
        question = f"Conversation:\n{transcript}\n\nExpected outcomes:\n{json.dumps(assertions, indent=1)}"
        messages = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": question}]
        try:
            if self._model is None:
                self._model, _ = await self._client.check()
            reply = await self._client.complete(self._model, messages, [], self.sampling.fields(0), faults)
            return verdicts(self._client.scrub(reply.content), assertions)  # its key, echoed, is cut
        except RequestFailedError as error:
            faults[error.fault] += 1
            raise self._failure(str(error), faults) from None
        except EndpointError as error:  # no model named, and its server's list could not name one
            faults["model_list"] += 1
            raise self._failure(f"{error} ({options_of('judge')})", faults) from None
        except JudgeEndpointError as error:  # an answer that is not its verdicts
            faults["unreadable_verdicts"] += 1
            raise self._failure(str(error), faults) from None

    def _failure(self, problem: str, faults: Counter[str]) -> JudgeEndpointError:
        return JudgeEndpointError(
            f"the judge's endpoint ({self.endpoint.base_url}) failed: {problem}", faults=judge_faults(faults)
        )

    def __getstate__(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "sampling": self.sampling}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["endpoint"], state["sampling"])  # type: ignore[misc]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Judge) and self.__getstate__() == other.__getstate__()

    def __hash__(self) -> int:
        return hash(self.endpoint)

    def __repr__(self) -> str:
        return f"Judge({self.endpoint.base_url!r}, model={self.endpoint.model!r})"


def judge_faults(faults: Counter[str]) -> dict[str, int]:
    """A judge's failed attempts as records report them beside the agent's endpoint's: each kind prefixed
    `judge_`, sorted."""
    return {f"judge_{kind}": count for kind, count in sorted(faults.items()) if count}


def verdicts(answer: str, assertions: list[str]) -> list[Verdict]:
    """The verdicts in a judge's answer: a JSON object (a fenced block is read too) with one result per assertion,
    in order, each `metExpectation` a JSON boolean.

    Raises:
        JudgeEndpointError: It cannot be read so (a verdict of "false", a string, is no verdict: read as met, it
            would score what the judge failed).
    """
    text = answer.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        results = json.loads(text)["results"]
        found = [_verdict(assertion, item) for assertion, item in zip(assertions, results, strict=True)]
    except (ValueError, KeyError, TypeError) as error:
        raise JudgeEndpointError(
            f"the judge's answer cannot be read as one verdict per assertion ({type(error).__name__}: {error}): "
            f"{answer[:200]!r}"
        ) from None
    return found


def _verdict(assertion: str, item: Any) -> Verdict:
    met = item["metExpectation"]
    if not isinstance(met, bool):
        raise TypeError(f"metExpectation must be true or false, not {json.dumps(met)}")
    return Verdict(assertion, met, str(item.get("reasoning", "")))


JudgeSetting = Judge | Mapping[str, Any] | None


def judge_from(setting: JudgeSetting) -> Judge | None:
    """The judge a configuration names: a `Judge`, an endpoint's settings as a mapping, or None for none."""
    if setting is None or isinstance(setting, Judge):
        return setting
    if isinstance(setting, Mapping):
        return Judge.from_settings(setting)
    raise ValueError(
        f"judge={setting!r} names no judge: pass a Judge, or its endpoint's settings as a mapping such as "
        "{'base_url': 'http://127.0.0.1:8002/v1', 'model': 'gpt-4.1'}"
    )
