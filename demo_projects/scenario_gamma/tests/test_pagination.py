"""Acceptance tests for pagination."""

import pytest

from app.pagination import paginate

ITEMS = list(range(1, 26))  # 25 results: pages of 10, 10 and 5


def test_first_page_starts_with_the_first_item():
    assert paginate(ITEMS, page=1, per_page=10).items == list(range(1, 11))


def test_last_page_holds_the_remainder():
    assert paginate(ITEMS, page=3, per_page=10).items == [21, 22, 23, 24, 25]


def test_total_pages_counts_a_partial_page():
    page = paginate(ITEMS, page=2, per_page=10)
    assert page.total_pages == 3
    assert page.has_next


def test_page_zero_is_rejected():
    with pytest.raises(ValueError):
        paginate(ITEMS, page=0)
