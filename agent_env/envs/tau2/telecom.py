"""τ²-bench's telecom domain: an agent troubleshoots a customer's phone with them, the customer working the phone
with tools of their own (dual control), and fixes their account with its own: lines, roaming, data, bills.

Each task starts from its initial state: the user's name and number, where they are, and initialization actions
that break the phone or the account (airplane mode on, a SIM out, a broken APN, data used up, an overdue bill...).
It is scored by assertions on the final state of either side (mobile data works and is excellent, an MMS can be
sent), and for the tasks that cannot be fixed, by whether the agent transferred the user (ACTION). The two sides
are linked after every step (`Tau2Telecom.sync`): the phone finds the line's status, roaming, data left and a bill
to pay in the carrier's database, and the carrier finds a bill the user paid.

The tools do what tau2-bench's do, and answer with the same text; the clock is fixed at 2025-02-25. What differs is
deliberate: every tool publishes its full schema and a call is checked against it before the tool runs; a bill the
agent's data refuel opens gets an id derived from the account (tau2-bench draws a random one). Two policies, as
upstream's: `tau2-telecom` (the tech support manual) and `tau2-telecom-workflow` (the workflow); and each in solo
mode (`tau2-telecom-solo`, `tau2-telecom-workflow-solo`), the ablation where the agent holds the user's tools and
works from the ticket.
"""

from __future__ import annotations

import datetime
import hashlib
from typing import Annotated, ClassVar, Literal, TypeVar, cast

from pydantic import BaseModel, Field, WithJsonSchema

from agent_env.envs.tau2.environment import Tau2Environment, solo_environment, tool_text
from agent_env.envs.tau2.store import Table
from agent_env.envs.tau2.tasks import DomainFiles
from agent_env.envs.tau2.telecom_db import (
    TODAY,
    Bill,
    Customer,
    Device,
    Line,
    LineItem,
    Plan,
    TelecomDB,
    TelecomStore,
)
from agent_env.envs.tau2.telecom_device import (
    USER,
    PaymentRequest,
    TelecomUserDB,
    TelecomUserStore,
    UserPhone,
)
from agent_env.errors import ToolError
from agent_env.tools import tool

Gigabytes = Annotated[
    int | float,
    WithJsonSchema({"type": "number", "exclusiveMinimum": 0}),
    Field(description="How much data to add, in GB, such as 2.0; more than 0"),
]
"""A data amount, received as JSON sent it: tau2-bench echoes 2 as `2 GB` and 2.0 as `2.0 GB`."""

CustomerId = Annotated[str, Field(description="The customer's id, such as 'C1001'")]
LineId = Annotated[str, Field(description="The id of one of the customer's lines, such as 'L1002'")]

POLICIES = {
    ("manual", False): ("main_policy.md", "tech_support_manual.md"),
    ("workflow", False): ("main_policy.md", "tech_support_workflow.md"),
    ("manual", True): ("main_policy_solo.md", "tech_support_manual.md"),
    ("workflow", True): ("main_policy_solo.md", "tech_support_workflow_solo.md"),
}
"""The two files each policy is made of, in and out of solo mode, as tau2-bench's telecom environment reads them."""


