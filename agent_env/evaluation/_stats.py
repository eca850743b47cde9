"""A run's numbers: per arm, the mean reward with its 95% interval and how the calls fared; for a comparison, the
paired differences between the arms with their intervals.

Only episodes that ran to a reward are scored; the ones that ended in an `error` are counted apart, and their
faults still count. Means get Student's t interval (`scipy.stats.t`); a difference of means is the mean of the
per-episode differences of the same episode (same row, same seed) in both arms, so its interval is the paired one.
A rate pooled over calls (the valid-call rate) is a ratio of sums, so its difference gets a paired bootstrap over
episodes (`scipy.stats.bootstrap`, percentile, seeded).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from agent_env.evaluation._calls import ACCEPTED, MALFORMED
from agent_env.evaluation._episode import Episode

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
ERRORS_KEPT = 2
"""How many distinct errors a summary quotes: enough to say why episodes failed; each one's is in the run's file."""


@dataclass(frozen=True)
class Estimate:
    """A value and its 95% interval (NaN bounds when there are too few episodes to have one).

    Attributes:
        value: The estimate.
        low: The interval's lower bound.
        high: The interval's upper bound.
        n: How many episodes (or pairs) it rests on.
    """

    value: float
    low: float
    high: float
    n: int


def mean_estimate(values: Sequence[float]) -> Estimate:
    """The mean of `values` with Student's t 95% interval (a degenerate one when they are all equal)."""
    data = np.asarray(values, dtype=float)
    n = len(data)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    mean = float(data.mean())
    if n < 2:
        return Estimate(mean, math.nan, math.nan, n)
    sem = float(stats.sem(data))
    if sem == 0:
        return Estimate(mean, mean, mean, n)
    low, high = stats.t.interval(CONFIDENCE, n - 1, loc=mean, scale=sem)
    return Estimate(mean, float(low), float(high), n)


def paired_ratio_difference(
    hits_a: Sequence[float], totals_a: Sequence[float], hits_b: Sequence[float], totals_b: Sequence[float]
) -> Estimate:
    """`sum(hits_a)/sum(totals_a) - sum(hits_b)/sum(totals_b)` over paired episodes, with a paired bootstrap 95%
    interval (episodes resampled together in both arms)."""
    data = [np.asarray(values, dtype=float) for values in (hits_a, totals_a, hits_b, totals_b)]
    n = len(data[0])

    def difference(ha: Any, ta: Any, hb: Any, tb: Any, axis: int = -1) -> Any:
        with np.errstate(divide="ignore", invalid="ignore"):
            return ha.sum(axis) / ta.sum(axis) - hb.sum(axis) / tb.sum(axis)

    if n == 0 or data[1].sum() == 0 or data[3].sum() == 0:
        return Estimate(math.nan, math.nan, math.nan, n)
    value = float(difference(data[0], data[1], data[2], data[3]))
    if n < 2:
        return Estimate(value, math.nan, math.nan, n)
    result = stats.bootstrap(
        data,
        difference,
        paired=True,
        vectorized=True,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(0),
    )
    low, high = result.confidence_interval
    return Estimate(value, float(low), float(high), n)


def pairs_needed(sd: float, difference: float, *, power: float = 0.8, alpha: float = 0.05) -> int:
    """Pairs a paired comparison needs to detect a true `difference` in mean reward with probability `power` at
    two-sided level `alpha`, when paired differences have standard deviation `sd`: n = ((z(1-a/2) + z(power)) *
    sd / difference)^2, rounded up (the normal approximation of the paired t test)."""
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return math.ceil((z * sd / difference) ** 2)


