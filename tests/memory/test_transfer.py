"""Backups that cannot destroy data: atomic export, no export over the database, lines that
round-trip, imports that never weaken a confirmed record and obey the live limits."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.errors import MemoryStoreError, MemoryValidationError
from memory.service import MAX_FIX_CHARS
from memory.stores.protocol import open_store
from memory.transfer import (
    export_to_file,
    import_records,
    parse_import,
    refuse_database_target,
    split_lines,
)
from tests.fakes import EVIDENCE, PASSING

NOW = datetime(2025, 1, 2, tzinfo=UTC)
MINIMAL = {
    "fix_description": "Retry the upload once when the connection resets.",
    "error_type": "ConnectionResetError",
    "file_paths": ["uploader/client.py"],
}


async def stored_fix(service) -> str:
    return await service.store_fix_memory(
        "Strip whitespace around each origin.", "AssertionError", ["app/cors.py"], PASSING
    )


def full_line(record, **changes) -> str:
    return json.dumps({**json.loads(record.to_json()), **changes})


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal"])
def test_the_database_and_its_sidecars_are_never_an_export_target(tmp_path, suffix):
    database = tmp_path / "memory.sqlite3"
    with pytest.raises(MemoryValidationError, match="memory database"):
        refuse_database_target(tmp_path / f"memory.sqlite3{suffix}", database)


def test_a_symlink_to_the_database_is_refused_too(tmp_path):
    database = tmp_path / "memory.sqlite3"
    database.write_bytes(b"x")
    (tmp_path / "backup.jsonl").symlink_to(database)
    with pytest.raises(MemoryValidationError):
        refuse_database_target(tmp_path / "backup.jsonl", database)


async def test_export_replaces_the_file_whole_and_keeps_a_symlink(service, store, tmp_path):
    await stored_fix(service)
    real = tmp_path / "real.jsonl"
    real.write_text("old backup\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)

    assert await export_to_file(store, link) == 1

    assert link.is_symlink() and json.loads(real.read_text())["fix_description"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


async def test_a_failed_export_leaves_the_old_file_untouched(db_path, tmp_path):
    store = open_store(f"sqlite:///{db_path}")
    await store.close()  # every read now fails
    out = tmp_path / "backup.jsonl"
    out.write_text("yesterday's backup\n")

    with pytest.raises(MemoryStoreError):
        await export_to_file(store, out)

    assert out.read_text() == "yesterday's backup\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\r"])
async def test_line_separators_inside_a_record_round_trip(service, store, embedder, char):
    record = service.prepare_fix(f"Split on newline{char}only.", "ValueError", ["a.py"], PASSING)
    await service.commit(record)
    text = "".join(line + "\n" for line in [record.to_json()])

    parsed = parse_import(split_lines(text), default_scope="alpha", now=NOW)

    assert parsed[0].fix_description == record.fix_description


async def test_an_untested_line_never_replaces_a_confirmed_record(service, store, embedder):
    memory_id = await stored_fix(service)
    line = json.dumps({**MINIMAL, "memory_id": memory_id})
    records = parse_import([line], default_scope="alpha", now=NOW)

    result = await import_records(store, embedder, records)

    assert (result.written, result.conflicts) == (0, [memory_id])
    kept = await store.get(memory_id)
    assert kept.provenance == "test-confirmed" and kept.evidence == EVIDENCE


async def test_a_confirmed_line_may_replace_a_confirmed_record(service, store, embedder):
    memory_id = await stored_fix(service)
    record = await store.get(memory_id)
    line = full_line(record, fix_description="Strip whitespace and empty origins.")

    result = await import_records(
        store, embedder, parse_import([line], default_scope="alpha", now=NOW)
    )

    assert (result.written, result.conflicts) == (1, [])
    assert (await store.get(memory_id)).fix_description == "Strip whitespace and empty origins."


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"evidence": None}, "no evidence"),
        ({"evidence": {**EVIDENCE.to_dict(), "exit_code": 1}}, "not a passing run"),
        ({"evidence": {**EVIDENCE.to_dict(), "failed": 2}}, "not a passing run"),
        ({"evidence": {**EVIDENCE.to_dict(), "passed": 0}}, "not a passing run"),
        ({"evidence": {**EVIDENCE.to_dict(), "command": " "}}, "evidence.command"),
        ({"fix_description": "x" * (MAX_FIX_CHARS + 1)}, "fix_description is"),
        ({"file_paths": [f"f{n}.py" for n in range(51)]}, "file_paths has 51"),
        ({"file_paths": []}, "at least one file"),
        ({"diff": "+" * 64_001}, "diff is"),
        ({"symptom": "s" * 8_001}, "symptom is"),
        ({"memory_id": "not-a-uuid"}, "not a UUID"),
        ({"response_id": "r" * 201}, "response_id is"),  # the one field left uncapped
    ],
)
async def test_a_full_line_is_held_to_the_live_stores_rules(service, store, changes, message):
    record = service.prepare_fix("Strip whitespace.", "AssertionError", ["a.py"], PASSING)
    with pytest.raises(MemoryValidationError, match=f"line 1: .*{message}"):
        parse_import([full_line(record, **changes)], default_scope="alpha", now=NOW)


async def test_an_imported_full_line_needs_no_evidence(service):
    record = service.prepare_fix("Strip whitespace.", "AssertionError", ["a.py"], PASSING)
    line = full_line(record, provenance="imported", evidence=None)
    assert parse_import([line], default_scope="alpha", now=NOW)[0].provenance == "imported"


async def test_a_full_line_s_scope_and_session_id_are_stored_redacted(service):
    """A full line's scope and session id were checked but kept as written: a key in them
    reached the store (and a search's scope would miss it: find relies on stored scopes
    being redacted)."""
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    record = service.prepare_fix("Strip whitespace.", "AssertionError", ["a.py"], PASSING)
    line = full_line(record, scope=f"team-{key}", session_id=f"s-{key}")
    [imported] = parse_import([line], default_scope="alpha", now=NOW)
    assert (imported.scope, imported.session_id) == ("team-[REDACTED]", "s-[REDACTED]")


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=10,
)
_FIELDS = st.sampled_from(
    [
        "memory_id",
        "scope",
        "fix_description",
        "error_type",
        "file_paths",
        "outcome",
        "symptom",
        "diff",
        "session_id",
        "timestamp",
        "provenance",
        "evidence",
        "flags",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_FIELDS | st.text(max_size=8), _JSON_VALUES, max_size=8))
def test_any_import_line_is_a_record_within_limits_or_a_clear_refusal(data):
    try:
        records = parse_import([json.dumps(data)], default_scope="fuzz", now=NOW)
    except MemoryValidationError as exc:
        assert str(exc).startswith("line 1: ")
        return
    for record in records:
        assert record.fix_description.strip() and len(record.fix_description) <= MAX_FIX_CHARS
        assert 1 <= len(record.file_paths) <= 50
        if record.provenance == "test-confirmed":
            assert record.evidence is not None and record.evidence.exit_code == 0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_as_an_import_line_never_crashes(text):
    try:
        records = parse_import(split_lines(text), default_scope="fuzz", now=NOW)
    except MemoryValidationError as exc:
        assert str(exc).startswith("line ")
    else:
        assert records == []  # free text is never a record