class Tau2Telecom(Tau2Environment):
    """τ²-bench's telecom domain, with its tech support manual: fix a customer's phone service with them, and
    their account."""

    domain = "telecom"
    base_model = TelecomDB
    store = TelecomStore
    user_side = UserPhone
    user_base_model = TelecomUserDB
    user_store = TelecomUserStore
    files = DomainFiles(
        database="db.toml",
        user_database="user_db.toml",
        policy=None,
        documents=tuple(dict.fromkeys(name for pair in POLICIES.values() for name in pair)),
    )
    tech_support: ClassVar[Literal["manual", "workflow"]] = "manual"
    db: TelecomStore

    def policy(self) -> str:
        """The main policy and the tech support policy, framed as tau2-bench's telecom environment frames them."""
        main, tech = POLICIES[(self.tech_support, self.solo)]
        documents = self.data.documents
        return (
            f"<main_policy>\n{documents[main]}\n</main_policy>\n"
            f"<tech_support_policy>\n{documents[tech]}\n</tech_support_policy>"
        )

    # Linking the two sides, as tau2-bench's sync_tools does.

    def sync(self) -> None:
        """Bring the line's state over to the user's phone (active, may roam, data used up) and a bill awaiting
        payment over as a payment request; a request the user paid marks its bill paid."""
        if self.user_db is None:
            return
        users = cast(TelecomUserStore, self.user_db)
        around = users.surroundings[USER]
        number = around.phone_number
        if number is None:
            return
        line = self._line_by_phone(number)
        plan = self._plan(line.plan_id)
        request = around.payment_request
        if request is not None and request.paid:
            self._bill_for_change(request.bill_id).status = "Paid"
            request = None
        if request is None:
            awaiting = self._awaiting_payment(self.get_customer(number))
            if awaiting:
                request = PaymentRequest(bill_id=awaiting[0].bill_id, amount_due=awaiting[0].total_due)
        linked = {
            "line_active": line.status == "Active",
            "roaming_allowed": line.roaming_enabled,
            "mobile_data_usage_exceeded": line.data_used_gb >= plan.data_limit_gb + line.data_refueling_gb,
            "payment_request": request,
        }
        differing = {name: value for name, value in linked.items() if getattr(around, name) != value}
        if differing:  # copied only when something changes
            changed = users.surroundings.edit(USER)
            for name, value in differing.items():
                setattr(changed, name, value)

    # Reading the database, failing with tau2-bench's messages.

    def get_customer(self, phone_number: str) -> Customer:
        """The customer whose contact number or one of whose lines' is `phone_number`, the first in the file."""
        for customer in self.db.customers.values():
            if customer.phone_number == phone_number:
                return customer
            for line_id in customer.line_ids:
                if self._line(line_id).phone_number == phone_number:
                    return customer
        raise ToolError(f"Customer with phone number {phone_number} not found")

    def _customer(self, customer_id: str) -> Customer:
        return _by_id(self.db.customers, customer_id, "Customer")

    def _line(self, line_id: str) -> Line:
        return _by_id(self.db.lines, line_id, "Line")

    def _line_by_phone(self, phone_number: str) -> Line:
        for line in self.db.lines.values():
            if line.phone_number == phone_number:
                return line
        raise ToolError(f"Line with phone number {phone_number} not found")

    def _plan(self, plan_id: str) -> Plan:
        return _by_id(self.db.plans, plan_id, "Plan")

    def _bill(self, bill_id: str) -> Bill:
        return _by_id(self.db.bills, bill_id, "Bill")

    def _device(self, device_id: str) -> Device:
        return _by_id(self.db.devices, device_id, "Device")

    def _bill_for_change(self, bill_id: str) -> Bill:
        self._bill(bill_id)
        return self.db.bills.edit(bill_id)

    def _customers_line(self, customer_id: str, line_id: str) -> Line:
        """One of the customer's lines."""
        if line_id not in self._customer(customer_id).line_ids:
            raise ToolError(f"Line {line_id} not found for customer {customer_id}")
        return self._line(line_id)

    def _awaiting_payment(self, customer: Customer) -> list[Bill]:
        return [bill for bill in map(self._bill, customer.bill_ids) if bill.status == "Awaiting Payment"]

    def _charge(self, customer_id: str, amount: int | float, description: str) -> None:
        """Put a charge (or a credit, below 0) on the customer's draft bill, opening one for next month if there is
        none."""
        customer = self._customer(customer_id)
        draft = next((bill for bill in map(self._bill, customer.bill_ids) if bill.status == "Draft"), None)
        if draft is None:
            start = (TODAY.replace(day=1) + datetime.timedelta(days=32)).replace(day=1)
            end = start.replace(month=start.month % 12 + 1, year=start.year + start.month // 12)
            bill_id = new_bill_id(customer)
            draft = Bill(
                bill_id=bill_id,
                customer_id=customer_id,
                period_start=start,
                period_end=end - datetime.timedelta(days=1),
                issue_date=start,
                total_due=0,
                due_date=start + datetime.timedelta(days=14),
                status="Draft",
            )
            self.db.bills.insert(bill_id, draft)
            self.db.customers.edit(customer_id).bill_ids.append(bill_id)
        else:
            draft = self.db.bills.edit(draft.bill_id)
        kind = "Credit" if amount < 0 else "Charge"
        draft.line_items.append(LineItem(description=description, amount=amount, date=TODAY, item_type=kind))
        draft.total_due += amount

    # The agent's tools.

    @tool
    def get_customer_by_phone(
        self, phone_number: Annotated[str, Field(description="The phone number, such as '555-123-2002'")]
    ) -> str:
        """Find the customer a phone number belongs to: their contact number, or the number of one of their lines. Returns their profile."""
        return tool_text(self.get_customer(phone_number))

    @tool
    def get_customer_by_id(self, customer_id: CustomerId) -> str:
        """Look up a customer by their id. Returns their profile: identity, address, account status, payment methods, and the ids of their lines and bills."""
        return tool_text(self._customer(customer_id))

    @tool
    def get_customer_by_name(
        self,
        full_name: Annotated[
            str, Field(description="The customer's full name, such as 'John Smith' (any case)")
        ],
        dob: Annotated[str, Field(description="Their date of birth, YYYY-MM-DD, such as '1985-06-15'")],
    ) -> str:
        """Find customers by full name and date of birth. Returns every match (none, one, or several when names are alike)."""
        return tool_text(
            [
                customer
                for customer in self.db.customers.values()
                if customer.full_name.lower() == full_name.lower() and customer.date_of_birth == dob
            ]
        )

    @tool
    def get_details_by_id(
        self,
        id: Annotated[
            str,
            Field(
                description="An id, whose first letter says what it names: 'L' a line, 'D' a device, 'B' a bill, 'C' a customer, 'P' a plan; such as 'L1002'"
            ),
        ],
    ) -> str:
        """Look up a line, device, bill, customer or plan by its id. Returns it whole."""
        kinds = {"L": self._line, "D": self._device, "B": self._bill, "C": self._customer, "P": self._plan}
        read = kinds.get(id[:1])
        if read is None:
            raise ToolError(f"Unknown ID format or type: {id}")
        return tool_text(read(id))

    @tool
    def suspend_line(
        self,
        customer_id: CustomerId,
        line_id: LineId,
        reason: Annotated[str, Field(description="Why the line is suspended")],
    ) -> str:
        """Suspend one of a customer's lines, which must be active; it may stay suspended up to 6 months, at a $5 monthly holding fee. Returns the line."""
        if self._customers_line(customer_id, line_id).status != "Active":
            raise ToolError("Line must be active to suspend")
        line = self.db.lines.edit(line_id)
        line.status, line.suspension_start_date = "Suspended", TODAY
        return tool_text(
            {"message": "Line suspended successfully. $5/month holding fee will apply.", "line": line}
        )

    @tool
    def resume_line(self, customer_id: CustomerId, line_id: LineId) -> str:
        """Put a suspended (or pending activation) line of a customer back in service. Returns the line."""
        if self._customers_line(customer_id, line_id).status not in ("Suspended", "Pending Activation"):
            raise ToolError("Line must be suspended to resume")
        line = self.db.lines.edit(line_id)
        line.status, line.suspension_start_date = "Active", None
        return tool_text({"message": "Line resumed successfully", "line": line})

    @tool
    def get_bills_for_customer(
        self,
        customer_id: CustomerId,
        limit: Annotated[int, Field(description="The most bills to return (12 unless given)")] = 12,
    ) -> str:
        """List a customer's bills, the most recently issued first."""
        bills = [self._bill(bill_id) for bill_id in self._customer(customer_id).bill_ids]
        return tool_text(sorted(bills, key=lambda bill: bill.issue_date, reverse=True)[:limit])

    @tool
    def send_payment_request(
        self,
        customer_id: CustomerId,
        bill_id: Annotated[str, Field(description="The id of one of the customer's bills, such as 'B1002'")],
    ) -> str:
        """Ask the customer to pay one of their bills: the bill awaits payment, and the customer finds the request on their phone. Refused while another of their bills awaits payment. It does not check whether the bill is paid already: check its status first."""
        customer = self._customer(customer_id)
        if self._awaiting_payment(customer):
            raise ToolError("A bill is already awaiting payment for this customer")
        if bill_id not in customer.bill_ids:
            raise ToolError(f"Bill {bill_id} not found for customer {customer_id}")
        self._bill_for_change(bill_id).status = "Awaiting Payment"
        return f"Payment request sent to the customer for bill {bill_id}"

    @tool
    def get_data_usage(self, customer_id: CustomerId, line_id: LineId) -> str:
        """See a line's data this billing cycle: used, its plan's limit, what was added beyond it, and when the cycle ends."""
        line = self._customers_line(customer_id, line_id)
        plan = self._plan(line.plan_id)
        next_month = datetime.date(TODAY.year, TODAY.month + 1 if TODAY.month < 12 else 1, 1)
        return tool_text(
            {
                "line_id": line_id,
                "data_used_gb": line.data_used_gb,
                "data_limit_gb": plan.data_limit_gb,
                "data_refueling_gb": line.data_refueling_gb,
                "cycle_end_date": next_month - datetime.timedelta(days=1),
            }
        )

    @tool
    def enable_roaming(self, customer_id: CustomerId, line_id: LineId) -> str:
        """Let one of a customer's lines roam abroad (international roaming)."""
        line = self._customers_line(customer_id, line_id)
        if line.roaming_enabled:
            return "Roaming was already enabled"
        self.db.lines.edit(line_id).roaming_enabled = True
        return "Roaming enabled successfully"

    @tool
    def disable_roaming(self, customer_id: CustomerId, line_id: LineId) -> str:
        """Stop one of a customer's lines from roaming abroad."""
        line = self._customers_line(customer_id, line_id)
        if not line.roaming_enabled:
            return "Roaming was already disabled"
        self.db.lines.edit(line_id).roaming_enabled = False
        return "Roaming disabled successfully"

    @tool
    def transfer_to_human_agents(
        self, summary: Annotated[str, Field(description="The user's issue, summed up for the human agent")]
    ) -> str:
        """Hand the user over to a human agent, with a summary of their issue. Only when the user asks for a human agent, or when the policy and your tools cannot resolve their issue."""
        return "Transfer successful"

    @tool
    def refuel_data(self, customer_id: CustomerId, line_id: LineId, gb_amount: Gigabytes) -> str:
        """Add data to one of a customer's lines for this billing cycle, charged to their next bill at their plan's price per GB."""
        plan_id = self._customers_line(customer_id, line_id).plan_id
        if gb_amount <= 0:
            raise ToolError("Refuel amount must be positive")
        plan = self._plan(plan_id)
        charge = gb_amount * plan.data_refueling_price_per_gb
        line = self.db.lines.edit(line_id)
        line.data_refueling_gb += gb_amount
        price = plan.data_refueling_price_per_gb
        self._charge(customer_id, charge, f"Data refueling: {gb_amount} GB at ${price}/GB")
        return tool_text(
            {
                "message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
                "new_data_refueling_gb": line.data_refueling_gb,
                "charge": charge,
            }
        )

    # What tasks call to set the scene (initialization actions).

    def set_data_usage(self, customer_id: str, line_id: str, data_used_gb: float) -> str:
        self._customers_line(customer_id, line_id)
        self.db.lines.edit(line_id).data_used_gb = data_used_gb
        return f"Data usage set to {data_used_gb} GB for line {line_id}"

    def suspend_line_for_overdue_bill(
        self, customer_id: str, line_id: str, new_bill_id: str, contract_ended: bool
    ) -> str:
        """Suspend a line for a bill of last month's plan charge, overdue."""
        line = self._line(line_id)
        if line.status != "Active":
            raise ToolError("Line must be active to suspend for unpaid bill")
        amount = self._plan(line.plan_id).price_per_month
        if amount <= 0:
            raise ToolError("Amount must be positive for overdue bill")
        customer = self._customer(customer_id)
        if any(self._bill(bill_id).status == "Overdue" for bill_id in customer.bill_ids):
            raise ToolError("Customer already has an overdue bill")
        last_day = TODAY.replace(day=1) - datetime.timedelta(days=1)
        first_day = last_day.replace(day=1)
        item = LineItem(
            description=f"Charge for line {line_id}", amount=amount, date=TODAY, item_type="Charge"
        )
        bill = Bill(
            bill_id=new_bill_id,
            customer_id=customer_id,
            period_start=first_day,
            period_end=last_day,
            issue_date=first_day,
            total_due=0,
            due_date=first_day + datetime.timedelta(days=14),
            line_items=[item],
            status="Overdue",
        )
        bill.total_due += amount
        self.db.bills.insert(new_bill_id, bill)
        self.db.customers.edit(customer_id).bill_ids.append(new_bill_id)
        changed = self.db.lines.edit(line_id)
        changed.status, changed.suspension_start_date = "Suspended", TODAY
        if contract_ended:
            changed.contract_end_date = last_day
        return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"

    # What tasks check at the end (assertions).

    def assert_data_refueling_amount(self, customer_id: str, line_id: str, expected_amount: float) -> bool:
        return abs(self._customers_line(customer_id, line_id).data_refueling_gb - expected_amount) < 1e-6

    def assert_line_status(self, customer_id: str, line_id: str, expected_status: str) -> bool:
        return self._customers_line(customer_id, line_id).status == expected_status

    def assert_overdue_bill_exists(self, customer_id: str, overdue_bill_id: str) -> bool:
        if overdue_bill_id not in self._customer(customer_id).bill_ids:
            raise ToolError(f"Overdue bill {overdue_bill_id} not found")
        if self._bill(overdue_bill_id).status != "Overdue":
            raise ToolError(f"Overdue bill {overdue_bill_id} is not overdue")
        return True

    def assert_no_overdue_bill(self, overdue_bill_id: str) -> bool:
        bill = self.db.bills.get(overdue_bill_id)
        return bill is None or bill.status == "Paid"


M = TypeVar("M", bound=BaseModel)


def _by_id(table: Table[M], key: str, kind: str) -> M:
    """The entity `key` of `table`, or tau2-bench's error for one not found ("Line with ID L9 not found")."""
    found = table.get(key)
    if found is None:
        raise ToolError(f"{kind} with ID {key} not found")
    return found


def new_bill_id(customer: Customer) -> str:
    """The id of a bill opened for `customer`: 'B' and eight hex digits, as tau2-bench's, but derived from the
    account (its id and how many bills it has), not drawn at random, so that replaying an episode gives the same."""
    seed = f"{customer.customer_id}/{len(customer.bill_ids)}".encode()
    return f"B{hashlib.sha256(seed).hexdigest()[:8]}"


class Tau2TelecomWorkflow(Tau2Telecom):
    """τ²-bench's telecom domain, with its tech support workflow (`telecom-workflow`) in place of the manual."""

    tech_support = "workflow"


Tau2TelecomSolo = solo_environment(Tau2Telecom, "Tau2TelecomSolo")
Tau2TelecomWorkflowSolo = solo_environment(Tau2TelecomWorkflow, "Tau2TelecomWorkflowSolo")
