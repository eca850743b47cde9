"""`agent_env/envs/tau2/store.py`: an episode reads the shared base and copies only what it changes; two stores are
equal exactly when tau2-bench's hash of their whole databases would be."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from agent_env.envs.tau2.store import Store, Table


class Card(BaseModel):
    id: str
    balance: float
    tags: list[str] = []
    note: str | None = None


class Wallet(BaseModel):
    cards: dict[str, Card]
    owners: dict[str, Card]


class WalletStore(Store):
    cards: Table[Card]
    owners: Table[Card]


@pytest.fixture
def base() -> Wallet:
    return Wallet.model_validate(
        {"cards": {"a": {"id": "a", "balance": 10}, "b": {"id": "b", "balance": 5.5}}, "owners": {}}
    )


def dumped(model: BaseModel) -> str:
    return json.dumps(model.model_dump(), sort_keys=True)


def test_reads_share_the_base_and_an_edit_copies_only_that_entity(base):
    store = WalletStore(base)
    before = dumped(base)
    assert store.cards["a"] is base.cards["a"]
    store.cards.edit("a").balance -= 3
    store.cards.edit("a").tags.append("used")
    assert store.cards["a"].balance == 7.0 and store.cards["a"] is not base.cards["a"]
    assert store.cards["b"] is base.cards["b"]
    assert dumped(base) == before
    assert store.changed() == {"cards": {"a"}}


def test_iteration_keeps_the_bases_order_then_what_the_episode_added(base):
    store = WalletStore(base)
    store.cards.insert("c", Card(id="c", balance=1))
    store.cards.edit("a")
    assert list(store.cards) == ["a", "b", "c"] and len(store.cards) == 3
    assert [card.id for card in store.cards.values()] == ["a", "b", "c"]
    assert "c" in store.cards and "z" not in store.cards and store.cards.get("z") is None
    with pytest.raises(KeyError):
        store.cards.edit("z")


def test_stores_are_equal_as_their_whole_databases_would_hash(base):
    one, other = WalletStore(base), WalletStore(base)
    assert one.same_as(other)
    one.cards.edit("a")  # copied, unchanged
    assert one.same_as(other)
    one.cards.edit("a").balance = 11
    assert not one.same_as(other)
    other.cards.edit("a").balance = 11
    assert one.same_as(other)
    one.cards.insert("c", Card(id="c", balance=1))
    assert not one.same_as(other) and not other.same_as(one)


def test_an_int_and_a_float_of_the_same_value_differ_as_in_tau2_benchs_hash(base):
    class Loose(BaseModel):
        value: int | float

    class Bag(BaseModel):
        items: dict[str, Loose]

    class BagStore(Store):
        items: Table[Loose]

    shared = Bag(items={"x": Loose(value=1)})
    one, other = BagStore(shared), BagStore(shared)
    one.items.insert("x", Loose(value=1.0))
    assert not one.same_as(other)


def test_an_update_merges_mappings_at_every_depth_replaces_the_rest_and_validates(base):
    store = WalletStore(base)
    store.update({"cards": {"a": {"balance": 1, "tags": ["x"]}, "n": {"id": "n", "balance": 2}}})
    assert store.cards["a"].model_dump() == {"id": "a", "balance": 1.0, "tags": ["x"], "note": None}
    assert store.cards["n"].balance == 2.0
    with pytest.raises(KeyError, match="no table 'wallets'; it has cards, owners"):
        store.update({"wallets": {}})
    with pytest.raises(ValidationError):
        store.update({"cards": {"a": {"balance": "lots"}}})


def test_a_table_must_hold_models_by_key():
    class Odd(BaseModel):
        cards: list[Card]

    with pytest.raises(TypeError, match="table 'cards' must be a dict\\[str, Model\\] field"):
        Store(Odd(cards=[]))


def test_undo_puts_every_table_back_as_it_was_at_the_savepoint(base):
    store = WalletStore(base)
    store.cards.edit("a").balance = 1.0  # changed before the savepoint: kept
    before = {
        name: {key: dumped(store.tables[name][key]) for key in store.tables[name]} for name in store.tables
    }
    store.savepoint()
    store.cards.edit("a").balance = 2.0  # an own copy, changed in place
    store.cards.edit("a").tags.append("x")
    store.cards.edit("b").balance = 0.0  # a base entity, copied
    store.owners.insert("z", Card(id="z", balance=9))  # a new one
    assert store.undo() is True
    after = {
        name: {key: dumped(store.tables[name][key]) for key in store.tables[name]} for name in store.tables
    }
    assert after == before
    assert store.changed() == {"cards": {"a"}} and store.cards["b"] is base.cards["b"]


def test_savepoints_nest_and_a_released_one_is_undone_with_the_one_around_it(base):
    store = WalletStore(base)
    store.savepoint()
    store.cards.edit("a").balance = 2.0
    store.savepoint()
    store.cards.edit("a").balance = 3.0
    store.cards.edit("b").balance = 3.0
    assert store.undo() is True  # the inner one: back to 2.0, b untouched
    assert (store.cards["a"].balance, store.cards["b"] is base.cards["b"]) == (2.0, True)
    store.savepoint()
    store.owners.insert("z", Card(id="z", balance=1))
    store.release()  # kept, for now
    assert "z" in store.owners
    assert store.undo() is True  # the outer one undoes the released one too
    assert store.changed() == {} and store.cards["a"] is base.cards["a"]
    store.savepoint()
    assert store.undo() is False  # nothing changed


def test_without_a_savepoint_nothing_is_noted(base):
    store = WalletStore(base)
    store.cards.edit("a").balance = 2.0
    assert store.journal.levels == []
