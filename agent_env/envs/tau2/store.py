"""An episode's database: every table of a domain's shared base, copied on write, one entity at a time.

The base (airline's is 7 MB of JSON: 300 flights, 500 users, 2,000 reservations) is parsed once per process and
never changed: it is read-only (`shared.share`), so a change to an entity a read gave raises `SharedBaseError`
instead of reaching every episode in the process. An episode reads the base's entities as they are and copies an
entity only when it first changes it (`Table.edit`), so starting an episode costs nothing and a live one holds only
what it changed. Two episodes' stores
over the same base are compared through what either changed, as tau2-bench compares whole databases: by each
entity's JSON with sorted keys, so an `int` and a `float` of the same value differ, as they do in its hash.

A store keeps a journal while a savepoint is open (`Store.savepoint`): each entity a change first touches is noted
with what it was, so `Store.undo` puts every table back exactly as it was at the savepoint. That is how a tool call
that fails changes nothing, whatever it had changed before it failed: one mechanism for every tool of every domain
(`Tau2Environment` opens a savepoint around each call). It costs a note per entity a call first changes, and a copy
only of an entity the episode had already changed (a base entity's first copy is what `edit` makes anyway).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


class Table(Generic[M]):
    """One table of an episode's database, by key, over a shared base table.

    Reading (`table[key]`, `get`, iterating) gives the base's entity itself while the episode has not changed it,
    read-only when the base is shared (`shared.share`, as every domain's is): changing it raises `SharedBaseError`.
    Changing goes through `edit`, which gives the episode's own copy, or `insert`.
    Iteration follows the base's order, then the keys this episode added, as a dict's would.
    """

    def __init__(self, base: Mapping[str, M], model: type[M], journal: Journal | None = None) -> None:
        self._base = base
        self._own: dict[str, M] = {}
        self.model = model
        self._journal = journal if journal is not None else Journal()

    def __getitem__(self, key: str) -> M:
        found = self._own.get(key)
        return found if found is not None else self._base[key]

    def get(self, key: str, default: M | None = None) -> M | None:
        found = self._own.get(key)
        if found is not None:
            return found
        return self._base.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._own or key in self._base

    def __iter__(self) -> Iterator[str]:
        yield from self._base
        yield from (key for key in self._own if key not in self._base)

    def __len__(self) -> int:
        return len(self._base) + sum(1 for key in self._own if key not in self._base)

    def keys(self) -> Iterator[str]:
        return iter(self)

    def values(self) -> Iterator[M]:
        return (self[key] for key in self)

    def items(self) -> Iterator[tuple[str, M]]:
        return ((key, self[key]) for key in self)

    def edit(self, key: str) -> M:
        """This episode's own copy of the entity at `key`, made on first use; change it freely.

        Raises:
            KeyError: No entity has that key.
        """
        own = self._own.get(key)
        if self._journal.levels:
            self._journal.note(self, key, own)
        if own is None:
            own = self._own[key] = self._base[key].model_copy(deep=True)
        return own

    def insert(self, key: str, entity: M) -> None:
        """Put `entity` at `key`, new or in place of what is there."""
        if self._journal.levels:
            self._journal.note(self, key, self._own.get(key), copied=False)
        self._own[key] = entity

    def changed(self) -> set[str]:
        """The keys whose entity this episode has copied or put."""
        return set(self._own)

    def same_as(self, other: Table[M]) -> bool:
        """Whether the two tables hold the same entities (both over the same base): compared where either changed."""
        for key in self.changed() | other.changed():
            mine, theirs = self.get(key), other.get(key)
            if mine is theirs:
                continue
            if mine is None or theirs is None or canonical(mine) != canonical(theirs):
                return False
        return True


_ABSENT: Any = object()
"""What a journal notes for an entity the episode had not changed: undoing puts the base's back."""


class Journal:
    """What the tables of one store changed since each open savepoint: for every entity first touched since then,
    what the episode held of it before (its own copy, or none: the base's). Savepoints nest (a user's call runs inside
    the agent's `message_user`); releasing one hands what it noted to the one around it."""

    def __init__(self) -> None:
        self.levels: list[dict[tuple[int, str], tuple[Table[Any], str, Any]]] = []

    def note(self, table: Table[Any], key: str, own: Any, *, copied: bool = True) -> None:
        """Note what `table` held at `key` (`own`: its own copy, or None) before a change, once per savepoint. An own
        copy that the change will alter in place (`copied`) is kept as a copy; one it replaces is kept as it is."""
        level = self.levels[-1]
        slot = (id(table), key)
        if slot not in level:
            if own is None:
                level[slot] = (table, key, _ABSENT)
            else:
                level[slot] = (table, key, own.model_copy(deep=True) if copied else own)

    def undo(self) -> bool:
        """Put back what the innermost savepoint noted, and close it; whether anything had changed."""
        level = self.levels.pop()
        for table, key, before in level.values():
            if before is _ABSENT:
                table._own.pop(key, None)
            else:
                table._own[key] = before
        return bool(level)

    def release(self) -> None:
        """Close the innermost savepoint, keeping its changes (the savepoint around it can still undo them)."""
        level = self.levels.pop()
        if self.levels:
            outer = self.levels[-1]
            for slot, noted in level.items():
                outer.setdefault(slot, noted)


def canonical(entity: BaseModel) -> str:
    """An entity as tau2-bench hashes a database: its dump as JSON, keys sorted, anything else as `str`."""
    return json.dumps(entity.model_dump(), sort_keys=True, default=str)


class Store:
    """One episode's database: a `Table` per field of the base model, each a `dict[str, Model]`.

    A domain declares its tables as annotations on a subclass (`flights: Table[Flight]`) for its tools to read and
    change them by attribute; the tables themselves come from the base.
    """

    def __init__(self, base: BaseModel) -> None:
        self.tables: dict[str, Table[Any]] = {}
        self.journal = Journal()
        for name, field in type(base).model_fields.items():
            table = Table(getattr(base, name), _value_model(field.annotation, name), self.journal)
            self.tables[name] = table
            setattr(self, name, table)

    def savepoint(self) -> None:
        """Start noting changes, so that `undo` can put the store back as it is now; savepoints nest. Close each with
        `undo` or `release`."""
        self.journal.levels.append({})

    def undo(self) -> bool:
        """Put the store back as it was at the innermost open savepoint, and close it; whether anything changed."""
        return self.journal.undo()

    def release(self) -> None:
        """Close the innermost open savepoint, keeping what changed since."""
        self.journal.release()

    def same_as(self, other: Store) -> bool:
        """Whether the two databases are equal, as tau2-bench's hash comparison would find them."""
        return self.tables.keys() == other.tables.keys() and all(
            table.same_as(other.tables[name]) for name, table in self.tables.items()
        )

    def changed(self) -> dict[str, set[str]]:
        """What this episode changed: the keys of each table it copied or put into."""
        return {name: table.changed() for name, table in self.tables.items() if table.changed()}

    def update(self, data: Mapping[str, Any]) -> None:
        """Merge `data` (`{table: {key: fields}}`) into the database as tau2-bench's initialization data does:
        mappings merged key by key at every depth, anything else replaced, each entity validated again.

        Raises:
            KeyError: A table the database does not have.
            pydantic.ValidationError: A merged entity that is not valid.
        """
        for name, entries in data.items():
            table = self.tables.get(name)
            if table is None:
                raise KeyError(f"the database has no table {name!r}; it has {', '.join(self.tables)}")
            for key, fields in entries.items():
                current = table.get(key)
                merged = _merged(current.model_dump() if current is not None else {}, fields)
                table.insert(key, table.model.model_validate(merged))


def _merged(into: Any, update: Any) -> Any:
    if isinstance(into, dict) and isinstance(update, Mapping):
        merged = dict(into)
        for key, value in update.items():
            merged[key] = _merged(merged.get(key), value)
        return merged
    return update


def _value_model(annotation: Any, name: str) -> type[BaseModel]:
    """The model a `dict[str, Model]` field holds."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is dict and len(args) == 2 and issubclass(args[1], BaseModel):
        return typing.cast(type[BaseModel], args[1])
    raise TypeError(f"table {name!r} must be a dict[str, Model] field; it is {annotation!r}")
