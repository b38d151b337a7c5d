"""Invoice arithmetic. Amounts arrive as decimal strings such as ``"19.99"``."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def to_cents(amount: Decimal) -> Decimal:
    """Round ``amount`` half-up to whole cents, as the billing rules require."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def line_total(unit_price: str, quantity: int) -> Decimal:
    """Price of ``quantity`` units at ``unit_price``."""
    return to_cents(Decimal(unit_price) * quantity)


def tax(amount: Decimal | str, rate: str) -> Decimal:
    """Tax on ``amount`` at ``rate`` (e.g. ``"0.05"``), rounded half-up to the cent."""
    return Decimal(str(round(float(amount) * float(rate), 2)))


def invoice_total(lines: Iterable[tuple[str, int]], rate: str) -> Decimal:
    """Subtotal of ``(unit_price, quantity)`` lines plus tax on the subtotal."""
    subtotal = sum((line_total(price, quantity) for price, quantity in lines), Decimal("0"))
    return to_cents(subtotal + tax(subtotal, rate))
