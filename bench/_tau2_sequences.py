"""The call sequences `bench/tau2_upstream.py` runs through agent_env and through tau2-bench: every task's reference
actions, each of their writes dropped or changed, seeded fuzzed sequences over the database's real ids, and the
scripted episodes both sides score. Built from agent_env's copy of the data only; the two sides are held to the same
base database before any of it runs."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from typing import Any

from agent_env.envs.tau2.tasks import Task

Call = tuple[str, str, dict[str, Any]]
"""One call of a sequence: (requestor, tool name, arguments)."""
Step = tuple[str, str, str, dict[str, Any]]
"""One step of an episode: ("call", requestor, name, arguments), ("say", "", text, {}) (a message to the user),
("aside", "", text, {}) (text in the same message as the agent's call that follows it, which no user reads), or
("ask", "", text, {}) (a message asking the scripted user to make its own calls, which it makes in its reply)."""


def reference(task: Task) -> list[Call]:
    criteria = task.evaluation_criteria
    return (
        [(a.requestor, a.name, copy.deepcopy(a.arguments)) for a in (criteria.actions or [])]
        if criteria
        else []
    )


def variants(domain: str, task: Task, base: Any, writes: set[str]) -> Iterator[tuple[str, list[Call]]]:
    """The task's reference actions with one write dropped, and with one argument of one write changed, each way."""
    calls = reference(task)
    for index, (requestor, name, arguments) in enumerate(calls):
        if name not in writes:
            continue
        yield f"write {index} ({name}) dropped", calls[:index] + calls[index + 1 :]
        for key, changed in CHANGES[domain](base, name, arguments):
            yield (
                f"write {index} ({name}) {key} changed",
                [*calls[:index], (requestor, name, changed), *calls[index + 1 :]],
            )


def airline_changes(db: Any, name: str, arguments: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    users, airports = list(db.users), sorted({flight.origin for flight in db.flights.values()})
    for key, value in arguments.items():
        new = copy.deepcopy(arguments)
        reservation = db.reservations.get(arguments.get("reservation_id", ""))
        owner = db.users.get(reservation.user_id if reservation else arguments.get("user_id", ""))
        if key == "user_id":
            new[key] = users[(users.index(value) + 1) % len(users)] if value in users else users[0]
        elif key == "reservation_id":
            others = [r for r in owner.reservations if r != value] if owner else []
            new[key] = others[0] if others else "4WQ150"
        elif key == "payment_id":
            others = [p for p in owner.payment_methods if p != value] if owner else []
            if not others:
                continue
            new[key] = others[0]
        elif key in ("origin", "destination"):
            new[key] = airports[(airports.index(value) + 1) % len(airports)] if value in airports else "JFK"
        elif key == "cabin":
            new[key] = "business" if value != "business" else "economy"
        elif key == "flight_type":
            new[key] = "round_trip" if value == "one_way" else "one_way"
        elif key == "insurance":
            new[key] = "yes" if value == "no" else "no"
        elif key in ("total_baggages", "nonfree_baggages", "amount"):
            new[key] = value + 1
        elif key == "flights" and value:
            day = int(value[-1]["date"][-2:])
            new[key][-1]["date"] = f"2024-05-{day % 30 + 1:02d}"
        elif key == "passengers" and value:
            new[key][0]["first_name"] += "a"
        elif key == "payment_methods" and value:
            new[key][0]["amount"] += 1
        else:
            continue
        yield key, new


def retail_changes(db: Any, name: str, arguments: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    order = db.orders.get(arguments.get("order_id", ""))
    user = db.users.get(order.user_id if order else arguments.get("user_id", ""))
    for key, value in arguments.items():
        new = copy.deepcopy(arguments)
        if key == "order_id":
            others = [o for o in user.orders if o != value] if user else []
            new[key] = others[0] if others else "#W0000000"
        elif key == "reason":
            new[key] = "ordered by mistake" if value == "no longer needed" else "no longer needed"
        elif key == "item_ids" and value:
            new[key] = value[:-1]
            if "new_item_ids" in arguments:
                new["new_item_ids"] = arguments["new_item_ids"][:-1]
        elif key == "new_item_ids" and value and order is not None:
            old = next((item for item in order.items if item.item_id == arguments["item_ids"][-1]), None)
            if old is None:
                continue
            choices = [
                v.item_id
                for v in db.products[old.product_id].variants.values()
                if v.available and v.item_id not in (value[-1], old.item_id)
            ]
            if not choices:
                continue
            new[key] = [*value[:-1], choices[0]]
        elif key == "payment_method_id":
            others = [m for m in user.payment_methods if m != value] if user else []
            new[key] = others[0] if others else "gift_card_0000000"
        elif key == "user_id":
            new[key] = next(other for other in db.users if other != value)
        elif isinstance(value, str):
            new[key] = f"{value} B"
        else:
            continue
        yield key, new


def mock_changes(db: Any, name: str, arguments: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for key, value in arguments.items():
        new = copy.deepcopy(arguments)
        if key == "status":
            new[key] = "pending" if value == "completed" else "completed"
        elif key == "task_id":
            new[key] = "task_2" if value != "task_2" else "task_1"
        elif key == "user_id":
            new[key] = "user_2"
        elif isinstance(value, str):
            new[key] = f"{value} B"
        else:
            continue
        yield key, new


def telecom_changes(db: Any, name: str, arguments: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    customer = db.customers.get(arguments.get("customer_id", ""))
    for key, value in arguments.items():
        new = copy.deepcopy(arguments)
        if key == "customer_id":
            new[key] = next(other for other in db.customers if other != value)
        elif key == "line_id":
            others = [line for line in (customer.line_ids if customer else []) if line != value]
            new[key] = others[0] if others else "L1004"
        elif key == "bill_id":
            others = [bill for bill in (customer.bill_ids if customer else []) if bill != value]
            new[key] = others[0] if others else "B1004"
        elif key == "gb_amount":
            new[key] = value + 1.0
        elif key == "mode":
            new[key] = "4g_only" if value != "4g_only" else "3g_only"
        elif key == "app_name":
            new[key] = "browser" if value != "browser" else "messaging"
        elif key == "permission":
            new[key] = "storage" if value != "storage" else "sms"
        elif isinstance(value, str):
            new[key] = f"{value} B"
        else:
            continue
        yield key, new


CHANGES: dict[str, Callable[[Any, str, dict[str, Any]], Iterator[tuple[str, dict[str, Any]]]]] = {
    "airline": airline_changes,
    "retail": retail_changes,
    "mock": mock_changes,
    "telecom": telecom_changes,
}

EXPRESSIONS = [
    "2 + 2", "12.5 * 3", "(100 - 7) / 3", "10 / 4", "0.1 + 0.2", "1 / 0", "3 +", "", "-5", "2 ** 10", "(1)(2)",
    "abc", "1e3", "7 // 2", "100 * 1.075", "((3)", "1000000 * 1000000", "5 - - 5",
]  # fmt: skip


TRANSFER: Call = ("assistant", "transfer_to_human_agents", {"summary": "The user wants a human agent."})


class AirlineFuzz:
    """Sequences of one user's airline calls, valid and not: their reservations (and the ones a sequence books),
    their payment methods and others', flights on dates of every status, bookings priced right and off by one,
    counts sent as 2.0 now and then."""

    CABINS = ("basic_economy", "economy", "business")

    def __init__(self, db: Any, rng: random.Random) -> None:
        self.db, self.rng = db, rng
        self.flights = list(db.flights.values())
        self.airports = sorted({flight.origin for flight in self.flights})
        self.user = db.users[rng.choice(list(db.users))]
        others = rng.sample(list(db.users.values()), 2)
        self.other_methods = [method for other in others for method in other.payment_methods]

    def sequence(self) -> list[Call]:
        kinds = [name for name in dir(self) if name.startswith("call_")]
        calls: list[Call] = []
        for _ in range(self.rng.randint(1, 8)):
            name, arguments = getattr(self, self.rng.choice(kinds))()
            calls.append(("assistant", name, arguments))
        if self.rng.random() < 0.04:  # past the three new reservations, or certificates, one user may have
            make = self.rng.choice([self.call_book_reservation, self.call_send_certificate])
            calls += [("assistant", *make()) for _ in range(4)]
        return [*calls, TRANSFER] if self.rng.random() < 0.05 else calls

    # What the calls are made of.

    def whole(self, number: int) -> int | float:
        """A count as JSON may send it: now and then as 2.0, which the schema's integer admits."""
        return float(number) if self.rng.random() < 0.1 else number

    def user_id(self) -> str:
        return self.user.user_id if self.rng.random() < 0.9 else "nobody_1234"

    def reservation_id(self) -> str:
        own = self.user.reservations
        if own and self.rng.random() < 0.8:
            return str(self.rng.choice(own))
        return self.rng.choice([*own, "HATHAT", "HATHAU", "ZZZZZZ"])

    def payment_id(self) -> str:
        if self.rng.random() < 0.85:
            return self.rng.choice(list(self.user.payment_methods))
        return self.rng.choice([*self.other_methods, "credit_card_0000000"])

    def leg(self) -> dict[str, str]:
        flight = self.rng.choice(self.flights)
        dates = list(flight.dates)
        available = [date for date in dates if flight.dates[date].status == "available"]
        date = self.rng.choice(available if available and self.rng.random() < 0.8 else dates)
        return {"flight_number": flight.flight_number if self.rng.random() < 0.97 else "HAT999", "date": date}

    def passengers(self, count: int) -> list[dict[str, str]]:
        saved = [passenger.model_dump() for passenger in self.user.saved_passengers]
        return [
            saved[i]
            if i < len(saved) and self.rng.random() < 0.5
            else {
                "first_name": self.rng.choice(["Ana", "Ben", "Chen"]),
                "last_name": "Test",
                "dob": f"1990-01-0{i + 1}",
            }
            for i in range(count)
        ]

    def fare(self, leg: dict[str, str], cabin: str) -> int:
        flight = self.db.flights.get(leg["flight_number"])
        on_date = flight.dates.get(leg["date"]) if flight is not None else None
        prices = getattr(on_date, "prices", None)
        return int(prices[cabin]) if prices is not None else 100

    def payments(self, price: int) -> list[dict[str, Any]]:
        """The price split over one or two of the user's payment methods."""
        methods = list(self.user.payment_methods)
        chosen = self.rng.sample(methods, min(len(methods), self.rng.choice([1, 1, 2])))
        if len(chosen) == 2:
            first = self.rng.randint(0, price)
            return [
                {"payment_id": chosen[0], "amount": self.whole(first)},
                {"payment_id": chosen[1], "amount": price - first},
            ]
        return [{"payment_id": chosen[0] if chosen else "credit_card_0000000", "amount": self.whole(price)}]

    # The calls, one kind each (book_reservation twice as often).

    def call_get_user_details(self) -> tuple[str, dict[str, Any]]:
        return "get_user_details", {"user_id": self.user_id()}

    def call_get_reservation_details(self) -> tuple[str, dict[str, Any]]:
        return "get_reservation_details", {"reservation_id": self.reservation_id()}

    def call_cancel_reservation(self) -> tuple[str, dict[str, Any]]:
        return "cancel_reservation", {"reservation_id": self.reservation_id()}

    def call_get_flight_status(self) -> tuple[str, dict[str, Any]]:
        leg = self.leg()
        return "get_flight_status", leg if self.rng.random() < 0.9 else {**leg, "date": "2024-06-30"}

    def call_search_direct_flight(self) -> tuple[str, dict[str, Any]]:
        return "search_direct_flight", self.route()

    def call_search_onestop_flight(self) -> tuple[str, dict[str, Any]]:
        return "search_onestop_flight", self.route()

    def route(self) -> dict[str, str]:
        origin = self.rng.choice(self.airports)
        destination = self.rng.choice([airport for airport in self.airports if airport != origin])
        return {
            "origin": origin,
            "destination": destination,
            "date": f"2024-05-{self.rng.randint(1, 31):02d}",
        }

    def call_list_all_airports(self) -> tuple[str, dict[str, Any]]:
        return "list_all_airports", {}

    def call_calculate(self) -> tuple[str, dict[str, Any]]:
        return "calculate", {"expression": self.rng.choice(EXPRESSIONS)}

    def call_send_certificate(self) -> tuple[str, dict[str, Any]]:
        return "send_certificate", {
            "user_id": self.user_id(),
            "amount": self.whole(self.rng.choice([50, 100, 250])),
        }

    def call_update_reservation_baggages(self) -> tuple[str, dict[str, Any]]:
        total = self.rng.randint(0, 5)
        return "update_reservation_baggages", {
            "reservation_id": self.reservation_id(),
            "total_baggages": self.whole(total),
            "nonfree_baggages": self.whole(self.rng.randint(0, total)),
            "payment_id": self.payment_id(),
        }

    def call_update_reservation_flights(self) -> tuple[str, dict[str, Any]]:
        reservation_id = self.reservation_id()
        found = self.db.reservations.get(reservation_id)
        legs = (
            [{"flight_number": f.flight_number, "date": f.date} for f in found.flights]
            if found
            else [self.leg()]
        )
        if self.rng.random() < 0.6:
            legs[self.rng.randrange(len(legs))] = self.leg()
        return "update_reservation_flights", {
            "reservation_id": reservation_id,
            "cabin": self.rng.choice(self.CABINS),
            "flights": legs,
            "payment_id": self.payment_id(),
        }

    def call_update_reservation_passengers(self) -> tuple[str, dict[str, Any]]:
        reservation_id = self.reservation_id()
        found = self.db.reservations.get(reservation_id)
        count = len(found.passengers) if found else 1
        count += 0 if self.rng.random() < 0.8 else 1
        return "update_reservation_passengers", {
            "reservation_id": reservation_id,
            "passengers": self.passengers(count),
        }

    def call_book_reservation(self) -> tuple[str, dict[str, Any]]:
        cabin = self.rng.choice(self.CABINS)
        legs = [self.leg() for _ in range(self.rng.choice([1, 1, 2]))]
        count, nonfree = self.rng.randint(1, 3), self.rng.randint(0, 2)
        insurance = self.rng.choice(["yes", "no"])
        price = sum(self.fare(leg, cabin) for leg in legs) * count + 50 * nonfree
        price += (30 * count if insurance == "yes" else 0) + (
            self.rng.choice([-1, 1]) if self.rng.random() < 0.2 else 0
        )
        first = self.db.flights.get(legs[0]["flight_number"])
        return "book_reservation", {
            "user_id": self.user.user_id,
            "origin": first.origin if first is not None else self.rng.choice(self.airports),
            "destination": self.rng.choice(self.airports),
            "flight_type": self.rng.choice(["one_way", "round_trip"]),
            "cabin": cabin,
            "flights": legs,
            "passengers": self.passengers(count),
            "payment_methods": self.payments(price),
            "total_baggages": self.whole(nonfree + self.rng.randint(0, 2)),
            "nonfree_baggages": self.whole(nonfree),
            "insurance": insurance,
        }

    call_book_reservation_again = call_book_reservation


class RetailFuzz:
    """Sequences of one user's retail calls, valid and not: their orders (in every status) and now and then
    another's, items repeated and swapped for variants available or not (or of another product), their payment
    methods and others', lookups by email and by name in any case."""

    REASONS = ("no longer needed", "ordered by mistake")

    def __init__(self, db: Any, rng: random.Random) -> None:
        self.db, self.rng = db, rng
        self.users = list(db.users.values())
        self.user = rng.choice(self.users)
        self.orders = list(db.orders.values())
        self.items = [item_id for product in db.products.values() for item_id in product.variants]
        self.address = {
            "address1": "2 Oak St", "address2": rng.choice(["", "Apt 4"]), "city": "Reno", "state": "NV",
            "country": "USA", "zip": "89501",
        }  # fmt: skip

    def sequence(self) -> list[Call]:
        kinds = [name for name in dir(self) if name.startswith("call_")]
        calls: list[Call] = []
        for _ in range(self.rng.randint(1, 8)):
            order = self.order() if self.rng.random() < 0.97 else None
            name, arguments = getattr(self, self.rng.choice(kinds))(order)
            calls.append(("assistant", name, arguments))
        return [*calls, TRANSFER] if self.rng.random() < 0.05 else calls

    # What the calls are made of.

    def order(self) -> Any:
        if self.user.orders and self.rng.random() < 0.85:
            return self.db.orders[self.rng.choice(self.user.orders)]
        return self.rng.choice(self.orders)

    def swap(self, order: Any) -> tuple[list[str], list[str]]:
        """Some of the order's items (one now and then twice), and for each a variant of its product (or,
        rarely, any item), the list one short now and then."""
        if order is None:
            return [], []
        items = [item.item_id for item in order.items]
        olds = self.rng.sample(items, self.rng.randint(0, len(items)))
        if olds and self.rng.random() < 0.1:
            olds.append(olds[0])
        news = []
        for old in olds:
            product = next(item.product_id for item in order.items if item.item_id == old)
            pool = list(self.db.products[product].variants) if self.rng.random() < 0.95 else self.items
            news.append(self.rng.choice(pool))
        if news and self.rng.random() < 0.05:
            news.pop()
        return olds, news

    def method(self, order: Any) -> str:
        owner = self.db.users.get(order.user_id) if order is not None else self.user
        roll = self.rng.random()
        if roll < 0.8 and owner is not None:
            return self.rng.choice(list(owner.payment_methods))
        if roll < 0.95:
            return self.rng.choice(list(self.rng.choice(self.users).payment_methods))
        return "gift_card_0000000"

    @staticmethod
    def order_id(order: Any) -> str:
        return order.order_id if order is not None else "#W0000000"

    def user_id(self) -> str:
        return self.user.user_id if self.rng.random() < 0.9 else "nobody_1234"

    # The calls, one kind each (modify_pending_order_items twice as often).

    def call_cancel_pending_order(self, order: Any) -> tuple[str, dict[str, Any]]:
        reason = self.rng.choice(self.REASONS) if self.rng.random() < 0.97 else "changed my mind"
        return "cancel_pending_order", {"order_id": self.order_id(order), "reason": reason}

    def call_exchange_delivered_order_items(self, order: Any) -> tuple[str, dict[str, Any]]:
        return "exchange_delivered_order_items", self.item_change(order)

    def call_modify_pending_order_items(self, order: Any) -> tuple[str, dict[str, Any]]:
        return "modify_pending_order_items", self.item_change(order)

    call_modify_pending_order_items_again = call_modify_pending_order_items

    def item_change(self, order: Any) -> dict[str, Any]:
        olds, news = self.swap(order)
        return {
            "order_id": self.order_id(order),
            "item_ids": olds,
            "new_item_ids": news,
            "payment_method_id": self.method(order),
        }

    def call_return_delivered_order_items(self, order: Any) -> tuple[str, dict[str, Any]]:
        olds, _ = self.swap(order)
        return "return_delivered_order_items", {
            "order_id": self.order_id(order),
            "item_ids": olds,
            "payment_method_id": self.method(order),
        }

    def call_modify_pending_order_address(self, order: Any) -> tuple[str, dict[str, Any]]:
        return "modify_pending_order_address", {"order_id": self.order_id(order), **self.address}

    def call_modify_pending_order_payment(self, order: Any) -> tuple[str, dict[str, Any]]:
        return "modify_pending_order_payment", {
            "order_id": self.order_id(order),
            "payment_method_id": self.method(order),
        }

    def call_modify_user_address(self, order: Any) -> tuple[str, dict[str, Any]]:
        return "modify_user_address", {"user_id": self.user_id(), **self.address}

    def call_get_order_details(self, order: Any) -> tuple[str, dict[str, Any]]:
        return "get_order_details", {"order_id": self.order_id(order)}

    def call_get_user_details(self, order: Any) -> tuple[str, dict[str, Any]]:
        return "get_user_details", {"user_id": self.user_id()}

    def call_get_product_details(self, order: Any) -> tuple[str, dict[str, Any]]:
        known = order is not None and order.items and self.rng.random() < 0.9
        return "get_product_details", {
            "product_id": order.items[0].product_id if known else self.rng.choice(self.items)
        }

    def call_get_item_details(self, order: Any) -> tuple[str, dict[str, Any]]:
        return "get_item_details", {
            "item_id": self.rng.choice(self.items) if self.rng.random() < 0.95 else "0000000000"
        }

    def call_find_user_id_by_email(self, order: Any) -> tuple[str, dict[str, Any]]:
        email = self.user.email if self.rng.random() < 0.9 else "nobody@example.com"
        return "find_user_id_by_email", {"email": email.upper() if self.rng.random() < 0.3 else email}

    def call_find_user_id_by_name_zip(self, order: Any) -> tuple[str, dict[str, Any]]:
        first = self.user.name.first_name
        return "find_user_id_by_name_zip", {
            "first_name": first.lower() if self.rng.random() < 0.3 else first,
            "last_name": self.user.name.last_name,
            "zip": self.user.address.zip if self.rng.random() < 0.9 else "00000",
        }

    def call_list_all_product_types(self, order: Any) -> tuple[str, dict[str, Any]]:
        return "list_all_product_types", {}

    def call_calculate(self, order: Any) -> tuple[str, dict[str, Any]]:
        return "calculate", {"expression": self.rng.choice(EXPRESSIONS)}


class MockFuzz:
    """Sequences of task-list calls on real and unknown users and tasks (ones the sequence creates too), and of the
    user's own inbox calls."""

    TASKS = ("task_1", "task_2", "task_3", "task_9")

    def __init__(self, db: Any, rng: random.Random) -> None:
        self.rng = rng

    def sequence(self) -> list[Call]:
        kinds = [
            self.create_task,
            self.update_task_status,
            self.update_task_status,
            self.get_users,
            self.inbox,
        ]
        calls = [self.rng.choice(kinds)() for _ in range(self.rng.randint(1, 6))]
        return [*calls, TRANSFER] if self.rng.random() < 0.1 else calls

    def create_task(self) -> Call:
        arguments: dict[str, Any] = {
            "user_id": "user_1" if self.rng.random() < 0.85 else "user_2",
            "title": self.rng.choice(["Buy milk", "Call Bob"]),
        }
        if self.rng.random() < 0.5:
            arguments["description"] = self.rng.choice(["Today", "Before noon"])
        return "assistant", "create_task", arguments

    def update_task_status(self) -> Call:
        status = self.rng.choice(["pending", "completed"])
        return "assistant", "update_task_status", {"task_id": self.rng.choice(self.TASKS), "status": status}

    def get_users(self) -> Call:
        return "assistant", "get_users", {}

    def inbox(self) -> Call:
        if self.rng.random() < 0.4:
            return "user", "check_notifications", {}
        return (
            "user",
            "dismiss_notification",
            {"notification_id": self.rng.choice(["notif_1", "notif_1", "notif_9"])},
        )


class TelecomFuzz:
    """Sequences of the agent's account calls and the user's phone calls, on every customer (their own lines and
    bills, and other customers'), bills in every status, plans, devices and unknown ids: refuels in whole and
    fractional GB (and none, which the schema refuses), suspensions and resumptions, roaming both ways, payment
    requests the user then checks and pays; every phone setting switched, APN settings set (broken too), network
    modes (one the schema refuses), apps and permissions real and not, in any case."""

    APPS = ("messaging", "browser", "messaging", "camera")
    PERMISSIONS = ("sms", "storage", "SMS", "network", "phone", "camera")
    MODES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only", "4g_5g_preferred", "5g_only")
    APNS: tuple[dict[str, Any], ...] = (
        {"apn_name": "internet"},
        {"apn_name": "broken"},
        {},
        {"apn_name": "internet", "mmsc_url": None},
        {"apn_name": "internet", "reset_at_reboot": True, "mms_port": 8080},
        {"apn_name": "bogus"},
    )
    READS = (
        "check_status_bar",
        "check_network_status",
        "check_network_mode_preference",
        "run_speed_test",
        "check_sim_status",
        "check_data_restriction_status",
        "check_apn_settings",
        "check_wifi_status",
        "check_wifi_calling_status",
        "check_vpn_status",
        "check_installed_apps",
        "can_send_mms",
        "check_payment_request",
    )
    SWITCHES = (
        "toggle_airplane_mode",
        "reseat_sim_card",
        "toggle_data",
        "toggle_roaming",
        "toggle_data_saver_mode",
        "reset_apn_settings",
        "toggle_wifi",
        "toggle_wifi_calling",
        "connect_vpn",
        "disconnect_vpn",
        "reboot_device",
        "make_payment",
    )

    def __init__(self, db: Any, rng: random.Random) -> None:
        self.rng = rng
        self.customers = list(db.customers.values())
        self.ids = [*db.customers, *db.lines, *db.bills, *db.plans, *db.devices]
        self.customer = rng.choice(self.customers[:3] * 3 + self.customers)
        self.all_lines, self.all_bills = list(db.lines), list(db.bills)

    def sequence(self) -> list[Call]:
        agent = [
            self.lookup,
            self.details,
            self.line_change,
            self.line_change,
            self.bills,
            self.payment_request,
            self.refuel,
            self.refuel,
        ]
        user = [self.read, self.switch, self.switch, self.phone_setting]
        calls: list[Call] = []
        for _ in range(self.rng.randint(1, 8)):
            calls.extend(self.rng.choice(agent if self.rng.random() < 0.45 else user)())
        if self.rng.random() < 0.05:
            calls.append(TRANSFER)
        return calls

    def customer_id(self) -> str:
        return self.customer.customer_id if self.rng.random() < 0.92 else self.rng.choice(["C9999", "C1002"])

    def line_id(self) -> str:
        own = self.customer.line_ids
        if own and self.rng.random() < 0.8:
            return str(self.rng.choice(own))
        return self.rng.choice([*self.all_lines, "L9999"])

    def bill_id(self) -> str:
        own = self.customer.bill_ids
        if own and self.rng.random() < 0.8:
            return str(self.rng.choice(own))
        return self.rng.choice([*self.all_bills, "B9999"])

    def lookup(self) -> list[Call]:
        pick = self.rng.random()
        if pick < 0.35:
            numbers = [self.customer.phone_number, "555-123-2002", "555-123-2004", "555-000-0000"]
            return [("assistant", "get_customer_by_phone", {"phone_number": self.rng.choice(numbers)})]
        if pick < 0.7:
            return [("assistant", "get_customer_by_id", {"customer_id": self.customer_id()})]
        name = self.customer.full_name
        return [
            (
                "assistant",
                "get_customer_by_name",
                {
                    "full_name": name.upper() if self.rng.random() < 0.3 else name,
                    "dob": self.customer.date_of_birth if self.rng.random() < 0.8 else "1900-01-01",
                },
            )
        ]

    def details(self) -> list[Call]:
        wanted = self.rng.choice([*self.ids, "X1001", "L9999", "", "c1001"])
        return [("assistant", "get_details_by_id", {"id": wanted})]

    def line_change(self) -> list[Call]:
        name = self.rng.choice(
            ["suspend_line", "resume_line", "enable_roaming", "disable_roaming", "get_data_usage"]
        )
        arguments: dict[str, Any] = {"customer_id": self.customer_id(), "line_id": self.line_id()}
        if name == "suspend_line":
            arguments["reason"] = self.rng.choice(["travelling", "lost phone"])
        return [("assistant", name, arguments)]

    def bills(self) -> list[Call]:
        arguments: dict[str, Any] = {"customer_id": self.customer_id()}
        if self.rng.random() < 0.4:
            arguments["limit"] = self.rng.choice([1, 2, 0, -1, 50])
        return [("assistant", "get_bills_for_customer", arguments)]

    def payment_request(self) -> list[Call]:
        calls: list[Call] = [
            (
                "assistant",
                "send_payment_request",
                {"customer_id": self.customer_id(), "bill_id": self.bill_id()},
            )
        ]
        if self.rng.random() < 0.6:
            calls.append(("user", "check_payment_request", {}))
        if self.rng.random() < 0.6:
            calls.append(("user", "make_payment", {}))
        return calls

    def refuel(self) -> list[Call]:
        amount = self.rng.choice([2.0, 2, 0.5, 1, 3.7, 0, -1.0])
        return [
            (
                "assistant",
                "refuel_data",
                {"customer_id": self.customer_id(), "line_id": self.line_id(), "gb_amount": amount},
            )
        ]

    def read(self) -> list[Call]:
        return [("user", self.rng.choice(self.READS), {})]

    def switch(self) -> list[Call]:
        return [("user", self.rng.choice(self.SWITCHES), {})]

    def phone_setting(self) -> list[Call]:
        pick = self.rng.random()
        if pick < 0.3:
            return [("user", "set_network_mode_preference", {"mode": self.rng.choice(self.MODES)})]
        if pick < 0.5:
            return [("user", "set_apn_settings", {"apn_settings": copy.deepcopy(self.rng.choice(self.APNS))})]
        app = self.rng.choice(self.APPS)
        if pick < 0.7:
            return [
                ("user", self.rng.choice(["check_app_status", "check_app_permissions"]), {"app_name": app})
            ]
        return [
            (
                "user",
                "grant_app_permission",
                {"app_name": app, "permission": self.rng.choice(self.PERMISSIONS)},
            )
        ]


FUZZ: dict[str, Callable[[Any, random.Random], list[Call]]] = {
    "airline": lambda db, rng: AirlineFuzz(db, rng).sequence(),
    "retail": lambda db, rng: RetailFuzz(db, rng).sequence(),
    "mock": lambda db, rng: MockFuzz(db, rng).sequence(),
    "telecom": lambda db, rng: TelecomFuzz(db, rng).sequence(),
}
"""Each domain's fuzzer: one sequence from the base database and a seeded generator."""


def episodes(domain: str, task: Task, base: Any, writes: set[str]) -> Iterator[tuple[str, list[Step], bool]]:
    """A task's scripted episodes: (what, steps, end by the user stopping). The reference actions with what the
    task wants said, and without it (ended by the agent); each write dropped, and changed, with it said."""
    criteria = task.evaluation_criteria
    info = list(criteria.communicate_info or []) if criteria else []

    def steps(calls: list[Call], said: bool) -> list[Step]:
        found: list[Step] = [("call", requestor, name, arguments) for requestor, name, arguments in calls]
        if said and info:
            message: Step = ("say", "", "Here is what you asked for: " + "; ".join(info), {})
            transfer = next(
                (i for i, s in enumerate(found) if s[2] == "transfer_to_human_agents"), len(found)
            )
            found.insert(transfer, message)
        return found

    calls = reference(task)
    yield "reference actions, said", steps(calls, True), True
    if info:
        yield "reference actions, not said", steps(calls, False), False
        first = next((i for i, (requestor, _, _) in enumerate(calls) if requestor != "user"), None)
        if (
            first is not None
        ):  # said only beside a call, in one message with it (tau2-bench's default protocol)
            aside: Step = ("aside", "", "Here is what you asked for: " + "; ".join(info), {})
            beside = steps(calls, False)
            yield "reference actions, said beside a call", [*beside[:first], aside, *beside[first:]], True
    for index, (requestor, name, arguments) in enumerate(calls):
        if name not in writes:
            continue
        yield f"write {index} ({name}) dropped", steps(calls[:index] + calls[index + 1 :], True), True
        for key, changed in CHANGES[domain](base, name, arguments):
            yield (
                f"write {index} ({name}) {key} changed",
                steps([*calls[:index], (requestor, name, changed), *calls[index + 1 :]], True),
                True,
            )
            break


ASKS = {
    "toggle_airplane_mode": "Could you toggle airplane mode on your phone?",
    "toggle_data": "Could you toggle your mobile data?",
    "toggle_roaming": "Could you toggle data roaming on your phone?",
    "toggle_data_saver_mode": "Could you toggle data saver?",
    "toggle_wifi_calling": "Could you toggle Wi-Fi calling?",
    "set_network_mode_preference": "Could you set your network mode preference to 4G/5G preferred?",
    "reseat_sim_card": "Could you take out your SIM card and put it back in?",
    "reset_apn_settings": "Could you reset your APN settings?",
    "reboot_device": "Could you restart your phone?",
    "disconnect_vpn": "Could you disconnect your VPN?",
    "make_payment": "I have sent you a payment request: could you make the payment?",
    "grant_app_permission": "Could you give the {app_name} app the {permission} permission?",
}
"""How the scripted episodes ask the user for each of its reference calls, in an agent's words."""


def ask(name: str, arguments: dict[str, Any]) -> str:
    return ASKS[name].format(**arguments)


def telecom_episodes(task: Task, base: Any, writes: set[str]) -> Iterator[tuple[str, list[Step], bool, bool]]:
    """A telecom task's scripted episodes: (what, steps, end by the user stopping, solo). The reference played with
    the scripted user making its calls when asked, one message each, and all in one message (the user then stops);
    the reference's calls made directly, the user's as a user's (the agent then ends it: the scripted user, not
    having made its calls, would hold on); each write dropped, and the first argument of each changed; and the
    reference in solo mode, the agent making every call, without each write too."""
    calls = reference(task)

    def asked(calls: list[Call]) -> list[Step]:
        return [
            ("ask", "", ask(name, arguments), {})
            if requestor == "user"
            else ("call", requestor, name, arguments)
            for requestor, name, arguments in calls
        ]

    yield "reference, the user asked for each of its calls", asked(calls), True, False
    users = [ask(name, arguments) for requestor, name, arguments in calls if requestor == "user"]
    if len(users) > 1:  # one message asks for every call once; a call listed twice takes a second message
        rounds: list[list[str]] = []
        for text in users:
            free = next((texts for texts in rounds if text not in texts), None)
            if free is None:
                rounds.append([text])
            else:
                free.append(text)
        together: list[Step] = [("ask", "", " ".join(texts), {}) for texts in rounds]
        together += [
            ("call", requestor, name, arguments)
            for requestor, name, arguments in calls
            if requestor != "user"
        ]
        yield "reference, the user asked for all its calls in one message", together, True, False
    yield "reference, made directly", [("call", *call) for call in calls], False, False
    yield (
        "reference in solo mode",
        [("call", "assistant", name, arguments) for _, name, arguments in calls],
        False,
        True,
    )
    for index, (requestor, name, arguments) in enumerate(calls):
        if name not in writes:
            continue
        dropped = calls[:index] + calls[index + 1 :]
        # a call of the user's never asked for keeps the scripted user holding on: the agent ends that episode
        yield f"write {index} ({name}) dropped", asked(dropped), requestor != "user", False
        solo = [("call", "assistant", n, a) for _, n, a in dropped]
        yield f"write {index} ({name}) dropped, solo", solo, False, True
        for key, changed in telecom_changes(base, name, arguments):
            variant = [*calls[:index], (requestor, name, changed), *calls[index + 1 :]]
            if (
                requestor == "user"
            ):  # the scripted user makes the reference's calls: this one is made directly
                yield (
                    f"write {index} ({name}) {key} changed",
                    [("call", *call) for call in variant],
                    False,
                    False,
                )
            else:
                yield f"write {index} ({name}) {key} changed", asked(variant), True, False
            break


def failing_after_changes(domain: str, db: Any) -> Iterator[tuple[str, list[Call]]]:
    """Sequences whose call fails after changing the database (tau2-bench keeps the change; agent_env undoes it):
    for every airline user with a gift card, a certificate and a credit card, a booking whose reservation refuses
    its count of bags (1e308, an integer to the schema), and one that lists the certificate twice."""
    if domain != "airline":
        return
    for user in db.users.values():
        kinds = {method.source: key for key, method in user.payment_methods.items()}
        if (
            not {"gift_card", "certificate", "credit_card"} <= set(kinds)
            or user.payment_methods[kinds["gift_card"]].amount < 2
        ):
            continue
        flight, date, fare = next(
            (f, d, int(s.prices["economy"]))
            for f in db.flights.values()
            for d, s in f.dates.items()
            if s.status == "available" and s.available_seats["economy"] > 0
        )
        booking = {
            "user_id": user.user_id, "origin": flight.origin, "destination": flight.destination,
            "flight_type": "one_way", "cabin": "economy",
            "flights": [{"flight_number": flight.flight_number, "date": date}],
            "passengers": [{"first_name": "Ana", "last_name": "Test", "dob": "1990-01-01"}],
            "payment_methods": [{"payment_id": kinds["credit_card"], "amount": fare}],
            "total_baggages": 1e308, "nonfree_baggages": 0, "insurance": "no",
        }  # fmt: skip
        twice = {
            **booking,
            "total_baggages": 0,
            "payment_methods": [
                {"payment_id": kinds["gift_card"], "amount": 1},
                {"payment_id": kinds["certificate"], "amount": 1},
                {"payment_id": kinds["certificate"], "amount": 1},
                {"payment_id": kinds["credit_card"], "amount": fare - 3},
            ],
        }
        yield f"{user.user_id}: a booking of 1e308 bags", [("assistant", "book_reservation", booking)]
        yield (
            f"{user.user_id}: a booking paid with a certificate twice",
            [("assistant", "book_reservation", twice)],
        )
