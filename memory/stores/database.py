"""One SQLite connection shared by threads, as the SQLite store and the pending queue use it:
one call at a time under a lock, off the event loop, SQLite's errors as MemoryStoreError
sentences, and each write one IMMEDIATE transaction."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from memory.errors import MemoryStoreError
from memory.stores import migrations

T = TypeVar("T")


class LockedDatabase:
    """The database at `path`, opened and migrated (migrations.open_database)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn = migrations.open_database(self.path)

    async def _run(self, function: Callable[..., T], *args: object) -> T:
        return await asyncio.to_thread(self._locked, function, *args)

    def _locked(self, function: Callable[..., T], *args: object) -> T:
        with self._lock:
            try:
                return function(*args)
            except sqlite3.DatabaseError as exc:
                raise MemoryStoreError(migrations.describe_error(exc, self.path)) from exc

    def _transaction(self, statements: Callable[[sqlite3.Connection], T]) -> T:
        """Run `statements` as one IMMEDIATE transaction; all of it lands or none does."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            result = statements(self._conn)
            self._conn.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (a full disk does): a failing ROLLBACK
            # must not hide the error that caused it.
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        return result
