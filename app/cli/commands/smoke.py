"""`astra-memory smoke store|verify`: the store end to end, across two processes.

`store` writes a temporary fix (it expires in a day), finds it again by its symptom and
prints its id; `verify`, in another process, finds it persisted and searchable, then
deletes it.
"""

from __future__ import annotations

import argparse
import uuid
from datetime import timedelta

from app.cli.commands.memory import resolve_id
from app.config.settings import Settings
from app.console import make_console
from app.errors import CommandError
from memory.records import MemoryRecord, TestEvidence, utc_now
from memory.service import MemoryService
from memory.stores.protocol import MemoryStore, open_store
from memory.text import as_markup

SMOKE_SCOPE = "smoke"
SMOKE_OUTCOME = "smoke check: synthetic passing outcome (exit code 0)"
SMOKE_SYMPTOM = (
    "FAILED tests/test_smoke.py::test_round_trip - AssertionError: "
    "smoke record for astra-memory persisted across processes"
)

console = make_console()
err_console = make_console(stderr=True)


async def smoke(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(args.memory or settings.memory_url)
    try:
        step = smoke_store if args.step == "store" else smoke_verify
        return await step(args, settings, store)
    finally:
        await store.close()


async def smoke_store(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    """Store a temporary record, find it again by its symptom, print its id."""
    session = f"smoke-{uuid.uuid4()}"
    service = MemoryService(store, settings.embedder(), session_id=session, scope=SMOKE_SCOPE)
    await service.search_codebase_memory(SMOKE_SYMPTOM, top_k=1)
    service.confirm_outcome(
        SMOKE_OUTCOME,
        TestEvidence(command="astra-memory smoke store", exit_code=0, passed=1, failed=0),
    )
    memory_id = await service.store_fix_memory(
        "Smoke check record: a temporary fix stored by `astra-memory smoke store`; "
        "`smoke verify` deletes it.",
        "AssertionError",
        ["tests/test_smoke.py"],
        SMOKE_OUTCOME,
        expires_at=utc_now() + timedelta(days=1),
    )
    found = await service.search_codebase_memory(SMOKE_SYMPTOM, top_k=10)
    match = next((r for r in found.results if r.record.memory_id == memory_id), None)
    if match is None:
        raise CommandError(f"stored {memory_id} but a search in scope {SMOKE_SCOPE!r} missed it")
    err_console.print(
        f"stored smoke record in {as_markup(store.url)}; search found it at rank {match.rank} "
        f"(score {match.score:.4f}). Next: astra-memory smoke verify --memory-id {memory_id}"
    )
    print(memory_id)
    return 0


async def smoke_verify(args: argparse.Namespace, settings: Settings, store: MemoryStore) -> int:
    """In a new process: the smoke record is there and searchable; then delete it."""
    try:
        record: MemoryRecord | None = await resolve_id(store, args.memory_id)
    except CommandError as exc:
        if exc.code == 2:  # an ambiguous prefix
            raise
        record = None
    if record is None or record.scope != SMOKE_SCOPE:
        raise CommandError(f"no smoke record with id {args.memory_id!r} in {store.url}")
    service = MemoryService(
        store, settings.embedder(), session_id="smoke-verify", scope=SMOKE_SCOPE
    )
    found = await service.search_codebase_memory(record.symptom, top_k=10)
    if all(r.record.memory_id != record.memory_id for r in found.results):
        raise CommandError(f"{record.memory_id} persisted but search did not find it")
    await store.delete(record.memory_id)
    if await store.get(record.memory_id) is not None:
        raise CommandError(f"{record.memory_id} is still there after delete")
    console.print(f"verified {record.memory_id}: persisted, searchable, now deleted")
    return 0
