"""τ²-bench's airline domain: an agent books, changes and cancels flight reservations for simulated customers under
the airline's policy, on a database of 300 flights, 500 users and 2,000 reservations.

The tools do what tau2-bench's do, quirks included, and answer with the same text: the same failures, checked in the
same order, with the same messages; the same changes to the database (a flight change takes no seats, a
cancellation releases none); the clock fixed at 2024-05-15 15:00:00. What differs is deliberate: every tool
publishes its full schema, and a call is checked against it before the tool runs (unknown keys, missing fields, a
cabin that is none of the three, a number that is not whole are refused, naming the JSON path; tau2-bench would
ignore an unknown key or fail inside the tool). `calculate` refuses a computation too large to finish rather than
hanging the process. And a call that fails changes nothing (tau2-bench keeps what a call changed before it failed:
a seat taken, a gift card drawn down), as every domain's calls run (`Tau2Environment.transaction`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, WithJsonSchema

from agent_env.envs.tau2.airline_db import (
    AIRPORTS,
    AirlineDB,
    AirlineStore,
    Airport,
    AvailableDate,
    Cabin,
    Certificate,
    CreditCard,
    DirectFlight,
    Flight,
    FlightDate,
    FlightType,
    GiftCard,
    Insurance,
    Passenger,
    Payment,
    Reservation,
    ReservationFlight,
    User,
)
from agent_env.envs.tau2.calculator import calculate
from agent_env.envs.tau2.environment import Tau2Environment, tool_text
from agent_env.errors import ToolError
from agent_env.tools import tool

NOW = "2024-05-15T15:00:00"
"""The airline's clock: every booking is made at this time, as the policy says it is."""
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
"""The ids new reservations take, the first one free; an episode books at most three."""
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
"""The ids new certificates take in a user's profile, the first one free; at most three per user."""
INSURANCE_PRICE = 30
BAG_PRICE = 50

WholeNumber = Annotated[int | float, WithJsonSchema({"type": "integer"})]
"""A whole number, published as an integer and received as JSON sent it: tau2-bench stores and echoes a count as the
call gave it, so 2.0 stays 2.0 in the database and in messages, as it would there."""


class FlightLeg(BaseModel):
    """One flight of the trip: its number and the date it departs."""

    flight_number: str = Field(description="The flight's number, 'HAT' and three digits, such as 'HAT001'")
    date: str = Field(description="The date the flight departs, YYYY-MM-DD, such as '2024-05-20'")


class PaymentPart(BaseModel):
    """The part of the price charged to one payment method in the user's profile."""

    payment_id: str = Field(
        description="The payment method's id as the user's profile lists it: 'credit_card_', 'gift_card_' or "
        "'certificate_' and seven digits, such as 'gift_card_3576581'"
    )
    amount: int = Field(
        description="Whole dollars charged to it; a gift card or certificate must hold at least this much"
    )


