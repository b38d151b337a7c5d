"""Acceptance tests for shopping carts."""

import pytest

from app.cart import Cart, LineItem


def test_add_appends_a_line_item():
    cart = Cart("alice")
    cart.add("apple", quantity=2, unit_price_cents=50)
    assert cart.items == [LineItem("apple", 2, 50)]


def test_carts_do_not_share_items():
    first, second = Cart("bob"), Cart("carol")
    first.add("pear", unit_price_cents=80)
    assert second.items == []


def test_total_sums_quantity_times_price():
    cart = Cart("dave")
    cart.add("apple", quantity=3, unit_price_cents=50)
    cart.add("melon", unit_price_cents=300)
    total = cart.total_cents()
    assert total == 450


def test_zero_quantity_is_rejected():
    with pytest.raises(ValueError):
        Cart("erin").add("apple", quantity=0)
