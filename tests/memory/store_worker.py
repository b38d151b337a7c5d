"""A separate process for continuity and durability tests: store, search or import, then exit.

Usage: python -m tests.memory.store_worker store|search|import DB ... (see `main`); import
writes records the test parsed and pickled.
It uses the hash embedder, so each process starts in well under a second.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import sys
from datetime import UTC, datetime, timedelta

from memory.service import MemoryService
from memory.stores.protocol import open_store
from memory.transfer import import_records
from tests.fakes import HashEmbedder

OUTCOME = "pytest passed with exit code 0"


async def store(db: str, scope: str, session: str, count: int, expired: bool) -> None:
    service = MemoryService(
        open_store(f"sqlite:///{db}"), HashEmbedder(), session_id=session, scope=scope
    )
    service.confirm_outcome(OUTCOME)
    expires = datetime.now(UTC) - timedelta(seconds=1) if expired else None
    ids = []
    for number in range(count):
        ids.append(
            await service.store_fix_memory(
                f"{session} fix {number}: strip whitespace from comma separated origins",
                "AssertionError",
                ["app/service.py"],
                OUTCOME,
                expires_at=expires,
            )
        )
    print(json.dumps(ids))


async def search(db: str, scope: str, query: str, min_score: float) -> None:
    store = open_store(f"sqlite:///{db}")
    service = MemoryService(
        store, HashEmbedder(), session_id="reader", scope=scope, min_score=min_score
    )
    report = await service.search_codebase_memory(query, None, 10)
    print(json.dumps([r.record.memory_id for r in report.results]))


async def import_parsed(db: str, path: str) -> None:
    """Write records parse_import made (pickled by the test): the write is what is killed."""
    store = open_store(f"sqlite:///{db}")
    with open(path, "rb") as parsed:
        records = pickle.load(parsed)

    def announce(done: int, total: int) -> None:
        if done == total:
            print("writing", flush=True)

    await import_records(store, HashEmbedder(), records, announce)
    print("done", flush=True)


def main() -> None:
    command, db, *rest = sys.argv[1:]
    if command == "store":
        scope, session, count, expired = rest
        asyncio.run(store(db, scope, session, int(count), expired == "expired"))
    elif command == "search":
        scope, query, min_score = rest
        asyncio.run(search(db, scope, query, float(min_score)))
    else:
        asyncio.run(import_parsed(db, rest[0]))


if __name__ == "__main__":
    main()
