"""τ²-bench's retail domain: an online store's customer service, where the agent finds the customer, reads their
orders and the catalogue, and cancels, modifies, returns and exchanges orders under the store's policy.

The tools behave as tau2-bench's (commit a2c0247) do, quirks included: the same checks in the same order with the
same messages, the same float arithmetic and rounding, the same changes left behind by a call that fails midway.
Where they differ, on purpose:

- Arguments are held to the published schema before a tool runs (objects closed, types, the cancellation reason an
  enum), where upstream runs the call and lets Python decide. So a call upstream fails on later, or runs on a value
  of the wrong type, is refused first with a message naming the argument: a cancellation with a reason outside the
  two allowed is refused even when the order does not exist or is not pending (upstream says "Order not found" or
  "Non-pending order cannot be cancelled" then). No refused call changes the database.
- `calculate` refuses an integer power whose result would exceed `MAX_POWER_BITS` bits, which upstream's `eval`
  would work on for minutes or hours (and then, unless the result is divided back down, fail to make a float of).
  Otherwise its results and errors are `eval`'s on the running Python, as upstream's are (Python versions word a
  few errors differently, such as for an expression nested too deep to parse).
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import Field

from agent_env.envs.tau2.calculator import calculate
from agent_env.envs.tau2.environment import Tau2Environment, tool_text
from agent_env.envs.tau2.retail_db import (
    Address,
    CancelReason,
    GiftCard,
    Order,
    OrderPayment,
    PaymentMethod,
    Product,
    RetailDB,
    RetailStore,
    User,
    Variant,
)
from agent_env.errors import ToolError
from agent_env.tools import tool

OrderId = Annotated[
    str,
    Field(
        description="The order's id: '#W' then seven digits, such as '#W0000000' (the '#' is part of the id)"
    ),
]
UserId = Annotated[
    str,
    Field(
        description="The customer's user id, such as 'sara_doe_496', as find_user_id_by_email or find_user_id_by_name_zip gives it"
    ),
]
ProductId = Annotated[
    str,
    Field(
        description="A product's id, ten digits such as '6086499569' (list_all_product_types gives them); not an item id"
    ),
]
ItemId = Annotated[str, Field(description="An item's id, ten digits such as '1008292230'; not a product id")]
OrderItemIds = Annotated[
    list[str],
    Field(
        description="The ids of the order's items to act on: item ids (not product ids), such as '1008292230'; an item the order holds more than once may be listed up to that many times"
    ),
]
NewItemIds = Annotated[
    list[str],
    Field(
        description="The item ids to change them to, one for each of item_ids in the same order: an available item of the same product as the item at that position, with other options"
    ),
]
PaymentMethodId = Annotated[
    str,
    Field(
        description="The id of one of the order's customer's payment methods, such as 'gift_card_0000000', 'credit_card_0000000' or 'paypal_0000000' (get_user_details lists them with gift card balances; get_order_details shows what the order was paid with)"
    ),
]
Address1 = Annotated[
    str, Field(description="The address's first line: number and street, such as '123 Main St'")
]
Address2 = Annotated[
    str, Field(description="The address's second line, such as 'Apt 1' or 'Suite 100'; '' for none")
]
City = Annotated[str, Field(description="The city, such as 'San Francisco'")]
State = Annotated[str, Field(description="The state's two-letter code, such as 'CA'")]
Country = Annotated[str, Field(description="The country, such as 'USA'")]
Zip = Annotated[str, Field(description="The five-digit zip code, as text, such as '12345'")]


class Tau2Retail(Tau2Environment):
    """τ²-bench retail: authenticate the customer, then help with their orders, returns, exchanges and address, as
    the store's policy allows."""

    domain = "retail"
    base_model = RetailDB
    store = RetailStore
    db: RetailStore

    # Reads.

    @tool
    def calculate(self, expression: str) -> str:
        """Work out an arithmetic expression; the result is rounded to two decimals.

        Args:
            expression: The expression, such as '(49.99 - 35.5) * 2': numbers, + - * /, parentheses and spaces, nothing else.
        """
        return calculate(expression)

    @tool
    def find_user_id_by_email(self, email: str) -> str:
        """Find a customer's user id from their email address (in any case).

        Args:
            email: The customer's email address, such as 'jane.doe1234@example.com'.
        """
        wanted = email.lower()
        for user_id, user in self.db.users.items():
            if user.email.lower() == wanted:
                return user_id
        raise ToolError("User not found")

    @tool
    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: Zip) -> str:
        """Find a customer's user id from their name (in any case) and their default address's zip code; look customers up by email first, and use this when they cannot give it or it finds no one.

        Args:
            first_name: The customer's first name, such as 'Jane'.
            last_name: The customer's last name, such as 'Doe'.
        """
        first, last = first_name.lower(), last_name.lower()
        for user_id, user in self.db.users.items():
            name = user.name
            if (
                name.first_name.lower() == first
                and name.last_name.lower() == last
                and user.address.zip == zip
            ):
                return user_id
        raise ToolError("User not found")

    @tool
    def get_item_details(self, item_id: ItemId) -> str:
        """One item's options, availability and price."""
        for product in self.db.products.values():
            if item_id in product.variants:
                return tool_text(product.variants[item_id])
        raise ToolError("Item not found")

    @tool
    def get_order_details(self, order_id: OrderId) -> str:
        """An order's status and all about it: its items, shipping address, shipments, payments and refunds."""
        return tool_text(self._order(order_id))

    @tool
    def get_product_details(self, product_id: ProductId) -> str:
        """A product type and every item it comes in, each with its item id, options, availability and price."""
        return tool_text(self._product(product_id))

    @tool
    def get_user_details(self, user_id: UserId) -> str:
        """A customer's profile: name, default address, email, payment methods (with gift card balances) and the ids of their orders."""
        return tool_text(self._user(user_id))

    @tool
    def list_all_product_types(self) -> str:
        """The name and product id of each of the store's 50 product types, as a JSON object from name to product id sorted by name; each product type comes in items of different options, each with an item id of its own."""
        return json.dumps(
            {product.name: product.product_id for product in self.db.products.values()}, sort_keys=True
        )

    # Writes. Before each, the agent tells the customer exactly what will change and waits for an explicit yes.

    @tool
    def cancel_pending_order(self, order_id: OrderId, reason: CancelReason) -> str:
        """Cancel an order whose status is 'pending' and refund each of its payments: at once to a gift card, in 5 to 7 business days to any other method. Tell the customer what will be cancelled and get their explicit yes first. Gives the order as it is afterwards.

        Args:
            reason: Why the customer cancels; no other reason is accepted.
        """
        order = self._order(order_id)
        if order.status != "pending":
            raise ToolError("Non-pending order cannot be cancelled")
        if reason not in (
            "no longer needed",
            "ordered by mistake",
        ):  # the schema's enum; kept for direct calls
            raise ToolError("Invalid reason")
        refunds = []
        for payment in order.payment_history:
            refunds.append(
                OrderPayment(
                    transaction_type="refund",
                    amount=payment.amount,
                    payment_method_id=payment.payment_method_id,
                )
            )
            if isinstance(self._payment_method(order.user_id, payment.payment_method_id), GiftCard):
                card = self._gift_card(order.user_id, payment.payment_method_id)
                card.balance = round(card.balance + payment.amount, 2)
        changed = self.db.orders.edit(order_id)
        changed.status = "cancelled"
        changed.cancel_reason = reason
        changed.payment_history.extend(refunds)
        return tool_text(changed)

    @tool
    def exchange_delivered_order_items(
        self,
        order_id: OrderId,
        item_ids: OrderItemIds,
        new_item_ids: NewItemIds,
        payment_method_id: PaymentMethodId,
    ) -> str:
        """Request an exchange of items of an order whose status is 'delivered' for other items of the same products; the order becomes 'exchange requested' and the customer is emailed how to send the old items back. A delivered order can be exchanged or returned only once, so gather every item to exchange first. The payment method pays the price difference or receives its refund (a gift card must hold enough to pay it). Tell the customer the details and get their explicit yes first. Gives the order as it is afterwards."""
        order = self._order(order_id)
        if order.status != "delivered":
            raise ToolError("Non-delivered order cannot be exchanged")
        held = [item.item_id for item in order.items]
        for item_id in item_ids:
            if item_ids.count(item_id) > held.count(item_id):
                raise ToolError(f"Number of {item_id} not found.")
        if len(item_ids) != len(new_item_ids):
            raise ToolError("The number of items to be exchanged should match.")
        # An int until an item is priced, as upstream's: an empty exchange stores 0, not 0.0.
        difference: float = 0
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
            item = next((item for item in order.items if item.item_id == item_id), None)
            if item is None:
                raise ToolError(f"Item {item_id} not found")
            variant = self._variant(item.product_id, new_item_id)
            if not variant.available:
                raise ToolError(f"New item {new_item_id} not found or available")
            difference += variant.price - item.price
        difference = round(difference, 2)
        method = self._payment_method(order.user_id, payment_method_id)
        if isinstance(method, GiftCard) and method.balance < difference:
            raise ToolError("Insufficient gift card balance to pay for the price difference")
        changed = self.db.orders.edit(order_id)
        changed.status = "exchange requested"
        changed.exchange_items = sorted(item_ids)
        changed.exchange_new_items = sorted(new_item_ids)
        changed.exchange_payment_method_id = payment_method_id
        changed.exchange_price_difference = difference
        return tool_text(changed)

    @tool
    def modify_pending_order_address(
        self,
        order_id: OrderId,
        address1: Address1,
        address2: Address2,
        city: City,
        state: State,
        country: Country,
        zip: Zip,
    ) -> str:
        """Change where a pending order (status 'pending' or 'pending (item modified)') ships. Tell the customer the new address and get their explicit yes first. Gives the order as it is afterwards."""
        order = self._order(order_id)
        if "pending" not in order.status:
            raise ToolError("Non-pending order cannot be modified")
        changed = self.db.orders.edit(order_id)
        changed.address = Address(
            address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
        )
        return tool_text(changed)

    @tool
    def modify_pending_order_items(
        self,
        order_id: OrderId,
        item_ids: OrderItemIds,
        new_item_ids: NewItemIds,
        payment_method_id: PaymentMethodId,
    ) -> str:
        """Change items of an order whose status is 'pending' to other available items of the same products, paying or refunding the price difference with the payment method (a gift card must hold enough to pay it). This can be done only once: the order becomes 'pending (item modified)', and can then be neither modified nor cancelled, so have the customer confirm they have named every item to change, and get their explicit yes first. Gives the order as it is afterwards."""
        order = self._order(order_id)
        if order.status != "pending":
            raise ToolError("Non-pending order cannot be modified")
        held = [item.item_id for item in order.items]
        for item_id in item_ids:
            if item_ids.count(item_id) > held.count(item_id):
                raise ToolError(f"{item_id} not found")
        if len(item_ids) != len(new_item_ids):
            raise ToolError("The number of items to be exchanged should match")
        difference: float = 0
        variant: Variant | None = None
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
            if item_id == new_item_id:
                raise ToolError("The new item id should be different from the old item id")
            item = next((item for item in order.items if item.item_id == item_id), None)
            if item is None:
                raise ToolError(f"Item {item_id} not found")
            variant = self._variant(item.product_id, new_item_id)
            if not variant.available:
                raise ToolError(f"New item {new_item_id} not found or available")
            difference += variant.price - item.price
        method = self._payment_method(order.user_id, payment_method_id)
        if isinstance(method, GiftCard) and method.balance < difference:
            raise ToolError("Insufficient gift card balance to pay for the new item")
        changed = self.db.orders.edit(order_id)
        changed.payment_history.append(
            OrderPayment(
                transaction_type="payment" if difference > 0 else "refund",
                amount=abs(difference),  # not rounded, as upstream's
                payment_method_id=payment_method_id,
            )
        )
        if isinstance(method, GiftCard):
            card = self._gift_card(order.user_id, payment_method_id)
            card.balance = round(card.balance - difference, 2)
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
            item = next((item for item in changed.items if item.item_id == item_id), None)
            if item is None or variant is None:
                raise ToolError(f"Item {item_id} not found")
            # Upstream's quirk, kept: each changed item takes the id asked for it, but the price and options of the
            # last new item looked up above.
            item.item_id = new_item_id
            item.price = variant.price
            item.options = dict(variant.options)
        changed.status = "pending (item modified)"
        return tool_text(changed)

    @tool
    def modify_pending_order_payment(self, order_id: OrderId, payment_method_id: str) -> str:
        """Pay a pending order with another of the customer's payment methods: its one payment moves to the new method, and the old method is refunded (a gift card at once, any other in 5 to 7 business days). A gift card must hold the order's whole amount. Tell the customer the details and get their explicit yes first. Gives the order as it is afterwards.

        Args:
            payment_method_id: The payment method to pay with instead, not the one the order was paid with: the id of one of the order's customer's payment methods, such as 'gift_card_0000000' or 'credit_card_0000000' (get_user_details lists them with gift card balances).
        """
        order = self._order(order_id)
        if "pending" not in order.status:
            raise ToolError("Non-pending order cannot be modified")
        method = self._payment_method(order.user_id, payment_method_id)
        if len(order.payment_history) != 1 or order.payment_history[0].transaction_type != "payment":
            raise ToolError("There should be exactly one payment for a pending order")
        old_id = order.payment_history[0].payment_method_id
        if old_id == payment_method_id:
            raise ToolError("The new payment method should be different from the current one")
        amount = order.payment_history[0].amount
        if isinstance(method, GiftCard) and method.balance < amount:
            raise ToolError("Insufficient gift card balance to pay for the order")
        changed = self.db.orders.edit(order_id)
        changed.payment_history.extend(
            [
                OrderPayment(transaction_type="payment", amount=amount, payment_method_id=payment_method_id),
                OrderPayment(transaction_type="refund", amount=amount, payment_method_id=old_id),
            ]
        )
        if isinstance(method, GiftCard):
            card = self._gift_card(order.user_id, payment_method_id)
            card.balance = round(card.balance - amount, 2)
        if isinstance(self._payment_method(order.user_id, old_id), GiftCard):
            card = self._gift_card(order.user_id, old_id)
            card.balance = round(card.balance + amount, 2)
        return tool_text(changed)

    @tool
    def modify_user_address(
        self,
        user_id: UserId,
        address1: Address1,
        address2: Address2,
        city: City,
        state: State,
        country: Country,
        zip: Zip,
    ) -> str:
        """Change a customer's default address. Tell the customer the new address and get their explicit yes first. Gives the customer's profile as it is afterwards."""
        self._user(user_id)
        changed = self.db.users.edit(user_id)
        changed.address = Address(
            address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
        )
        return tool_text(changed)

    @tool
    def return_delivered_order_items(
        self, order_id: OrderId, item_ids: OrderItemIds, payment_method_id: str
    ) -> str:
        """Request the return of items of an order whose status is 'delivered'; the order becomes 'return requested' and the customer is emailed how and where to send the items. A delivered order can be returned or exchanged only once. Tell the customer the details and get their explicit yes first. Gives the order as it is afterwards.

        Args:
            payment_method_id: The payment method that receives the refund: the one the order was paid with, or a gift card of the customer's, such as 'gift_card_0000000' (get_order_details shows the one paid with, get_user_details the customer's gift cards).
        """
        order = self._order(order_id)
        if order.status != "delivered":
            raise ToolError("Non-delivered order cannot be returned")
        user = self._user(order.user_id)
        method = self._payment_method(user.user_id, payment_method_id)
        if (
            not isinstance(method, GiftCard)
            and payment_method_id != order.payment_history[0].payment_method_id
        ):
            raise ToolError("Payment method should be the original payment method")
        held = [item.item_id for item in order.items]
        for item_id in item_ids:
            if item_ids.count(item_id) > held.count(item_id):
                raise ToolError("Some item not found")
        changed = self.db.orders.edit(order_id)
        changed.status = "return requested"
        changed.return_items = sorted(item_ids)
        changed.return_payment_method_id = payment_method_id
        return tool_text(changed)

    @tool
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the customer over to a human agent, with a summary of their issue. Do this only when the customer asks for a human agent, or when the policy and your tools cannot resolve their issue; then tell the customer (the policy says how).

        Args:
            summary: The customer's issue, summed up for the human agent.
        """
        return "Transfer successful"

    # Lookups, as upstream's: the first failing one names what is missing.

    def _order(self, order_id: str) -> Order:
        found = self.db.orders.get(order_id)
        if found is None:
            raise ToolError("Order not found")
        return found

    def _user(self, user_id: str) -> User:
        found = self.db.users.get(user_id)
        if found is None:
            raise ToolError("User not found")
        return found

    def _product(self, product_id: str) -> Product:
        found = self.db.products.get(product_id)
        if found is None:
            raise ToolError("Product not found")
        return found

    def _variant(self, product_id: str, item_id: str) -> Variant:
        variant = self._product(product_id).variants.get(item_id)
        if variant is None:
            raise ToolError("Variant not found")
        return variant

    def _payment_method(self, user_id: str, payment_method_id: str) -> PaymentMethod:
        method = self._user(user_id).payment_methods.get(payment_method_id)
        if method is None:
            raise ToolError("Payment method not found")
        return method

    def _gift_card(self, user_id: str, payment_method_id: str) -> GiftCard:
        """The episode's own copy of a gift card of the user's, to change its balance."""
        card = self.db.users.edit(user_id).payment_methods[payment_method_id]
        assert isinstance(card, GiftCard)
        return card