@dataclass(frozen=True)
class ArmSummary:
    """One arm's episodes in numbers.

    Attributes:
        arm: The arm's name.
        episodes: Its episodes, scored or not.
        failed: Those that ended in an `error` (not scored).
        reward: The mean reward of the scored ones and its 95% interval.
        calls: Tool calls in the scored episodes.
        verdicts: Those calls by verdict (`accepted`, `invalid_arguments`, ...).
        recovered: Failed calls to a tool that an accepted call to the same tool followed in the same episode.
        recoverable: Failed calls to a tool the environment has: those with malformed arguments (`invalid_arguments`,
            `not_json`) and those the environment refused; not `unknown_tool` or `unsupported_type`, which name
            no tool to recover with.
        calls_per_episode: Mean tool calls per scored episode.
        turns_per_episode: Mean replies per scored episode.
        prompt_tokens_per_episode: Mean prompt tokens per scored episode (each request's, summed), when the
            server reports usage.
        completion_tokens_per_episode: Mean completion tokens per scored episode, likewise.
        ended_by: Episodes by how they ended.
        faults: Episodes each fault touched, over all episodes; an episode that ended in an `error` counts what
            ended it (`request_refused`, `not_a_completion`, `retries_exhausted`, `environment_error`,
            `empty_reply`).
        errors: The first `ERRORS_KEPT` distinct errors that ended episodes (in the run's order), each with how
            many episodes it ended: why episodes failed, without reading the file.
        pass_k: pass^k (τ²-bench's leaderboard metric, as its `compute_metrics` computes it) for k from 1 to the
            fewest scored plays any task has (so below `--trials` when a task lost plays to errors): each task's
            chance that k plays drawn from its scored ones all succeed (reward within 1e-6 of 1), averaged over every
            task with a scored play; with how many tasks it rests on.
    """

    arm: str
    episodes: int
    failed: int
    reward: Estimate
    calls: int
    verdicts: dict[str, int]
    recovered: int
    recoverable: int
    calls_per_episode: float
    turns_per_episode: float
    prompt_tokens_per_episode: float | None
    completion_tokens_per_episode: float | None
    ended_by: dict[str, int]
    faults: dict[str, int]
    errors: dict[str, int]
    pass_k: dict[int, Estimate] = field(default_factory=dict)

    def valid_rate(self) -> float:
        """The share of calls that were well formed: a tool the environment has, JSON arguments that pass its
        published schema."""
        return (
            1 - sum(self.verdicts.get(kind, 0) for kind in MALFORMED) / self.calls if self.calls else math.nan
        )

    def malformed_rates(self) -> dict[str, float]:
        """The share of calls of each malformed kind."""
        return {
            kind: self.verdicts.get(kind, 0) / self.calls if self.calls else math.nan for kind in MALFORMED
        }

    def recovery_rate(self) -> float:
        """The share of failed calls (malformed or refused, to a tool that exists) followed by an accepted call to
        the same tool."""
        return self.recovered / self.recoverable if self.recoverable else math.nan


@dataclass(frozen=True)
class Comparison:
    """Two arms on the same episodes: each difference is `first` minus `second`, over the pairs both scored.

    Attributes:
        first: The first arm (`full`).
        second: The second arm (`lossy`).
        pairs: Episodes both arms scored.
        reward: The mean paired reward difference and its 95% interval.
        reward_sd: The standard deviation of the paired reward differences (what `pairs_needed` takes).
        valid_rate: The difference in valid-call rates, with a paired bootstrap interval.
        calls_per_episode: The mean paired difference in calls per episode.
        prompt_tokens_per_episode: The mean paired difference in prompt tokens per episode (None without usage).
    """

    first: str
    second: str
    pairs: int
    reward: Estimate
    reward_sd: float
    valid_rate: Estimate
    calls_per_episode: Estimate
    prompt_tokens_per_episode: Estimate | None


def latest(episodes: Iterable[Episode]) -> dict[tuple[str, str], Episode]:
    """The last record of each (arm, episode)."""
    return {(episode.arm, episode.episode): episode for episode in episodes}


def summarize(episodes: Iterable[Episode], arm: str) -> ArmSummary:
    """`arm`'s summary over `episodes` (the last record of each episode counts)."""
    mine = [episode for (name, _), episode in latest(episodes).items() if name == arm]
    scored = [episode for episode in mine if episode.scored()]
    verdicts = Counter(call["verdict"] for episode in scored for call in episode.calls)
    recovered, recoverable = 0, 0
    for episode in scored:
        hit, total = recoveries(episode.calls)
        recovered, recoverable = recovered + hit, recoverable + total
    faults: Counter[str] = Counter()
    for episode in mine:
        faults.update({fault for fault, count in episode.faults.items() if count})
    with_usage = [episode.tokens for episode in scored if episode.tokens is not None]
    return ArmSummary(
        arm=arm,
        episodes=len(mine),
        failed=len(mine) - len(scored),
        reward=mean_estimate([episode.reward or 0.0 for episode in scored]),
        calls=sum(verdicts.values()),
        verdicts=dict(sorted(verdicts.items())),
        recovered=recovered,
        recoverable=recoverable,
        calls_per_episode=_mean([len(episode.calls) for episode in scored]),
        turns_per_episode=_mean([episode.turns for episode in scored]),
        prompt_tokens_per_episode=_mean([tokens["prompt"] for tokens in with_usage]) if with_usage else None,
        completion_tokens_per_episode=_mean([tokens["completion"] for tokens in with_usage])
        if with_usage
        else None,
        ended_by=dict(sorted(Counter(episode.ended_by for episode in mine).items())),
        faults=dict(sorted(faults.items())),
        errors=first_errors(mine),
        pass_k=pass_hat_k(scored),
    )


