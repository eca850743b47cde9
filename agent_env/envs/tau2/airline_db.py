"""The airline's database: flights with their status and seats on each date, users with their payment methods, and
reservations, as τ²-bench's airline db.json holds them.

Each model's field types and order are tau2-bench's where they show: a field's type decides its JSON (a gift card's
`amount` is a float, so 100 reads back as 100.0; a reservation's `status` is null until it is cancelled), which the
reward compares, and its order decides the text of a tool's result, which the agent reads.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from agent_env.envs.tau2.store import Store, Table

Cabin = Literal["basic_economy", "economy", "business"]
FlightType = Literal["one_way", "round_trip"]
Insurance = Literal["yes", "no"]
Membership = Literal["regular", "silver", "gold"]
SeatCounts = Annotated[dict[Cabin, int], Field(description="Seats left in each cabin")]
Prices = Annotated[
    dict[Cabin, int], Field(description="Today's fare per passenger in each cabin, in dollars")
]


class AvailableDate(BaseModel):
    """A date the flight has not left on yet and can be booked."""

    status: Literal["available"] = Field(description="'available': open for booking")
    available_seats: SeatCounts
    prices: Prices


class OnTimeDate(BaseModel):
    """A date the flight has not left on yet, expected on time; no longer bookable."""

    status: Literal["on time"] = Field(description="'on time'")
    estimated_departure_time_est: str = Field(description="Expected departure, EST, YYYY-MM-DDTHH:MM:SS")
    estimated_arrival_time_est: str = Field(description="Expected arrival, EST, YYYY-MM-DDTHH:MM:SS")


class FlyingDate(BaseModel):
    """A date the flight has taken off on and not landed yet."""

    status: Literal["flying"] = Field(description="'flying'")
    actual_departure_time_est: str = Field(description="When it took off, EST, YYYY-MM-DDTHH:MM:SS")
    estimated_arrival_time_est: str = Field(description="Expected arrival, EST, YYYY-MM-DDTHH:MM:SS")


class LandedDate(BaseModel):
    """A date the flight has flown and landed on."""

    status: Literal["landed"] = Field(description="'landed'")
    actual_departure_time_est: str = Field(description="When it took off, EST, YYYY-MM-DDTHH:MM:SS")
    actual_arrival_time_est: str = Field(description="When it landed, EST, YYYY-MM-DDTHH:MM:SS")


class CancelledDate(BaseModel):
    """A date the airline cancelled the flight on."""

    status: Literal["cancelled"] = Field(description="'cancelled'")


class DelayedDate(BaseModel):
    """A date the flight has not left on yet, running late; no longer bookable."""

    status: Literal["delayed"] = Field(description="'delayed'")
    estimated_departure_time_est: str = Field(description="Expected departure, EST, YYYY-MM-DDTHH:MM:SS")
    estimated_arrival_time_est: str = Field(description="Expected arrival, EST, YYYY-MM-DDTHH:MM:SS")


FlightDate = Annotated[
    AvailableDate | LandedDate | CancelledDate | DelayedDate | FlyingDate | OnTimeDate,
    Field(discriminator="status"),
]


class Flight(BaseModel):
    """A scheduled flight, flown on many dates."""

    flight_number: str = Field(description="The flight's number, such as 'HAT001'")
    origin: str = Field(description="IATA code of the airport it leaves from, such as 'PHL'")
    destination: str = Field(description="IATA code of the airport it flies to, such as 'LGA'")
    scheduled_departure_time_est: str = Field(description="Scheduled departure, EST, HH:MM:SS")
    scheduled_arrival_time_est: str = Field(
        description="Scheduled arrival, EST, HH:MM:SS; '+1' after it when it lands the next day"
    )
    dates: dict[str, FlightDate] = Field(description="Its status on each date it flies (YYYY-MM-DD)")


class DirectFlight(BaseModel):
    """A flight that can be booked on a date, as a search finds it."""

    flight_number: str = Field(description="The flight's number, such as 'HAT001'")
    origin: str = Field(description="IATA code of the airport it leaves from")
    destination: str = Field(description="IATA code of the airport it flies to")
    status: Literal["available"] = Field(description="'available': open for booking")
    scheduled_departure_time_est: str = Field(description="Scheduled departure, EST, HH:MM:SS")
    scheduled_arrival_time_est: str = Field(
        description="Scheduled arrival, EST, HH:MM:SS; '+1' after it when it lands the next day"
    )
    date: str | None = Field(
        default=None, description="The date it flies, YYYY-MM-DD (one-stop searches give it)"
    )
    available_seats: SeatCounts
    prices: Prices


class ReservationFlight(BaseModel):
    """One flight of a reservation, at the price paid for it."""

    flight_number: str = Field(description="The flight's number, such as 'HAT001'")
    origin: str = Field(description="IATA code of the airport it leaves from")
    destination: str = Field(description="IATA code of the airport it flies to")
    date: str = Field(description="The date it flies, YYYY-MM-DD")
    price: int = Field(description="The fare paid per passenger, in dollars")


class Passenger(BaseModel):
    """A passenger: their name and date of birth, as on their ID."""

    first_name: str = Field(description="The passenger's first name, such as 'Amelia'")
    last_name: str = Field(description="The passenger's last name, such as 'Ahmed'")
    dob: str = Field(description="The passenger's date of birth, YYYY-MM-DD, such as '1957-03-21'")


class Payment(BaseModel):
    """A payment of a reservation; a refund is a payment of a negative amount."""

    payment_id: str = Field(description="The payment method it went to, such as 'credit_card_4421486'")
    amount: int = Field(description="Dollars paid (negative: refunded)")


class CreditCard(BaseModel):
    """A credit card in a user's profile."""

    source: Literal["credit_card"] = Field(description="'credit_card'")
    id: str = Field(description="The card's payment id, such as 'credit_card_4421486'")
    brand: str = Field(description="The card's brand, such as 'visa'")
    last_four: str = Field(description="The card number's last four digits")


