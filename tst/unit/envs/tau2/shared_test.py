"""`agent_env/envs/tau2/shared.py`: a domain's shared base refuses a change in place at any depth, saying to use
`Table.edit`, and reads, dumps, compares, copies and pickles as before; what `Table.edit` gives is the episode's own.
"""

from __future__ import annotations

import copy
import pickle
import warnings
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from agent_env import AgentEnv, tool
from agent_env.envs.tau2.mock import Tau2Mock
from agent_env.envs.tau2.shared import SharedBaseError, is_shared, share
from agent_env.envs.tau2.store import Store, Table
from agent_env.errors import ToolFailedError


class Landed(BaseModel):
    status: Literal["landed"]
    at: str


class Cancelled(BaseModel):
    status: Literal["cancelled"]


class Leg(BaseModel):
    number: str
    seats: dict[str, int]
    dates: dict[str, Annotated[Landed | Cancelled, Field(discriminator="status")]] = {}


class Trip(BaseModel):
    id: str
    legs: list[Leg]
    tags: list[str] = []
    note: str | None = None


class Book(BaseModel):
    trips: dict[str, Trip]


class BookStore(Store):
    trips: Table[Trip]


RAW = {
    "trips": {
        "T1": {
            "id": "T1",
            "legs": [
                {
                    "number": "HAT1",
                    "seats": {"economy": 3},
                    "dates": {
                        "2024-05-01": {"status": "landed", "at": "10:00"},
                        "2024-05-02": {"status": "cancelled"},
                    },
                }
            ],
            "tags": ["a"],
        }
    }
}


@pytest.fixture
def book() -> Book:
    shared = Book.model_validate(RAW)
    share(shared)
    return shared


@pytest.mark.parametrize(
    ("change", "refused"),
    [
        (lambda trip: setattr(trip, "note", "x"), "Trip.note of an entity of the shared base cannot be set"),
        (lambda trip: delattr(trip, "note"), "Trip.note of an entity of the shared base cannot be deleted"),
        (lambda trip: setattr(trip.legs[0], "number", "HAT2"), "Leg.number of an entity of the shared base"),
        (lambda trip: trip.tags.append("b"), "a list inside an entity of the shared base cannot be changed"),
        (lambda trip: trip.legs.pop(), "a list inside an entity of the shared base cannot be changed"),
        (
            lambda trip: trip.legs[0].seats.update(economy=2),
            "a dict inside the shared base cannot be changed",
        ),
        (
            lambda trip: trip.legs[0].seats.__setitem__("economy", 2),
            "a dict inside the shared base cannot be",
        ),
        (lambda trip: setattr(trip.legs[0].dates["2024-05-01"], "at", "11:00"), "Landed.at of an entity"),
    ],
)
def test_a_change_in_place_at_any_depth_is_refused_saying_to_use_table_edit(book, change, refused):
    before = book.model_dump_json()
    with pytest.raises(SharedBaseError) as raised:
        change(BookStore(book).trips["T1"])
    assert refused in str(raised.value)
    assert "Change the episode's own copy, which Table.edit gives (`self.db.<table>.edit(key)`" in str(
        raised.value
    )
    assert isinstance(raised.value, TypeError) and book.model_dump_json() == before


def test_what_table_edit_gives_is_the_episodes_own_at_any_depth(book):
    store = BookStore(book)
    trip = store.trips.edit("T1")
    assert type(trip) is Trip and not is_shared(trip.legs) and not is_shared(trip.legs[0].dates["2024-05-01"])
    trip.note = "mine"
    trip.tags.append("b")
    trip.legs[0].seats["economy"] = 2
    trip.legs[0].dates["2024-05-01"].at = "11:00"
    assert store.trips["T1"] is trip and BookStore(book).trips["T1"].model_dump() == RAW["trips"]["T1"] | {
        "note": None
    }


def test_the_shared_base_reads_dumps_compares_and_pickles_as_before(book):
    plain = Book.model_validate(RAW)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no serializer warning for the twins, unions included
        assert book.model_dump_json() == plain.model_dump_json() and book.model_dump() == plain.model_dump()
    trip = book.trips["T1"]
    assert (
        isinstance(trip, Trip) and trip == plain.trips["T1"] and plain.trips["T1"] == trip and book == plain
    )
    assert trip.tags == ["a"] and len(trip.legs) == 1 and dict(trip.legs[0].seats) == {"economy": 3}
    unpickled = pickle.loads(pickle.dumps(trip))
    assert type(unpickled) is Trip and unpickled == trip and not is_shared(unpickled.legs)
    shallow = trip.model_copy(update={"note": "n"})
    assert (
        type(shallow) is Trip and shallow.note == "n" and is_shared(shallow.legs)
    )  # what it holds stays shared
    assert (
        type(copy.deepcopy(trip)) is Trip
        and copy.copy(trip.tags) == ["a"]
        and type(copy.copy(trip.tags)) is list
    )
    share(book)  # again: nothing changes
    assert book.model_dump_json() == plain.model_dump_json()


class Careless(Tau2Mock):
    """A domain whose tools change what a read gave, as a subclass might by mistake."""

    @tool
    def rename(self, user_id: str, name: str) -> str:
        """Rename a user, wrongly in place."""
        self.db.users[user_id].name = name
        return "renamed"

    @tool
    def assign(self, user_id: str, task_id: str) -> str:
        """Assign a task, wrongly in place."""
        self.db.users[user_id].tasks.append(task_id)
        return "assigned"


def test_a_domain_that_changes_a_read_entity_fails_that_call_and_no_other_episode_sees_it():
    env = AgentEnv.local(Careless)
    with env.open() as session, env.open() as other:
        for opened in (session, other):
            opened.reset(task_id="create_task_1")
        for name, arguments in (("rename", {"name": "Mallory"}), ("assign", {"task_id": "task_9"})):
            with pytest.raises(
                ToolFailedError, match=rf"tool '{name}' failed: SharedBaseError: .*Table\.edit gives"
            ):
                session.call_tool(name, {"user_id": "user_1", **arguments})
        member = other.environment.db.users["user_1"]
        assert member.name != "Mallory" and "task_9" not in member.tasks