class Tau2Airline(Tau2Environment):
    """τ²-bench's airline domain: book, change and cancel flight reservations, and compensate, under the policy."""

    domain = "airline"
    base_model = AirlineDB
    store = AirlineStore
    db: AirlineStore

    # Reading the database, failing with tau2-bench's messages.

    def _user(self, user_id: str) -> User:
        user = self.db.users.get(user_id)
        if user is None:
            raise ToolError(f"User {user_id} not found")
        return user

    def _reservation(self, reservation_id: str) -> Reservation:
        reservation = self.db.reservations.get(reservation_id)
        if reservation is None:
            raise ToolError(f"Reservation {reservation_id} not found")
        return reservation

    def _flight(self, flight_number: str) -> Flight:
        flight = self.db.flights.get(flight_number)
        if flight is None:
            raise ToolError(f"Flight {flight_number} not found")
        return flight

    def _flight_date(self, flight_number: str, date: str) -> FlightDate:
        found = self._flight(flight_number).dates.get(date)
        if found is None:
            raise ToolError(f"Flight {flight_number} not found on date {date}")
        return found

    def _bookable(self, leg: FlightLeg, cabin: Cabin, passengers: int) -> tuple[Flight, AvailableDate]:
        """The flight of `leg` and its date, when it can be booked with a seat in `cabin` for each passenger."""
        flight = self._flight(leg.flight_number)
        on_date = self._flight_date(leg.flight_number, leg.date)
        if not isinstance(on_date, AvailableDate):
            raise ToolError(f"Flight {leg.flight_number} not available on date {leg.date}")
        if on_date.available_seats[cabin] < passengers:
            raise ToolError(f"Not enough seats on flight {leg.flight_number}")
        return flight, on_date

    def _direct_flights(
        self, date: str, origin: str, destination: str | None, leave_after: str | None = None
    ) -> list[DirectFlight]:
        """The flights bookable on `date` from `origin` (to `destination`, when given) that are scheduled to leave
        no earlier than `leave_after` (times compared as text, as tau2-bench does)."""
        found = []
        for flight in self.db.flights.values():
            on_date = flight.dates.get(date)
            if (
                flight.origin == origin
                and (destination is None or flight.destination == destination)
                and isinstance(on_date, AvailableDate)
                and (leave_after is None or flight.scheduled_departure_time_est >= leave_after)
            ):
                found.append(
                    DirectFlight(
                        flight_number=flight.flight_number,
                        origin=flight.origin,
                        destination=flight.destination,
                        status="available",
                        scheduled_departure_time_est=flight.scheduled_departure_time_est,
                        scheduled_arrival_time_est=flight.scheduled_arrival_time_est,
                        available_seats=dict(on_date.available_seats),
                        prices=dict(on_date.prices),
                    )
                )
        return found

    def _pay_for_change(self, user_id: str, payment_id: str, amount: int | float) -> Payment | None:
        """Charge a change's price to a gift card or credit card of the user (a negative price refunds it), and
        return the payment to record, None when the price is 0. A certificate is refused whatever the price."""
        method = self._user(user_id).payment_methods.get(payment_id)
        if method is None:
            raise ToolError("Payment method not found")
        if isinstance(method, Certificate):
            raise ToolError("Certificate cannot be used to update reservation")
        if isinstance(method, GiftCard):
            if method.amount < amount:
                raise ToolError("Gift card balance is not enough")
            card = self.db.users.edit(user_id).payment_methods[payment_id]
            assert isinstance(card, GiftCard)
            card.amount -= amount
        if amount == 0:
            return None
        return Payment(payment_id=payment_id, amount=amount)  # type: ignore[arg-type]  # 50.0 becomes 50, as there

    # The tools.

    @tool
    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: FlightType,
        cabin: Cabin,
        flights: list[FlightLeg],
        passengers: list[Passenger],
        payment_methods: list[PaymentPart],
        total_baggages: WholeNumber,
        nonfree_baggages: WholeNumber,
        insurance: Insurance,
    ) -> str:
        """Book a new reservation for a user and charge its price to payment methods in their profile.

        List the booking's details to the user and get their explicit yes before calling. The policy's rules: every flight in the same cabin; at most five passengers; at most one certificate, one credit card and three gift cards; only payment methods already in the profile. The price is each flight's current fare in the cabin times the number of passengers, plus $30 per passenger with insurance, plus $50 per non-free bag; the payments must add up to it exactly, and a gift card or certificate cannot pay more than it holds. A certificate is used up whole: what is left of it is lost. Every flight must be available on its date with a seat in the cabin for each passenger. Returns the new reservation.

        Args:
            user_id: The id of the user who books, such as 'sara_doe_496'.
            origin: IATA code of the airport the trip starts from, such as 'SFO'.
            destination: IATA code of the trip's destination, such as 'JFK'; for a round trip, the far end, not home.
            flight_type: 'one_way', or 'round_trip' (there and back).
            cabin: The cabin for every flight and passenger; basic economy is a class of its own, not economy.
            flights: Every flight of the trip in the order flown, the way back included for a round trip.
            passengers: Every passenger (at most five), each with their name and date of birth.
            payment_methods: How the price is split across the user's payment methods.
            total_baggages: Checked bags on the whole reservation, free ones included.
            nonfree_baggages: How many of those are paid for, at $50 each: those beyond the free allowance, which the policy sets by membership and cabin.
            insurance: 'yes' to buy travel insurance at $30 per passenger, else 'no'.
        """
        user = self._user(user_id)
        reservation_id = next((key for key in NEW_RESERVATION_IDS if key not in self.db.reservations), None)
        if reservation_id is None:
            raise ToolError("Too many reservations")
        # The reservation is made first, as tau2-bench makes it: a count its model cannot hold (1e308 bags) fails
        # here, before any check of the flights or the payments.
        reservation = Reservation(
            reservation_id=reservation_id,
            user_id=user_id,
            origin=origin,
            destination=destination,
            flight_type=flight_type,
            cabin=cabin,
            flights=[],
            passengers=[passenger.model_copy() for passenger in passengers],
            payment_history=[
                Payment(payment_id=part.payment_id, amount=part.amount) for part in payment_methods
            ],
            created_at=NOW,
            total_baggages=total_baggages,  # type: ignore[arg-type]  # validated: 2.0 becomes 2, as there
            nonfree_baggages=nonfree_baggages,  # type: ignore[arg-type]
            insurance=insurance,
        )
        count = len(passengers)
        price: int | float = 0
        for leg in flights:
            flight, on_date = self._bookable(leg, cabin, count)
            fare = on_date.prices[cabin]
            reservation.flights.append(
                ReservationFlight(
                    flight_number=leg.flight_number,
                    origin=flight.origin,
                    destination=flight.destination,
                    date=leg.date,
                    price=fare,
                )
            )
            price += fare * count
        if insurance == "yes":
            price += INSURANCE_PRICE * count
        price += BAG_PRICE * nonfree_baggages
        for part in payment_methods:
            method = user.payment_methods.get(part.payment_id)
            if method is None:
                raise ToolError(f"Payment method {part.payment_id} not found")
            if not isinstance(method, CreditCard) and method.amount < part.amount:
                raise ToolError(f"Not enough balance in payment method {part.payment_id}")
        paid = sum(part.amount for part in payment_methods)
        if paid != price:
            raise ToolError(f"Payment amount does not add up, total price is {price}, but paid {paid}")
        owner = self.db.users.edit(user_id)
        for part in payment_methods:
            method = owner.payment_methods.get(part.payment_id)
            if method is None:
                # A certificate listed twice: the first use took it. tau2-bench fails here on a missing key, with
                # the payments before it already taken (which it keeps); here the failure undoes them.
                raise ToolError(repr(part.payment_id))
            if isinstance(method, GiftCard):
                method.amount -= part.amount
            elif isinstance(method, Certificate):
                del owner.payment_methods[part.payment_id]
        for taken in reservation.flights:
            seats = self.db.flights.edit(taken.flight_number).dates[taken.date]
            assert isinstance(seats, AvailableDate)
            seats.available_seats[cabin] -= count
        self.db.reservations.insert(reservation_id, reservation)
        owner.reservations.append(reservation_id)
        return tool_text(reservation)

    @tool
    def calculate(self, expression: str) -> str:
        """Work out an arithmetic expression, rounded to two decimals, such as a price difference or a refund.

        Args:
            expression: Numbers, + - * / ** //, parentheses, dots and spaces only, such as '(1120 - 855) * 2'.
        """
        return calculate(expression)

    @tool
    def cancel_reservation(self, reservation_id: str) -> str:
        """Cancel a whole reservation: every payment made for it is refunded to the method it came from (within 5 to 7 business days). Seats are not given back.

        The tool checks none of the policy's rules, so check them first: get the user's id, the reservation's and the reason for cancelling; no flight of it may have been flown yet (else transfer the user to a human agent); and it must have been booked within the last 24 hours, or have a flight the airline cancelled, or be in business class, or have insurance and a reason it covers (health or weather). Get the user's explicit yes before calling. Returns the cancelled reservation.

        Args:
            reservation_id: The reservation's id, six letters and digits, such as 'ZFA04Y'.
        """
        self._reservation(reservation_id)
        reservation = self.db.reservations.edit(reservation_id)
        refunds = [
            Payment(payment_id=payment.payment_id, amount=-payment.amount)
            for payment in reservation.payment_history
        ]
        reservation.payment_history.extend(refunds)
        reservation.status = "cancelled"
        return tool_text(reservation)

    @tool
    def get_flight_status(self, flight_number: str, date: str) -> str:
        """The status of a flight on a date: 'available' (bookable), 'on time' or 'delayed' (not left yet, no longer bookable), 'flying', 'landed' or 'cancelled'.

        Args:
            flight_number: The flight's number, such as 'HAT001'.
            date: The date, YYYY-MM-DD, such as '2024-05-15'.
        """
        return self._flight_date(flight_number, date).status

    @tool
    def get_reservation_details(self, reservation_id: str) -> str:
        """Look up a reservation: its user, trip, cabin, flights with the fares paid, passengers, payments and refunds, when it was booked, bags, insurance, and whether it is cancelled.

        Args:
            reservation_id: The reservation's id, six letters and digits, such as '8JX2WO'.
        """
        return tool_text(self._reservation(reservation_id))

    @tool
    def get_user_details(self, user_id: str) -> str:
        """Look up a user's profile: name, address, email, date of birth, payment methods (with what each gift card and certificate holds), saved passengers, membership level and the ids of their reservations.

        Args:
            user_id: The user's id, such as 'sara_doe_496'.
        """
        return tool_text(self._user(user_id))

    @tool
    def list_all_airports(self) -> str:
        """List every airport the airline flies to: its IATA code and city."""
        return tool_text([Airport(iata=iata, city=city) for iata, city in AIRPORTS])

    @tool
    def search_direct_flight(self, origin: str, destination: str, date: str) -> str:
        """Find the nonstop flights from one airport to another that can still be booked on a date, with the seats left and today's fare in each cabin.

        Args:
            origin: IATA code of the airport to leave from, such as 'JFK'.
            destination: IATA code of the airport to fly to, such as 'LAX'.
            date: The date to fly, YYYY-MM-DD, such as '2024-05-20'.
        """
        return tool_text(self._direct_flights(date, origin, destination))

    @tool
    def search_onestop_flight(self, origin: str, destination: str, date: str) -> str:
        """Find trips with one connection that can still be booked: pairs of a first flight from the origin on the date and a second from where it lands to the destination, scheduled to leave no earlier than the first arrives (on the next day when the first lands after midnight). Each flight comes with its date, seats left and today's fares.

        Args:
            origin: IATA code of the airport to leave from, such as 'JFK'.
            destination: IATA code of the final destination, such as 'LAX'.
            date: The date of the first flight, YYYY-MM-DD, such as '2024-05-20'.
        """
        pairs = []
        for first in self._direct_flights(date, origin, None):
            first.date = date
            # The connection's date, as tau2-bench writes it: the day after within May, not zero-padded.
            next_date = f"2024-05-{int(date[-2:]) + 1}" if "+1" in first.scheduled_arrival_time_est else date
            for second in self._direct_flights(
                next_date, first.destination, destination, first.scheduled_arrival_time_est
            ):
                second.date = next_date
                pairs.append([first, second])
        return tool_text(pairs)

    @tool
    def send_certificate(self, user_id: str, amount: WholeNumber) -> str:
        """Add a travel certificate to a user's profile, as compensation. Be careful: only as the policy allows.

        Offer one only when the user asks for compensation, after confirming the facts, and only to a silver or gold member, or one with travel insurance, or flying business: $100 per passenger for a cancelled flight; $50 per passenger for a delayed flight, once the reservation has been changed or cancelled as the user wants. Never for any other reason.

        Args:
            user_id: The id of the user to send it to, such as 'sara_doe_496'.
            amount: What the certificate is worth, in dollars.
        """
        user = self._user(user_id)
        for certificate_id in NEW_CERTIFICATE_IDS:
            if certificate_id not in user.payment_methods:
                certificate = Certificate(source="certificate", id=certificate_id, amount=amount)
                self.db.users.edit(user_id).payment_methods[certificate_id] = certificate
                return f"Certificate {certificate_id} added to user {user_id} with amount {amount}."
        raise ToolError("Too many certificates")

    @tool
    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the user to a human agent, with a summary of their issue, then tell the user (the policy says how). Only when the user explicitly asks for a human agent, or when their request cannot be handled within the policy and your tools.

        Args:
            summary: The user's issue and what has been done so far, for the human agent.
        """
        return "Transfer successful"

    @tool
    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: WholeNumber, nonfree_baggages: WholeNumber, payment_id: str
    ) -> str:
        """Change the checked bags of a reservation. Each bag more than it already paid for costs $50, charged to the payment method (a gift card that holds enough, or a credit card; never a certificate, even when nothing is owed).

        The policy lets the user add bags, never remove them. Get the user's explicit yes before calling. Returns the updated reservation.

        Args:
            reservation_id: The reservation's id, six letters and digits, such as 'ZFA04Y'.
            total_baggages: The reservation's checked bags after the change, free ones included.
            nonfree_baggages: How many of those are paid for after the change.
            payment_id: A gift card or credit card in the user's profile, such as 'credit_card_7815826' or 'gift_card_7815826'.
        """
        reservation = self._reservation(reservation_id)
        self._user(reservation.user_id)
        price = BAG_PRICE * max(0, nonfree_baggages - reservation.nonfree_baggages)
        payment = self._pay_for_change(reservation.user_id, payment_id, price)
        changed = self.db.reservations.edit(reservation_id)
        if payment is not None:
            changed.payment_history.append(payment)
        # Stored as sent, unvalidated, as tau2-bench assigns them.
        changed.total_baggages = total_baggages  # type: ignore[assignment]
        changed.nonfree_baggages = nonfree_baggages  # type: ignore[assignment]
        return tool_text(changed)

    @tool
    def update_reservation_flights(
        self, reservation_id: str, cabin: Cabin, flights: list[FlightLeg], payment_id: str
    ) -> str:
        """Change the flights of a reservation, or its cabin, or both; the difference in price is charged to the payment method, or refunded to it when the new price is lower.

        Give the whole new itinerary: every flight the reservation will have, unchanged ones included. A flight kept as it is (same number and date, cabin unchanged) keeps the fare paid for it; any other flight is priced at today's fare in the cabin, and must be available on its date with a seat there for each passenger. The payment method must be a gift card that holds enough, or a credit card, from the user's profile; never a certificate. Seats are not recounted. The tool checks none of the policy's rules, so check them first: basic economy flights cannot be changed (their cabin can); origin, destination and trip type stay the same; the cabin is one for all flights and cannot change once any flight has been flown. Get the user's explicit yes before calling. Returns the updated reservation.

        Args:
            reservation_id: The reservation's id, six letters and digits, such as 'ZFA04Y'.
            cabin: The cabin of every flight after the change (the current one to keep it).
            flights: Every flight of the reservation after the change, in the order flown, unchanged ones included.
            payment_id: A gift card or credit card in the user's profile, such as 'credit_card_7815826' or 'gift_card_7815826'.
        """
        reservation = self._reservation(reservation_id)
        self._user(reservation.user_id)
        count = len(reservation.passengers)
        itinerary: list[ReservationFlight] = []
        price = 0
        for leg in flights:
            kept = next(
                (
                    booked
                    for booked in reservation.flights
                    if booked.flight_number == leg.flight_number
                    and booked.date == leg.date
                    and cabin == reservation.cabin
                ),
                None,
            )
            if kept is not None:
                itinerary.append(kept.model_copy())
                price += kept.price * count
                continue
            flight, on_date = self._bookable(leg, cabin, count)
            new = ReservationFlight(
                flight_number=leg.flight_number,
                origin=flight.origin,
                destination=flight.destination,
                date=leg.date,
                price=on_date.prices[cabin],
            )
            itinerary.append(new)
            price += new.price * count
        price -= sum(booked.price for booked in reservation.flights) * count
        payment = self._pay_for_change(reservation.user_id, payment_id, price)
        changed = self.db.reservations.edit(reservation_id)
        if payment is not None:
            changed.payment_history.append(payment)
        changed.flights = itinerary
        changed.cabin = cabin
        return tool_text(changed)

    @tool
    def update_reservation_passengers(self, reservation_id: str, passengers: list[Passenger]) -> str:
        """Replace the passengers of a reservation, keeping their number: not even a human agent can change how many there are. Flights, cabin and price stay as they are.

        Get the user's explicit yes before calling. Returns the updated reservation.

        Args:
            reservation_id: The reservation's id, six letters and digits, such as 'ZFA04Y'.
            passengers: Every passenger after the change, each with their name and date of birth, as many as before.
        """
        reservation = self._reservation(reservation_id)
        if len(passengers) != len(reservation.passengers):
            raise ToolError("Number of passengers does not match")
        changed = self.db.reservations.edit(reservation_id)
        changed.passengers = [passenger.model_copy() for passenger in passengers]
        return tool_text(changed)
