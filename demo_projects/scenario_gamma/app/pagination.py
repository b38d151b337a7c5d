"""Split result lists into numbered pages for the listing API."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import ceil
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of results; pages are numbered from 1."""

    items: list[T]
    number: int
    total_pages: int

    @property
    def has_next(self) -> bool:
        """Whether another page follows this one."""
        return self.number < self.total_pages


def paginate(items: Sequence[T], page: int = 1, per_page: int = 10) -> Page[T]:
    """Return page number ``page`` (1-based) of ``items``, ``per_page`` items a page.

    A page past the end is empty. Raises ``ValueError`` when ``page`` or
    ``per_page`` is not positive.
    """
    if page < 1 or per_page < 1:
        raise ValueError("page and per_page must be positive")
    total_pages = ceil(len(items) / per_page)
    start = page * per_page
    return Page(items=list(items[start : start + per_page]), number=page, total_pages=total_pages)
