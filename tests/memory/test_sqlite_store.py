"""The embedded store: schema, filters before ranking, hybrid ranking, delete, durability."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memory.errors import MemoryStoreError
from memory.migrations import LATEST_VERSION
from memory.ranking import keyword_words
from memory.records import MemoryRecord
from memory.sqlite_store import SQLiteMemoryStore
from memory.store import open_store

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return vector / np.linalg.norm(vector)


def blend(a: np.ndarray, b: np.ndarray, weight: float) -> np.ndarray:
    vector = weight * a + (1 - weight) * b
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def record(memory_id: str, **fields) -> MemoryRecord:
    values = {
        "fix_description": f"fix {memory_id}",
        "error_type": "AssertionError",
        "file_paths": ("app/service.py",),
        "outcome": "passed",
        "session_id": "s",
        "timestamp": NOW,
        "scope": "alpha",
    }
    return MemoryRecord(memory_id=memory_id, **{**values, **fields})


async def search(store, vector, text="", **options):
    arguments = {"scope": "alpha", "error_type": None, "top_k": 10, "min_score": -1.0, "now": NOW}
    return await store.search(vector, text, **{**arguments, **options})


async def test_schema_is_versioned_and_in_wal_mode(store, db_path):
    assert store.schema_version() == LATEST_VERSION
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        names = [row[0] for row in conn.execute("SELECT name FROM astra_schema_migrations")]
    assert names == ["m001_records_keywords_audit"]


async def test_reopening_applies_no_migration_twice(db_path):
    for _ in range(2):
        await open_store(f"sqlite:///{db_path}").close()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM astra_schema_migrations").fetchone()[0] == 1


async def test_newer_schema_is_refused(db_path):
    await open_store(f"sqlite:///{db_path}").close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("INSERT INTO astra_schema_migrations VALUES (99, 'future', 'x')")
    with pytest.raises(MemoryStoreError, match="newer"):
        open_store(f"sqlite:///{db_path}")


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    before = path.read_bytes()
    with pytest.raises(MemoryStoreError, match="not a memory database"):
        open_store(f"sqlite:///{path}")
    assert path.read_bytes() == before


def test_another_sqlite_database_is_refused_untouched(tmp_path):
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER)")
    before = path.read_bytes()
    with pytest.raises(MemoryStoreError, match="not a memory database"):
        open_store(f"sqlite:///{path}")
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "url", ["sqlite://", "sqlite:///", "postgres://x/y", "memory.db", "sqlite:///d/"]
)
def test_malformed_urls_are_clear_errors(url):
    with pytest.raises(MemoryStoreError, match="memory URL"):
        open_store(url)


async def test_scope_is_applied_before_ranking(store):
    query = unit(1)
    # The closest vectors live in another scope; in-scope results must still fill top_k.
    items = [
        (record(f"other-{i}", scope="beta"), blend(query, unit(100 + i), 0.9)) for i in range(20)
    ]
    items += [(record(f"mine-{i}"), blend(query, unit(200 + i), 0.2)) for i in range(3)]
    await store.upsert_many(items)
    found = await search(store, query, top_k=3)
    assert sorted(r.record.memory_id for r in found) == ["mine-0", "mine-1", "mine-2"]
    assert await search(store, query, scope="gamma") == []


async def test_error_type_filter_is_case_insensitive_and_before_ranking(store):
    query = unit(1)
    await store.upsert_many(
        [(record("close", error_type="KeyError"), query), (record("far"), unit(2))]
    )
    found = await search(store, query, error_type="assertionerror", top_k=1)
    assert [r.record.memory_id for r in found] == ["far"]
    assert await search(store, query, error_type="ValueError") == []


async def test_expired_records_never_come_back(store):
    query = unit(1)
    await store.upsert_many(
        [
            (record("expired", expires_at=NOW - timedelta(seconds=1)), query),
            (record("live", expires_at=NOW + timedelta(days=1)), unit(2)),
        ]
    )
    assert [r.record.memory_id for r in await search(store, query)] == ["live"]


async def test_min_score_applies_to_cosine(store):
    query = unit(1)
    await store.upsert_many([(record("same"), query), (record("opposite"), -query)])
    found = await search(store, query, min_score=0.5)
    assert [(r.record.memory_id, round(r.score, 4)) for r in found] == [("same", 1.0)]
    assert len(await search(store, query, min_score=-1.0)) == 2


async def test_keyword_match_lifts_a_record_the_vector_ranks_lower(store):
    query = unit(1)
    await store.upsert_many(
        [
            (
                record("vector-near", fix_description="tidy imports", error_type="ImportError"),
                blend(query, unit(2), 0.7),
            ),
            (
                record("keyword-hit", fix_description="normalize Audit-Log to audit_log"),
                blend(query, unit(3), 0.65),
            ),
        ]
    )
    vector_only = await search(store, query, "")
    hybrid = await search(store, query, "AssertionError: assert 'Audit-Log' == 'audit_log'")
    assert vector_only[0].record.memory_id == "vector-near"
    assert hybrid[0].record.memory_id == "keyword-hit"
    assert hybrid[0].score == pytest.approx(vector_only[1].score)  # score stays the cosine


async def test_delete_removes_row_vector_keywords_and_audit(store, db_path):
    query = unit(1)
    await store.upsert_many([(record("gone", fix_description="unique zebra words"), query)])
    found = await search(store, query, "zebra")
    await store.record_deliveries("s2", "resp", found)
    assert await store.delete("gone") is True
    assert await store.delete("gone") is False
    assert await store.get("gone") is None
    assert await search(store, query, "zebra") == []
    with sqlite3.connect(db_path) as conn:
        assert (
            conn.execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'zebra'"
            ).fetchone()[0]
            == 0
        )
        assert conn.execute("SELECT count(*) FROM deliveries").fetchone()[0] == 0


async def test_update_replaces_keywords_and_vector(store):
    await store.upsert_many([(record("r", fix_description="alpha words"), unit(1))])
    await store.upsert_many([(record("r", fix_description="beta words"), unit(2))])
    assert await store.count() == 1
    assert [r.record.memory_id for r in await search(store, unit(2), "beta", top_k=1)] == ["r"]
    found = await search(store, unit(2), "alpha")
    assert found[0].score == pytest.approx(1.0, abs=1e-5)


async def test_every_field_round_trips(store):
    from memory.records import TestEvidence

    original = record(
        "full",
        symptom="E   assert 1 == 2",
        diff="--- a/x\n+++ b/x\n",
        response_id="resp_1",
        expires_at=NOW + timedelta(days=3),
        evidence=TestEvidence(
            command="pytest", exit_code=0, passed=3, failed=0, output_excerpt="ok"
        ),
        flags=("asks to call a tool",),
        provenance="imported",
    )
    await store.upsert_many([(original, unit(1))])
    assert await store.get("full") == original


async def test_writes_from_another_connection_are_seen(db_path):
    first = SQLiteMemoryStore(db_path)
    second = SQLiteMemoryStore(db_path)
    await first.search(unit(1), "", scope="alpha", error_type=None, top_k=3, min_score=-1, now=NOW)
    await second.upsert_many([(record("from-second"), unit(1))])
    found = await first.search(
        unit(1), "", scope="alpha", error_type=None, top_k=3, min_score=-1, now=NOW
    )
    assert [r.record.memory_id for r in found] == ["from-second"]
    await second.delete("from-second")
    assert (
        await first.search(
            unit(1), "", scope="alpha", error_type=None, top_k=3, min_score=-1, now=NOW
        )
        == []
    )
    await first.close()
    await second.close()


async def test_failed_batch_writes_nothing(store):
    good = (record("good"), unit(1))
    bad = (record("bad"), np.zeros(10, dtype=np.float32))
    with pytest.raises(MemoryStoreError):
        await store.upsert_many([good, bad])
    assert await store.count() == 0
    assert await search(store, unit(1)) == []


def test_keyword_words_are_distinct_lowercase_and_skip_noise():
    assert keyword_words("E   assert 'Audit-Log' == 'audit_log' in Log") == [
        "assert",
        "audit",
        "log",
    ]
    assert keyword_words("!!! 1 2 == ab") == []


async def test_words_common_to_most_records_do_not_drive_keyword_ranking(store):
    query = unit(1)
    # 120 records share "assert"; one also has the rare word "zebra".
    items = [(record(f"r{i}", fix_description="assert common"), unit(100 + i)) for i in range(120)]
    items.append((record("rare", fix_description="assert zebra"), blend(query, unit(99), 0.2)))
    await store.upsert_many(items)
    assert store._rare_words(["assert", "zebra", "missing"]) == ["zebra"]
    found = await search(store, query, "assert zebra", top_k=1)
    assert found[0].record.memory_id == "rare"


async def test_vector_buffer_stays_within_twice_the_raw_size(store):
    await store.upsert_many([(record(f"r{i}"), unit(i)) for i in range(1000)])
    await store.search(unit(1), "", scope="alpha", error_type=None, top_k=3, min_score=-1, now=NOW)
    raw = 1000 * 384 * 4
    assert raw <= store._index.nbytes <= 2 * raw
