"""Shopping carts: line items a customer has picked, and their total."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LineItem:
    """One product in a cart; prices are whole cents."""

    sku: str
    quantity: int
    unit_price_cents: int


class Cart:
    """A customer's cart, holding line items in the order they were added."""

    def __init__(self, customer_id: str, items: list[LineItem] = []) -> None:
        self.customer_id = customer_id
        self.items = items

    def add(self, sku: str, quantity: int = 1, unit_price_cents: int = 0) -> None:
        """Add ``quantity`` units of ``sku``; raises ``ValueError`` for a quantity below 1."""
        if quantity < 1:
            raise ValueError(f"quantity must be at least 1, got {quantity}")
        self.items.append(LineItem(sku, quantity, unit_price_cents))

    def total_cents(self) -> int:
        """The cart total in cents."""
        return sum(item.quantity * item.unit_price_cents for item in self.items)
