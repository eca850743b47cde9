"""Dataset rows as a `datasets.Dataset` that gives every value back as it was given (what `env.dataset` returns).

Arrow holds one type per column, so `Dataset.from_list` refuses a list that mixes types (`[["ada", 36]]`) with a
bare `ArrowTypeError` naming no row and no key, and quietly changes others (a dict that lacks a key another row's has
gets it as `None`; `[1, 2.5]` comes back `[1.0, 2.5]`). A `reset(**row)` under TRL gets the value the dataset gives
back, so each column whose values would not come back as given is stored as JSON (`datasets.Json`; datasets >= 5.0
decodes it on every read), which does give them back. A value even JSON cannot carry (an integer past 64 bits, a
set, an object that is no JSON value) is refused, naming the row, the key and what to give instead.

"As given" is JSON's sameness: a tuple comes back a list, as it would from a served environment, but an int stays
an int, a bool a bool, and a dict keeps exactly its keys. A row that lacks a column other rows have still gets it as
`None` (a dataset has one set of columns); `reset` should give such keys a default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent_env.errors import DatasetRowsError
from agent_env.schema._describe import short

if TYPE_CHECKING:
    import datasets


def rows_dataset(rows: Sequence[Mapping[str, Any]], *, environment: str, split: str) -> datasets.Dataset:
    """The rows as a `datasets.Dataset` whose every row gives back its values as given (see the module docstring).

    Raises:
        DatasetRowsError: A value no dataset can give back; the message names the row, the key and the fix.
    """
    import datasets

    given = [dict(row) for row in rows]
    where = f"{environment}'s {split!r} dataset"
    for index, row in enumerate(given):
        for key, value in row.items():
            problem = not_json(value)
            if problem is not None:
                raise DatasetRowsError(f"row {index} of {where}: its {key!r} {problem}; {GIVE_JSON}")
    dataset = _built(given, where, features=None)
    changed = _changed_columns(given, dataset)
    if changed:
        features = datasets.Features(
            {
                column: datasets.Json() if column in changed else kind
                for column, kind in dataset.features.items()
            }
        )
        dataset = _built(given, where, features=features)
        _refuse_changed(given, dataset, where)
    return dataset


GIVE_JSON = (
    "give JSON values (strings, numbers up to 64-bit integers, booleans, null, lists and dicts of them)"
)
_INT64 = range(-(2**63), 2**63)


def not_json(value: Any, depth: int = 0) -> str | None:
    """What keeps `value` from being a JSON value a dataset gives back (a set, an integer past 64 bits, a key that is
    no string, anything else that is no JSON value), or None."""
    if depth > 100:
        return "nests more than 100 levels deep"
    if value is None or isinstance(value, bool | str | float):
        return None
    if isinstance(value, int):
        return None if value in _INT64 else f"is {value}, an integer past 64 bits (give it as a string)"
    if isinstance(value, list | tuple):
        return next((found for item in value if (found := not_json(item, depth + 1)) is not None), None)
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            return f"is {short(value)}, a dict with keys that are not strings"
        return next(
            (found for item in value.values() if (found := not_json(item, depth + 1)) is not None), None
        )
    return f"is {short(value)}, a {type(value).__name__}, which is no JSON value"


def _built(rows: list[dict[str, Any]], where: str, *, features: Any) -> datasets.Dataset:
    import datasets

    try:
        if features is None:
            return datasets.Dataset.from_list(rows, on_mixed_types="use_json")
        return datasets.Dataset.from_list(rows, features=features)
    except Exception as error:  # pyarrow's and datasets' errors: which row and key, found below
        raise _refusal(rows, where, error) from None


def _changed_columns(rows: list[dict[str, Any]], dataset: datasets.Dataset) -> set[str]:
    """The columns some row of which the dataset gives back otherwise than it was given."""
    changed: set[str] = set()
    for given, held in zip(rows, dataset, strict=True):
        changed |= {key for key, value in given.items() if not same_json(value, held.get(key))}
    return changed


def _refuse_changed(rows: list[dict[str, Any]], dataset: datasets.Dataset, where: str) -> None:
    for index, (given, held) in enumerate(zip(rows, dataset, strict=True)):
        for key, value in given.items():
            if not same_json(value, held.get(key)):
                raise DatasetRowsError(
                    f"row {index} of {where}: its {key!r} is {short(value)}, which a datasets.Dataset gives back as "
                    f"{short(held.get(key))}; {GIVE_JSON}"
                )


def _refusal(rows: list[dict[str, Any]], where: str, error: Exception) -> DatasetRowsError:
    """What a refused dataset says: the first row and key that cannot be stored, or, failing that, the error."""
    import datasets

    for index, row in enumerate(rows):
        for key, value in row.items():
            try:
                datasets.Dataset.from_list([{key: value}], on_mixed_types="use_json")
            except Exception as refused:
                said = " ".join(str(refused).split()) or type(refused).__name__
                return DatasetRowsError(
                    f"row {index} of {where}: its {key!r} ({short(value)}) cannot be stored in a datasets.Dataset "
                    f"({type(refused).__name__}: {said}); {GIVE_JSON}"
                )
    said = " ".join(str(error).split()) or type(error).__name__
    return DatasetRowsError(
        f"{where} cannot be stored in a datasets.Dataset ({type(error).__name__}: {said})"
    )


def same_json(given: Any, held: Any) -> bool:
    """Whether `held` is `given` as JSON reads both: the same types (an int is no float, a bool no int; a tuple is a
    list), the same keys, the same values, at every depth."""
    if isinstance(given, Mapping):
        return (
            isinstance(held, Mapping)
            and given.keys() == held.keys()
            and all(same_json(value, held[key]) for key, value in given.items())
        )
    if isinstance(given, list | tuple):
        return (
            isinstance(held, list | tuple)
            and len(given) == len(held)
            and all(same_json(a, b) for a, b in zip(given, held, strict=True))
        )
    if isinstance(given, bool) or isinstance(held, bool):
        return type(given) is type(held) and given == held
    if isinstance(given, int) and isinstance(held, int):
        return given == held
    if isinstance(given, float) and isinstance(held, float):
        return given == held or (given != given and held != held)  # NaN comes back NaN
    return type(given) is type(held) and given == held
