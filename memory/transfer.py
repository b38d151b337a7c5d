"""Export and import of memory records as JSONL, and migration between two stores.

Export writes each record's full JSON, one per line, into a temporary file beside the
target that is fsynced and renamed into place: a failed export leaves the old file as it
was, and the database or its sidecars are never a target. Import takes that format (ids
kept) or minimal post-mortem records; every line is parsed and put through the limits of a
live store before anything is embedded, a line claiming test-confirmed must carry passing
evidence, and a test-confirmed record is never replaced by a weaker one (the conflict is
reported). Everything is written in one transaction, so a bad line or a killed process
leaves the database as it was. Migration copies every record with its id, so running it
again replaces rather than duplicates. Lines are split on "\n" alone: U+2028 and U+0085 are
characters inside a record, not line ends.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import numpy as np

from memory.embedding.embedder import Embedder
from memory.errors import MemoryValidationError
from memory.records import MemoryRecord, TestEvidence
from memory.safety import sanitize_record
from memory.service import (
    MAX_DIFF_CHARS,
    MAX_ERROR_TYPE_CHARS,
    MAX_FIX_CHARS,
    MAX_OUTCOME_CHARS,
    MAX_QUERY_CHARS,
    clean_paths,
    repair_id,
    required_text,
)
from memory.stores.protocol import MemoryStore

IMPORT_SESSION = "import"
IMPORTED_OUTCOME = "imported from a post-mortem; not confirmed by a test run"
_MINIMAL_REQUIRED = {"fix_description", "error_type", "file_paths"}
_MINIMAL_OPTIONAL = {"memory_id", "symptom", "outcome", "scope"}
EMBED_BATCH = 64
MAX_SCOPE_CHARS = 200
MAX_EVIDENCE_COMMAND_CHARS = 2_000
MAX_EVIDENCE_OUTPUT_CHARS = 8_000
SIDECAR_SUFFIXES = ("", "-wal", "-shm", "-journal")


async def export_lines(store: MemoryStore, scope: str | None = None) -> AsyncIterator[str]:
    for record in reversed(await store.list_records(scope=scope)):
        yield record.to_json()


def split_lines(text: str) -> list[str]:
    """JSONL lines: split on "\n" only (a "\r" before it is JSON whitespace), without the
    byte-order mark that Windows editors and PowerShell put first (and `cat` of such files
    at the start of a later line)."""
    return [line.removeprefix("\ufeff") for line in text.split("\n")]


def refuse_database_target(out: Path, database: Path | None) -> None:
    """Refuse an export target that is (through any symlink) the database or a sidecar."""
    if database is None:
        return
    target = out.resolve()
    for suffix in SIDECAR_SUFFIXES:
        if target == Path(f"{database.resolve()}{suffix}"):
            raise MemoryValidationError(
                f"refusing to export over {out}: it is the memory database"
                + (f"'s {suffix[1:]} file" if suffix else "")
            )


async def export_to_file(store: MemoryStore, out: Path, scope: str | None = None) -> int:
    """Write the export to `out` atomically: a temporary file in the same folder, mode 0600
    (records may hold code), fsynced and renamed over the target (a symlinked target keeps
    its link), in a thread. Returns the count. The one way the CLI and the dashboard export
    to a file; an OSError names `out`, never the temporary file."""
    refuse_database_target(out, getattr(store, "path", None))  # None: a server's store
    lines = [line async for line in export_lines(store, scope=scope)]
    try:
        await asyncio.to_thread(_write_whole, out.resolve(), lines)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(out)) from None
    return len(lines)


def _write_whole(target: Path, lines: list[str]) -> None:
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below, or removed on failure
        "w",
        encoding="utf-8",
        newline="\n",
        dir=target.parent,
        prefix=f".{target.name}.",
        suffix=".tmp",
        delete=False,
    )
    try:
        with handle:
            handle.writelines(line + "\n" for line in lines)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, target)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    _fsync_folder(target.parent)


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_evidence(evidence: TestEvidence | None) -> TestEvidence:
    """Evidence a test-confirmed record must carry: a named command that exited 0 with at
    least one test passing and none failing, within the size limits."""
    if evidence is None:
        raise MemoryValidationError("claims test-confirmed but carries no evidence")
    required_text(evidence.command, "evidence.command", MAX_EVIDENCE_COMMAND_CHARS)
    if evidence.exit_code != 0 or evidence.failed != 0 or evidence.passed < 1:
        raise MemoryValidationError(
            f"claims test-confirmed but its evidence is not a passing run (exit "
            f"{evidence.exit_code}, {evidence.passed} passed, {evidence.failed} failed)"
        )
    if len(evidence.output_excerpt) > MAX_EVIDENCE_OUTPUT_CHARS:
        raise MemoryValidationError(
            f"evidence.output_excerpt is {len(evidence.output_excerpt)} characters; "
            f"the limit is {MAX_EVIDENCE_OUTPUT_CHARS}"
        )
    return evidence


def _full_record(data: dict[str, object]) -> MemoryRecord:
    """A full-format line, held to the limits and the evidence rule of a live store."""
    record = MemoryRecord.from_dict(data)
    required_text(record.scope, "scope", MAX_SCOPE_CHARS)
    required_text(record.fix_description, "fix_description", MAX_FIX_CHARS)
    required_text(record.error_type, "error_type", MAX_ERROR_TYPE_CHARS)
    required_text(record.outcome, "outcome", MAX_OUTCOME_CHARS)
    required_text(record.session_id, "session_id", 200)
    if record.response_id is not None:
        required_text(record.response_id, "response_id", 200)
    clean_paths(list(record.file_paths))
    if len(record.symptom) > MAX_QUERY_CHARS:
        raise MemoryValidationError(
            f"symptom is {len(record.symptom)} characters; the limit is {MAX_QUERY_CHARS}"
        )
    if len(record.diff) > MAX_DIFF_CHARS:
        raise MemoryValidationError(
            f"diff is {len(record.diff)} characters; the limit is {MAX_DIFF_CHARS}"
        )
    try:
        uuid.UUID(record.memory_id)
    except ValueError as exc:
        raise MemoryValidationError(f"memory_id {record.memory_id!r} is not a UUID") from exc
    if record.provenance == "test-confirmed":
        check_evidence(record.evidence)
    return sanitize_record(record)


def _minimal_record(data: dict[str, object], default_scope: str, now: datetime) -> MemoryRecord:
    unknown = set(data) - _MINIMAL_REQUIRED - _MINIMAL_OPTIONAL
    if unknown:
        raise MemoryValidationError(f"unknown field(s) {', '.join(sorted(unknown))}")
    missing = _MINIMAL_REQUIRED - set(data)
    if missing:
        raise MemoryValidationError(f"missing field(s) {', '.join(sorted(missing))}")
    scope = required_text(data.get("scope", default_scope), "scope", MAX_SCOPE_CHARS)
    fix = required_text(data["fix_description"], "fix_description", MAX_FIX_CHARS)
    error = required_text(data["error_type"], "error_type", MAX_ERROR_TYPE_CHARS)
    paths = clean_paths(data["file_paths"])
    outcome = required_text(data.get("outcome", IMPORTED_OUTCOME), "outcome", MAX_OUTCOME_CHARS)
    symptom = data.get("symptom")  # [] or 0 is refused, not stored as no symptom
    symptom = "" if symptom in (None, "") else required_text(symptom, "symptom", MAX_QUERY_CHARS)
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


def json_object(line: str) -> dict[str, object]:
    """One JSONL line as an object, or a MemoryValidationError saying why not: the words of
    both import and eval."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise MemoryValidationError(f"not valid JSON ({exc.msg})") from exc
    except ValueError:  # Python's limit on an int's digits
        raise MemoryValidationError("not valid JSON (a number with over 4,300 digits)") from None
    except RecursionError:
        raise MemoryValidationError("not valid JSON (nested too deep to read)") from None
    if not isinstance(data, dict):
        raise MemoryValidationError("expected a JSON object")
    try:  # "\ud800" is valid JSON, but no database, embedder or terminal takes what it reads as
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise MemoryValidationError(
            "not valid text (an escape such as \\ud800 that is half of a character)"
        ) from None
    return data