SUCCESS_TOLERANCE = 1e-6
"""How near 1 a reward must be to count as a success for pass^k, as τ²-bench's `is_successful` counts it."""


def pass_hat_k(episodes: Iterable[Episode]) -> dict[int, Estimate]:
    """pass^k of scored `episodes` as τ²-bench's `compute_metrics` computes it: k runs from 1 to the fewest plays
    any task has, and pass^k is the mean over every task (a play's id before `#`) of C(successes, k) / C(plays, k).

    Every task counts at every k, so a task that lost plays to errors lowers the largest k for all of them rather
    than leaving the larger k to the tasks that kept theirs (those would skew it toward the tasks played most)."""
    plays: dict[str, list[bool]] = {}
    for episode in episodes:
        success = abs((episode.reward or 0.0) - 1.0) <= SUCCESS_TOLERANCE
        plays.setdefault(episode.episode.split("#")[0], []).append(success)
    fewest = min((len(results) for results in plays.values()), default=0)
    found = {}
    for k in range(1, fewest + 1):
        values = [math.comb(sum(results), k) / math.comb(len(results), k) for results in plays.values()]
        found[k] = Estimate(float(np.mean(values)), math.nan, math.nan, len(values))
    return found


def first_errors(episodes: Iterable[Episode]) -> dict[str, int]:
    """The first `ERRORS_KEPT` distinct errors that ended `episodes`, in the run's order, with how many each ended."""
    ended = Counter(
        episode.error
        for episode in sorted(episodes, key=lambda episode: episode.position)
        if not episode.scored() and episode.error
    )
    return dict(list(ended.items())[:ERRORS_KEPT])


def recoveries(calls: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """(failed calls followed by an accepted call to the same tool, failed calls to a tool that exists): a failed
    call is malformed or refused by the environment."""
    recovered, recoverable = 0, 0
    for index, call in enumerate(calls):
        if call["verdict"] in (ACCEPTED, "unknown_tool", "unsupported_type"):
            continue
        recoverable += 1
        later = calls[index + 1 :]
        recovered += any(other["name"] == call["name"] and other["verdict"] == ACCEPTED for other in later)
    return recovered, recoverable


def compare(episodes: Iterable[Episode], first: str, second: str) -> Comparison:
    """`first` against `second`, paired by episode id over the episodes both scored."""
    by_key = latest(episodes)
    pairs = [
        (episode, by_key[(second, episode.episode)])
        for (arm, _), episode in sorted(by_key.items(), key=lambda item: item[1].position)
        if arm == first
        and episode.scored()
        and (second, episode.episode) in by_key
        and by_key[(second, episode.episode)].scored()
    ]
    differences = [(a.reward or 0.0) - (b.reward or 0.0) for a, b in pairs]
    firsts, seconds = [a for a, _ in pairs], [b for _, b in pairs]
    with_usage = [(a.tokens, b.tokens) for a, b in pairs if a.tokens and b.tokens]
    return Comparison(
        first=first,
        second=second,
        pairs=len(pairs),
        reward=mean_estimate(differences),
        reward_sd=float(np.std(differences, ddof=1)) if len(differences) > 1 else math.nan,
        valid_rate=paired_ratio_difference(
            _valid_calls(firsts), _calls(firsts), _valid_calls(seconds), _calls(seconds)
        ),
        calls_per_episode=mean_estimate([len(a.calls) - len(b.calls) for a, b in pairs]),
        prompt_tokens_per_episode=mean_estimate([a["prompt"] - b["prompt"] for a, b in with_usage])
        if with_usage
        else None,
    )


def _valid_calls(episodes: Sequence[Episode]) -> list[int]:
    return [sum(call["verdict"] not in MALFORMED for call in episode.calls) for episode in episodes]


def _calls(episodes: Sequence[Episode]) -> list[int]:
    return [len(episode.calls) for episode in episodes]


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan
