"""Export and import of memory records as JSONL, and migration between two stores.

Export writes each record's full JSON, one per line. Import takes that format (ids kept)
or minimal post-mortem records; every line is parsed and checked before anything is
embedded, and everything is written in one transaction, so a bad line or a killed
process leaves the database as it was. Migration copies every record with its id, so
running it again replaces rather than duplicates.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime

import numpy as np
from pydantic import ValidationError

from memory.embedder import Embedder
from memory.errors import MemoryValidationError
from memory.records import MemoryRecord
from memory.safety import sanitize_record
from memory.service import (
    MAX_ERROR_TYPE_CHARS,
    MAX_FIX_CHARS,
    MAX_OUTCOME_CHARS,
    MAX_QUERY_CHARS,
    clean_paths,
    repair_id,
    required_text,
)
from memory.store import MemoryStore

IMPORT_SESSION = "import"
IMPORTED_OUTCOME = "imported from a post-mortem; not confirmed by a test run"
_MINIMAL_REQUIRED = {"fix_description", "error_type", "file_paths"}
_MINIMAL_OPTIONAL = {"memory_id", "symptom", "outcome", "scope"}
EMBED_BATCH = 64


async def export_lines(store: MemoryStore, scope: str | None = None) -> AsyncIterator[str]:
    for record in reversed(await store.list_records(scope=scope)):
        yield record.model_dump_json()


def _minimal_record(data: dict[str, object], default_scope: str, now: datetime) -> MemoryRecord:
    unknown = set(data) - _MINIMAL_REQUIRED - _MINIMAL_OPTIONAL
    if unknown:
        raise MemoryValidationError(f"unknown field(s) {', '.join(sorted(unknown))}")
    missing = _MINIMAL_REQUIRED - set(data)
    if missing:
        raise MemoryValidationError(f"missing field(s) {', '.join(sorted(missing))}")
    scope = required_text(data.get("scope", default_scope), "scope", 200)
    fix = required_text(data["fix_description"], "fix_description", MAX_FIX_CHARS)
    error = required_text(data["error_type"], "error_type", MAX_ERROR_TYPE_CHARS)
    paths = clean_paths(data["file_paths"])
    outcome = required_text(data.get("outcome", IMPORTED_OUTCOME), "outcome", MAX_OUTCOME_CHARS)
    symptom = data.get("symptom", "")
    symptom = required_text(symptom, "symptom", MAX_QUERY_CHARS) if symptom else ""
    memory_id = data.get("memory_id") or repair_id(scope, IMPORT_SESSION, fix, error, *paths)
    try:
        memory_id = str(uuid.UUID(str(memory_id)))
    except ValueError as exc:
        raise MemoryValidationError(f"memory_id {memory_id!r} is not a UUID") from exc
    return sanitize_record(
        MemoryRecord(
            memory_id=memory_id,
            scope=scope,
            fix_description=fix,
            error_type=error,
            file_paths=paths,
            outcome=outcome,
            symptom=symptom,
            session_id=IMPORT_SESSION,
            timestamp=now,
            provenance="imported",
        )
    )


def parse_import(lines: Iterable[str], *, default_scope: str, now: datetime) -> list[MemoryRecord]:
    """Every record in a JSONL import, or a MemoryValidationError naming the first bad line."""
    records: dict[str, MemoryRecord] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise MemoryValidationError("expected a JSON object")
            if "session_id" in data and "timestamp" in data:
                record = sanitize_record(MemoryRecord.model_validate(data))
            else:
                record = _minimal_record(data, default_scope, now)
        except json.JSONDecodeError as exc:
            raise MemoryValidationError(f"line {number}: not valid JSON ({exc.msg})") from exc
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise MemoryValidationError(f"line {number}: {where}: {problem['msg']}") from exc
        except MemoryValidationError as exc:
            raise MemoryValidationError(f"line {number}: {exc}") from exc
        records[record.memory_id] = record
    return list(records.values())


async def import_records(
    store: MemoryStore,
    embedder: Embedder,
    records: list[MemoryRecord],
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> int:
    """Embed every record, then write them all in one transaction. Returns the count."""
    records = [r.model_copy(update={"embedding_model": embedder.model_name}) for r in records]
    vectors: list[np.ndarray] = []
    for start in range(0, len(records), EMBED_BATCH):
        batch = records[start : start + EMBED_BATCH]
        vectors.extend(await embedder.embed_many([record.embedding_text() for record in batch]))
        progress(start + len(batch), len(records))
    await store.upsert_many(list(zip(records, vectors, strict=True)))
    return len(records)


async def migrate(
    source: MemoryStore,
    target: MemoryStore,
    embedder: Embedder,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> int:
    """Copy every record of `source` into `target`, ids kept. Returns the count.

    A record embedded by `embedder`'s model keeps its stored vector; one embedded by another
    model is embedded again and says so. Each batch is written as it is ready: a migration
    cut short is finished by running it again.
    """
    records = await source.list_records()
    for start in range(0, len(records), EMBED_BATCH):
        batch = records[start : start + EMBED_BATCH]
        stored = await source.vectors(
            [r.memory_id for r in batch if r.embedding_model == embedder.model_name]
        )
        stale = [r for r in batch if r.memory_id not in stored]
        fresh = await embedder.embed_many([r.embedding_text() for r in stale]) if stale else []
        for record, vector in zip(stale, fresh, strict=True):
            stored[record.memory_id] = vector
        items = [
            (r.model_copy(update={"embedding_model": embedder.model_name}), stored[r.memory_id])
            for r in batch
        ]
        await target.upsert_many(items)
        progress(start + len(batch), len(records))
    return len(records)
