"""telecom's agent-side database: the carrier's plans, customers, lines, bills and devices, as τ²-bench's telecom
db.toml holds them.

tau2-bench keeps each table as a list; here each is a table by id (a plan's `plan_id`, a line's `line_id`, ...), in
the file's order, so that an episode copies only the entity it changes (`store.Table`). Field types and order are
tau2-bench's where they show: a field's type decides its JSON (a bill's dates are dates, a device's activation a
date and time, which reads back as `2025-01-20 14:30:00`), and its order the text of a tool's result.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from agent_env.envs.tau2.store import Store, Table

TODAY = datetime.date(2025, 2, 25)
"""The carrier's clock: every tool acts on this day, as tau2-bench's telecom does."""

LineStatus = Literal["Active", "Suspended", "Pending Activation", "Closed"]
BillStatus = Literal["Draft", "Issued", "Awaiting Payment", "Paid", "Overdue", "Disputed"]
AccountStatus = Literal["Active", "Suspended", "Pending Verification", "Closed"]
DeviceType = Literal["phone", "router", "tablet", "watch", "other"]
PaymentMethodType = Literal["Credit Card", "Debit Card", "PayPal"]


class Plan(BaseModel):
    """A service plan the carrier sells."""

    plan_id: str = Field(description="The plan's id, such as 'P1002'")
    name: str = Field(description="What the plan is called, such as 'Premium Plan'")
    data_limit_gb: float = Field(description="Mobile data included each month, in GB")
    price_per_month: float = Field(description="What the plan costs each month, in dollars")
    data_refueling_price_per_gb: float = Field(
        description="What each GB of data added mid-cycle costs, in dollars"
    )


class Device(BaseModel):
    """A device the carrier knows of."""

    device_id: str = Field(description="The device's id, such as 'D1002'")
    device_type: DeviceType = Field(description="What kind of device it is")
    model: str = Field(description="Its make and model")
    imei: str | None = Field(default=None, description="Its IMEI, when known")
    is_esim_capable: bool = Field(description="Whether it can hold an eSIM")
    activated: bool = Field(default=False, description="Whether it is activated on the network")
    activation_date: datetime.datetime | None = Field(default=None, description="When it was activated (EST)")
    last_esim_transfer_date: datetime.datetime | None = Field(
        default=None, description="When an eSIM profile was last moved onto it (EST)"
    )


class Line(BaseModel):
    """A phone line: its number, status, plan and this cycle's data."""

    line_id: str = Field(description="The line's id, such as 'L1002'")
    phone_number: str = Field(description="Its phone number, such as '555-123-2002'")
    status: LineStatus = Field(default="Pending Activation", description="Whether the line is in service")
    plan_id: str = Field(description="The plan it is on")
    device_id: str | None = Field(default=None, description="The device it is used in, when known")
    data_used_gb: float = Field(default=0.0, description="Data used this billing cycle, in GB")
    data_refueling_gb: float = Field(
        default=0.0, description="Data added this billing cycle beyond the plan's, in GB"
    )
    roaming_enabled: bool = Field(default=False, description="Whether the line may roam abroad")
    contract_end_date: datetime.date | None = Field(
        default=None, description="When its contract ends, if it has one"
    )
    last_plan_change_date: datetime.date | None = Field(
        default=None, description="When its plan last changed"
    )
    last_sim_replacement_date: datetime.date | None = Field(
        default=None, description="When its SIM was last replaced"
    )
    suspension_start_date: datetime.date | None = Field(
        default=None, description="When its current suspension began"
    )


class LineItem(BaseModel):
    """One charge, credit or payment on a bill."""

    description: str = Field(description="What it is for")
    amount: float = Field(description="Dollars: positive for a charge, negative for a credit")
    date: datetime.date = Field(description="The day it was put on the bill")
    item_type: str = Field(
        description="Its kind, such as 'Plan Charge', 'Overage', 'Fee', 'Charge' or 'Credit'"
    )