def parse_import(lines: Iterable[str], *, default_scope: str, now: datetime) -> list[MemoryRecord]:
    """Every record in a JSONL import, or a MemoryValidationError naming the first bad line."""
    records: dict[str, MemoryRecord] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json_object(line)
            if "session_id" in data and "timestamp" in data:
                record = _full_record(data)
            else:
                record = _minimal_record(data, default_scope, now)
        except MemoryValidationError as exc:
            raise MemoryValidationError(f"line {number}: {exc}") from exc
        records[record.memory_id] = record
    return list(records.values())


@dataclass
class ImportResult:
    """What an import wrote, and the ids it kept as they were (a test-confirmed record in
    the store that an imported, untested line would have replaced)."""

    written: int = 0
    conflicts: list[str] = field(default_factory=list)


async def import_records(
    store: MemoryStore,
    embedder: Embedder,
    records: list[MemoryRecord],
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> ImportResult:
    """Embed every record that may be written, then write them all in one transaction."""
    result = ImportResult()
    kept: list[MemoryRecord] = []
    for record in records:
        existing = await store.get(record.memory_id)
        weaker = record.provenance != "test-confirmed"
        if existing is not None and existing.provenance == "test-confirmed" and weaker:
            result.conflicts.append(record.memory_id)
        else:  # red sessions cleared count this store's deliveries, which no line carries
            cleared = existing.stale_cleared_red if existing is not None else 0
            kept.append(replace(record, stale_cleared_red=cleared))
    records = [replace(r, embedding_model=embedder.model_name) for r in kept]
    vectors: list[np.ndarray] = []
    for start in range(0, len(records), EMBED_BATCH):
        batch = records[start : start + EMBED_BATCH]
        vectors.extend(await embedder.embed_many([record.embedding_text() for record in batch]))
        progress(start + len(batch), len(records))
    if records:
        await store.upsert_many(list(zip(records, vectors, strict=True)))
    result.written = len(records)
    return result


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
            (replace(r, embedding_model=embedder.model_name), stored[r.memory_id]) for r in batch
        ]
        await target.upsert_many(items)
        progress(start + len(batch), len(records))
    return len(records)
