"""Acceptance tests for invoice arithmetic."""

from decimal import Decimal

from app.invoice import invoice_total, line_total, tax


def test_line_total_multiplies_price_by_quantity():
    assert line_total("19.99", 3) == Decimal("59.97")


def test_tax_rounds_a_half_cent_up():
    assert tax("0.70", "0.05") == Decimal("0.04")


def test_invoice_total_includes_tax():
    assert invoice_total([("0.35", 2)], "0.05") == Decimal("0.74")


def test_tax_on_a_whole_amount():
    assert tax("100.00", "0.08") == Decimal("8.00")
