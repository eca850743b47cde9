"""Hold dataset rows to what an environment's `reset` can take, so a mismatch fails where the rows are made.

TRL calls `reset(**row)` with every column of a row, `prompt` included. A `reset` without `**row` that does not
name each key fails there, at the first rollout, with Python's "unexpected keyword argument 'prompt'". The rows are
checked instead when a provider first gives its dataset (`env.dataset(split)`, the server's `GET /datasets/...`),
and each row again when an episode starts from it, naming the keys and the fix.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agent_env.environment import Environment
from agent_env.errors import DatasetRowsError
from agent_env.schema._parameters import parameter_text


def dataset_rows(
    environment: type[Environment], config: Mapping[str, Any], split: str
) -> list[dict[str, Any]]:
    """The rows of a dataset split, from a fresh instance, once each is known to be a valid `reset(**row)`.

    Raises:
        DatasetRowsError: `reset` cannot take a key of a row, or needs one a row lacks.
    """
    rows = environment(**config).dataset_rows(split)
    accepts = ResetParameters.of(environment.reset)
    for index, row in enumerate(rows):
        problem = accepts.problem(row)
        if problem is not None:
            raise DatasetRowsError(
                f"{environment.__name__}.reset {problem.text} row {index} of its {split!r} dataset "
                f"{problem.has}: {problem.fix}"
            )
    return rows


def check_row(environment: type[Environment], row: Mapping[str, Any]) -> None:
    """Refuse a row `environment.reset` cannot be called with, naming the keys and the fix.

    Raises:
        DatasetRowsError: `reset` cannot take a key of the row, or needs one the row lacks.
    """
    problem = ResetParameters.of(environment.reset).problem(row)
    if problem is not None:
        raise DatasetRowsError(
            f"{environment.__name__}.reset {problem.text} the row {problem.has}: {problem.fix}"
        )


@dataclass(frozen=True)
class _Problem:
    text: str
    has: str
    fix: str


@dataclass(frozen=True)
class ResetParameters:
    """What a `reset` method takes by keyword: its names, the ones it requires, and whether it takes any other."""

    names: tuple[str, ...]
    required: tuple[str, ...]
    takes_any: bool
    written: str
    """Its `def` line with `**row` added, as the fix for a row key it cannot take."""

    @staticmethod
    @lru_cache(maxsize=256)
    def of(reset: Callable[..., Any]) -> ResetParameters:
        """The parameters of an environment's `reset` function (its receiver left out)."""
        parameters = list(inspect.signature(reset).parameters.values())
        if not inspect.ismethod(reset):  # a plain method: its first parameter is the receiver
            parameters = parameters[1:]
        keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        named = [parameter for parameter in parameters if parameter.kind in keyword]
        takes_any = any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters)
        written = [parameter_text(parameter) for parameter in parameters]
        if not takes_any:
            written.append("**row")
        return ResetParameters(
            names=tuple(parameter.name for parameter in named),
            required=tuple(
                parameter.name for parameter in named if parameter.default is inspect.Parameter.empty
            ),
            takes_any=takes_any,
            written=f"def reset({', '.join(['self', *written])})",
        )

    def problem(self, row: Mapping[str, Any]) -> _Problem | None:
        """What stops `reset(**row)`, or None."""
        unknown = [] if self.takes_any else [key for key in row if key not in self.names]
        if unknown:
            takes = f"it takes only {', '.join(self.names)}" if self.names else "it takes no keys"
            return _Problem(
                f"cannot take the key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} of",
                f"({takes}), and TRL passes every column of a row to reset",
                f"take the rest with **row, {self.written}",
            )
        missing = [name for name in self.required if name not in row]
        if missing:
            return _Problem(
                f"requires {', '.join(map(repr, missing))}, which",
                f"lacks (its keys: {', '.join(map(str, row)) or 'none'})",
                "add the key to every row, or give the parameter a default",
            )
        return None