class GiftCard(BaseModel):
    """A gift card in a user's profile, with what is left on it."""

    source: Literal["gift_card"] = Field(description="'gift_card'")
    id: str = Field(description="The card's payment id, such as 'gift_card_3576581'")
    amount: float = Field(description="Dollars left on the card")


class Certificate(BaseModel):
    """A travel certificate in a user's profile; used up whole by one booking."""

    source: Literal["certificate"] = Field(description="'certificate'")
    id: str = Field(description="The certificate's payment id, such as 'certificate_4856383'")
    amount: float = Field(description="Dollars it is worth")


PaymentMethod = Annotated[CreditCard | GiftCard | Certificate, Field(discriminator="source")]


class Name(BaseModel):
    """A user's name."""

    first_name: str = Field(description="First name")
    last_name: str = Field(description="Last name")


class Address(BaseModel):
    """A user's postal address."""

    address1: str = Field(description="Street address")
    address2: str | None = Field(default=None, description="Suite, apartment or unit, when there is one")
    city: str = Field(description="City")
    country: str = Field(description="Country")
    state: str = Field(description="State or province")
    zip: str = Field(description="Postal code")


class User(BaseModel):
    """A user's profile."""

    user_id: str = Field(description="The user's id, such as 'mia_li_3668'")
    name: Name = Field(description="The user's name")
    address: Address = Field(description="The user's address")
    email: str = Field(description="The user's email address")
    dob: str = Field(description="The user's date of birth, YYYY-MM-DD")
    payment_methods: dict[str, PaymentMethod] = Field(description="The user's payment methods, by payment id")
    saved_passengers: list[Passenger] = Field(description="Passengers saved in the profile for quick booking")
    membership: Membership = Field(description="'regular', 'silver' or 'gold'; sets the free bag allowance")
    reservations: list[str] = Field(description="The ids of the user's reservations, oldest first")


class Reservation(BaseModel):
    """A reservation: a trip for some passengers in one cabin, and what was paid for it."""

    reservation_id: str = Field(description="The reservation's id, six letters and digits, such as '4WQ150'")
    user_id: str = Field(description="The id of the user who booked it")
    origin: str = Field(description="IATA code of the airport the trip starts from")
    destination: str = Field(description="IATA code of the trip's destination (the far end of a round trip)")
    flight_type: FlightType = Field(description="'one_way' or 'round_trip'")
    cabin: Cabin = Field(description="The cabin of every flight and passenger")
    flights: list[ReservationFlight] = Field(description="The flights, in the order flown")
    passengers: list[Passenger] = Field(description="The passengers")
    payment_history: list[Payment] = Field(description="Every payment and refund, in order")
    created_at: str = Field(description="When it was booked, EST, YYYY-MM-DDTHH:MM:SS")
    total_baggages: int = Field(description="Checked bags, free ones included")
    nonfree_baggages: int = Field(description="Checked bags paid for, at $50 each")
    insurance: Insurance = Field(description="Whether travel insurance was bought: 'yes' or 'no'")
    status: Literal["cancelled"] | None = Field(
        default=None, description="'cancelled' once cancelled, else null"
    )


class AirlineDB(BaseModel):
    """The airline's whole database, as db.json holds it."""

    flights: dict[str, Flight] = Field(description="Every flight, by flight number")
    users: dict[str, User] = Field(description="Every user, by user id")
    reservations: dict[str, Reservation] = Field(description="Every reservation, by reservation id")


class AirlineStore(Store):
    """One episode's airline database, over the shared base."""

    flights: Table[Flight]
    users: Table[User]
    reservations: Table[Reservation]


AIRPORTS = (
    ("SFO", "San Francisco"),
    ("JFK", "New York"),
    ("LAX", "Los Angeles"),
    ("ORD", "Chicago"),
    ("DFW", "Dallas"),
    ("DEN", "Denver"),
    ("SEA", "Seattle"),
    ("ATL", "Atlanta"),
    ("MIA", "Miami"),
    ("BOS", "Boston"),
    ("PHX", "Phoenix"),
    ("IAH", "Houston"),
    ("LAS", "Las Vegas"),
    ("MCO", "Orlando"),
    ("EWR", "Newark"),
    ("CLT", "Charlotte"),
    ("MSP", "Minneapolis"),
    ("DTW", "Detroit"),
    ("PHL", "Philadelphia"),
    ("LGA", "LaGuardia"),
)
"""The airports `list_all_airports` gives, in its order: (IATA code, city)."""


class Airport(BaseModel):
    """An airport the airline serves."""

    iata: str = Field(description="Its IATA code, such as 'SFO'")
    city: str = Field(description="The city it serves")