class Bill(BaseModel):
    """A customer's bill for one billing period."""

    bill_id: str = Field(description="The bill's id, such as 'B1002'")
    customer_id: str = Field(description="The customer it is for")
    period_start: datetime.date = Field(description="The first day it covers")
    period_end: datetime.date = Field(description="The last day it covers")
    issue_date: datetime.date = Field(description="The day it was issued")
    total_due: float = Field(description="What is owed on it, in dollars")
    due_date: datetime.date = Field(description="The day it must be paid by")
    line_items: list[LineItem] = Field(default_factory=list, description="Its charges, credits and payments")
    status: BillStatus = Field(default="Draft", description="Where the bill is in its life")


class Address(BaseModel):
    """A customer's billing address."""

    street: str = Field(description="The street and number")
    city: str = Field(description="The city")
    state: str = Field(description="The state's code, such as 'CA'")
    zip_code: str = Field(description="The ZIP code")


class PaymentMethod(BaseModel):
    """A payment method a customer keeps on file."""

    method_type: PaymentMethodType = Field(description="What kind of method it is")
    account_number_last_4: str = Field(description="The last four digits of its account number")
    expiration_date: str = Field(description="When it expires, MM/YYYY")


class Customer(BaseModel):
    """A customer account: who they are, and their lines, bills and payment methods."""

    customer_id: str = Field(description="The customer's id, such as 'C1001'")
    full_name: str = Field(description="Their full name")
    date_of_birth: str = Field(description="Their date of birth, YYYY-MM-DD, which verifies who they are")
    email: str = Field(description="Their email address")
    phone_number: str = Field(description="Their contact phone number")
    address: Address = Field(description="Their billing address")
    account_status: AccountStatus = Field(
        default="Pending Verification", description="Whether the account is in good standing"
    )
    payment_methods: list[PaymentMethod] = Field(
        default_factory=list, description="Their payment methods on file"
    )
    line_ids: list[str] = Field(default_factory=list, description="The ids of their lines")
    bill_ids: list[str] = Field(default_factory=list, description="The ids of their bills")
    created_at: datetime.datetime = Field(
        default=datetime.datetime(2025, 1, 1), description="When the account was opened (EST)"
    )
    last_extension_date: datetime.date | None = Field(
        default=None, description="When they last had a payment extension"
    )
    goodwill_credit_used_this_year: float = Field(
        default=0.0, description="Goodwill credit given to them this year, in dollars"
    )


KEYS = {
    "plans": "plan_id",
    "customers": "customer_id",
    "lines": "line_id",
    "bills": "bill_id",
    "devices": "device_id",
}
"""Each table and the field its entities are kept by."""


class TelecomDB(BaseModel):
    """The carrier's database, each table by id (tau2-bench's lists, read in order)."""

    plans: dict[str, Plan] = Field(default_factory=dict)
    customers: dict[str, Customer] = Field(default_factory=dict)
    lines: dict[str, Line] = Field(default_factory=dict)
    bills: dict[str, Bill] = Field(default_factory=dict)
    devices: dict[str, Device] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _by_id(cls, data: Any) -> Any:
        """tau2-bench's form, a list per table, as tables by id."""
        if not isinstance(data, dict):
            return data
        return {
            name: {entity.get(KEYS[name]): entity for entity in value}
            if name in KEYS and isinstance(value, list) and all(isinstance(entity, dict) for entity in value)
            else value
            for name, value in data.items()
        }


class TelecomStore(Store):
    plans: Table[Plan]
    customers: Table[Customer]
    lines: Table[Line]
    bills: Table[Bill]
    devices: Table[Device]

    def update(self, data: Mapping[str, Any]) -> None:
        """Refuse a task's initialization data for the carrier's side: tau2-bench's is a whole table as a list,
        which replaces the table, and no task of the pinned data has any.

        Raises:
            ValueError: Always, naming the tables.
        """
        raise ValueError(
            f"telecom's initialization data for the agent ({', '.join(data)}) is not supported: tau2-bench's replaces "
            "whole tables, and no task of the pinned data has any; set the state with initialization actions instead"
        )
