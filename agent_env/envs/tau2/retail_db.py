"""τ²-bench retail's database as models: products and their variant items, users with their payment methods, and
orders. The field types are those whose JSON tau2-bench hashes (prices, balances and amounts are floats; an order's
cancellation, exchange and return fields are None until a tool sets them), so a dump of this model equals upstream's
`RetailDB.model_dump()` after the same calls."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_env.envs.tau2.store import Store, Table

OrderStatus = Literal[
    "processed",
    "pending",
    "pending (item modified)",
    "delivered",
    "cancelled",
    "exchange requested",
    "return requested",
]
CancelReason = Literal["no longer needed", "ordered by mistake"]
TransactionType = Literal["payment", "refund"]


class Variant(BaseModel):
    """One item of a product: a particular combination of its options, with its own id, stock and price."""

    item_id: str = Field(description="The item's id, ten digits such as '1008292230'; not a product id")
    options: dict[str, str] = Field(
        description="The item's option values by option name, e.g. {'color': 'blue'}"
    )
    available: bool = Field(description="Whether the item is in stock and can be ordered or exchanged to")
    price: float = Field(description="The item's price in dollars")


class Product(BaseModel):
    """A product type (one of the store's 50), with every item it comes in."""

    name: str = Field(description="The product type's name, such as 'T-Shirt'")
    product_id: str = Field(description="The product's id, ten digits such as '6086499569'; not an item id")
    variants: dict[str, Variant] = Field(description="The product's items, by item id")


class UserName(BaseModel):
    first_name: str = Field(description="The user's first name")
    last_name: str = Field(description="The user's last name")


class Address(BaseModel):
    """A postal address, a user's default one or an order's shipping one."""

    address1: str = Field(description="The first line: number and street, such as '123 Main St'")
    address2: str = Field(description="The second line, such as 'Suite 100', or '' when there is none")
    city: str = Field(description="The city")
    country: str = Field(description="The country, such as 'USA'")
    state: str = Field(description="The state's two-letter code, such as 'CA'")
    zip: str = Field(description="The five-digit zip code, as text")


class CreditCard(BaseModel):
    source: Literal["credit_card"] = Field(description="'credit_card'")
    id: str = Field(description="The payment method's id, such as 'credit_card_0000000'")
    brand: str = Field(description="The card's brand, such as 'visa'")
    last_four: str = Field(description="The card number's last four digits")


class Paypal(BaseModel):
    source: Literal["paypal"] = Field(description="'paypal'")
    id: str = Field(description="The payment method's id, such as 'paypal_0000000'")


class GiftCard(BaseModel):
    source: Literal["gift_card"] = Field(description="'gift_card'")
    id: str = Field(description="The payment method's id, such as 'gift_card_0000000'")
    balance: float = Field(description="What is left on the card, in dollars")


PaymentMethod = Annotated[CreditCard | GiftCard | Paypal, Field(discriminator="source")]


class User(BaseModel):
    """A customer: who they are, where they live, how they pay and what they ordered."""

    user_id: str = Field(description="The user's id, such as 'sara_doe_496'")
    name: UserName = Field(description="The user's name")
    address: Address = Field(description="The user's default address")
    email: str = Field(description="The user's email address")
    payment_methods: dict[str, PaymentMethod] = Field(description="The user's payment methods, by their id")
    orders: list[str] = Field(description="The ids of the user's orders, such as '#W0000000'")


class Fulfillment(BaseModel):
    """One shipment of an order's items."""

    tracking_id: list[str] = Field(description="The shipment's tracking ids")
    item_ids: list[str] = Field(description="The ids of the items it carries")


class OrderItem(BaseModel):
    """One item in an order, as it was bought."""

    name: str = Field(description="The product type's name")
    product_id: str = Field(description="The id of the item's product")
    item_id: str = Field(description="The item's id")
    price: float = Field(description="What the item cost, in dollars")
    options: dict[str, str] = Field(description="The item's option values by option name")


class OrderPayment(BaseModel):
    """One payment for an order, or one refund of it."""

    transaction_type: TransactionType = Field(description="'payment' or 'refund'")
    amount: float = Field(description="How much, in dollars")
    payment_method_id: str = Field(description="The id of the payment method paid with or refunded to")


class Order(BaseModel):
    """An order: what was bought, by whom, shipped where, how it was paid, and where it stands."""

    order_id: str = Field(description="The order's id: '#W' and seven digits, such as '#W0000000'")
    user_id: str = Field(description="The id of the user who placed it")
    address: Address = Field(description="Where the order ships")
    items: list[OrderItem] = Field(description="The items bought; the same item may appear more than once")
    status: OrderStatus = Field(description="Where the order stands")
    fulfillments: list[Fulfillment] = Field(description="The order's shipments")
    payment_history: list[OrderPayment] = Field(
        description="Every payment and refund of the order, oldest first"
    )
    cancel_reason: CancelReason | None = Field(None, description="Why it was cancelled, once it is")
    exchange_items: list[str] | None = Field(
        None, description="The ids of the items to exchange, once requested"
    )
    exchange_new_items: list[str] | None = Field(
        None, description="The ids of the items they are exchanged for"
    )
    exchange_payment_method_id: str | None = Field(
        None, description="The payment method that pays or receives the exchange's price difference"
    )
    exchange_price_difference: float | None = Field(
        None, description="What the new items cost more (negative: less) than the old ones, in dollars"
    )
    return_items: list[str] | None = Field(None, description="The ids of the items to return, once requested")
    return_payment_method_id: str | None = Field(None, description="The payment method the return refunds")


class RetailDB(BaseModel):
    """The whole retail database: products, users and orders, each by id."""

    model_config = ConfigDict(extra="forbid")

    products: dict[str, Product] = Field(description="Every product, by product id")
    users: dict[str, User] = Field(description="Every user, by user id")
    orders: dict[str, Order] = Field(description="Every order, by order id")


class RetailStore(Store):
    """An episode's retail database, copied on write: payment methods live in their user, so a gift card's balance
    changes through `users.edit(user_id)`."""

    products: Table[Product]
    users: Table[User]
    orders: Table[Order]
