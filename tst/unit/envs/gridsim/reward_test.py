"""The reward: profit over the bound, clipped to [0, 1], with a pass/fail rule when the bound is under $1."""

import pytest

from agent_env.envs.gridsim.reward import reward


@pytest.mark.parametrize(
    ("profit", "ub", "expected"),
    [
        (500.0, 1000.0, 0.5),
        (1000.0, 1000.0, 1.0),
        (1000.01, 1000.0, 1.0),  # clipped at 1
        (-5.0, 1000.0, 0.0),  # clipped at 0
        (0.0, 1000.0, 0.0),
        (0.0, 0.5, 1.0),  # tiny bound: not losing money is full marks
        (0.0, 0.0, 1.0),
        (-0.01, 0.99, 0.0),
        (0.5, 1.0, 0.5),  # exactly $1 is a normal bound
    ],
)
def test_reward_is_clipped_profit_share_of_the_bound(profit, ub, expected):
    assert reward(profit, ub) == pytest.approx(expected)


def test_non_finite_inputs_are_refused():
    with pytest.raises(ValueError, match="finite"):
        reward(float("nan"), 10.0)
