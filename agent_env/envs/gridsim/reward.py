"""The desk's reward: a day's profit as a share of the perfect-foresight bound UB."""

from __future__ import annotations

import math

SMALL_BOUND = 1.0
"""Below this UB ($) the ratio means nothing; the reward is then 1 for not losing money, else 0."""


def reward(profit: float, ub: float) -> float:
    """clip(profit / ub, 0, 1); where ub < $1, 1.0 if profit >= 0 else 0.0.

    Args:
        profit: The day's settled profit, $.
        ub: The day's upper bound (`upper_bound(...).value`), $; never negative, since idling earns 0.

    Returns:
        A reward in [0, 1].
    """
    if not (math.isfinite(profit) and math.isfinite(ub)):
        raise ValueError(f"reward needs finite numbers, got profit={profit!r}, ub={ub!r}")
    if ub < SMALL_BOUND:
        return 1.0 if profit >= 0 else 0.0
    return min(1.0, max(0.0, profit / ub))
