"""What a trainer scores an episode its environment could not score: one rule, for every environment and provider.

A GRPO step reads the reward of every rollout in its batch; one that raises stops the step, and with it the run.
So the TRL adapter never lets an `UnscoredEpisodeError` (raised by any session's `reset` or `reward`) reach TRL:
`unscored_reward` turns it into the reward TRL gets, and says so once, in the log, with the traceback.
"""

from __future__ import annotations

import logging

from agent_env.errors import UnscoredEpisodeError

logger = logging.getLogger("agent_env.training")

CHARGED_REWARD = 0.0
"""The reward of an episode whose environment's code failed on it: what an episode whose MCP server failed scores."""


def unscored_reward(error: UnscoredEpisodeError) -> float | None:
    """The reward TRL gets for an episode that could not be scored, with exactly one warning naming the environment,
    the episode and the exception (its traceback in the log record).

    - The environment's code failed on the episode (`error.infrastructure` is false: a `reward` or `setup` function
      that raised, a reward that is no number): `CHARGED_REWARD`, 0.0, as a failed MCP server scores.
    - A service outside the episode failed (`InfrastructureFailedError`: a simulated user's endpoint, a full
      server that had no room for it), or a call of it did not finish in time (`TimedOutEpisodeError`: past its
      call timeout or its episode's time budget): None, which TRL (>= 1.16) reads as unscorable: the rollout is left
      out of its group's baseline and its advantage is 0.

    Any environment that reads its rewards for a trainer can use this rule as it is.
    """
    reward = None if error.infrastructure else CHARGED_REWARD
    given = "None (unscorable: TRL leaves it out of its group's baseline)" if reward is None else f"{reward}"
    where = " (the traceback is in the log of the process that ran it)" if error.crossed else ""
    logger.warning(
        "agent_env: %s. TRL gets %s for it, so that one failed episode does not stop the step%s",
        error,
        given,
        where,
        exc_info=error,
    )
    return reward


__all__ = ["CHARGED_REWARD", "unscored_reward"]
