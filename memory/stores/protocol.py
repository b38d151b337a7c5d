"""The `MemoryStore` protocol and the one place a memory URL becomes a store.

Every store answers the same calls with the same meaning: scope, error type and expiry
narrow the candidates before anything is ranked, and `score` is cosine similarity.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

import numpy as np

from memory.errors import MemoryStoreError
from memory.records import (
    DeliveryStats,
    MemoryRecord,
    MemorySearchResult,
    SearchRequest,
    StoreStats,
)


class MemoryStore(Protocol):
    """Durable records with their vectors, searchable by meaning and by keywords."""

    url: str

    async def upsert_many(self, items: Sequence[tuple[MemoryRecord, np.ndarray]]) -> None:
        """Write every record (insert or replace by memory_id) in one transaction."""

    async def get(self, memory_id: str) -> MemoryRecord | None: ...

    async def delete(self, memory_id: str) -> bool:
        """Remove the record, its vector, keyword entry and audit rows; False if absent."""

    async def search(self, request: SearchRequest) -> list[MemorySearchResult]:
        """Best first by the store's ranking."""

    async def list_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> list[MemoryRecord]:
        """Newest first."""

    async def count(self) -> int: ...

    async def vectors(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those ids that exist."""

    async def record_deliveries(
        self, session_id: str, response_id: str | None, results: Iterable[MemorySearchResult]
    ) -> None: ...

    async def mark_session_outcome(self, session_id: str, green: bool) -> None: ...

    async def delivery_stats(self, memory_ids: Sequence[str]) -> dict[str, DeliveryStats]: ...

    async def stats(self, now: datetime) -> StoreStats: ...

    async def close(self) -> None: ...


def sqlite_path_from_url(url: str) -> Path:
    """`sqlite:///relative/path` or `sqlite:////absolute/path` to a filesystem path."""
    if not url.startswith("sqlite:///"):
        raise MemoryStoreError(f"malformed memory URL {url!r}: expected sqlite:///PATH")
    path = url.removeprefix("sqlite:///")
    if not path or path.endswith("/"):
        raise MemoryStoreError(f"malformed memory URL {url!r}: no database file named")
    return Path(path).expanduser()


def open_store(url: str) -> MemoryStore:
    """Open the store a memory URL names; a URL we cannot serve is one clear error."""
    scheme = urlsplit(url).scheme if "://" in url else ""
    if scheme == "sqlite":
        from memory.stores.sqlite import SQLiteMemoryStore

        return SQLiteMemoryStore(sqlite_path_from_url(url))
    if scheme == "vectorai":
        from memory.stores.vectorai import VectorAIMemoryStore, vectorai_address

        return VectorAIMemoryStore(*vectorai_address(url))
    raise MemoryStoreError(
        f"unsupported memory URL {url!r}: expected sqlite:///PATH or vectorai://HOST:PORT"
    )
