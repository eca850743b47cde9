"""The chat client against the scripted server, through the evaluation fixtures that drive it."""

from tst.unit.evaluation.conftest import run, toy

__all__ = ["run", "toy"]
