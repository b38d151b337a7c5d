"""The embedded store: its schema and file, keyword index, connections and matrix. The contract
every store keeps is tests/memory/test_store_contract.py."""

from __future__ import annotations

import sqlite3

import pytest

from memory.errors import MemoryStoreError
from memory.retrieval.ranking import keyword_words
from memory.stores.migrations import LATEST_VERSION
from memory.stores.protocol import open_store
from memory.stores.sqlite import SQLiteMemoryStore
from tests.memory.store_data import blend, mid, record, request, search, unit


async def test_schema_is_versioned_and_in_wal_mode(store, db_path):
    assert store.schema_version() == LATEST_VERSION
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        names = [row[0] for row in conn.execute("SELECT name FROM astra_schema_migrations")]
    assert names == ["m001_records_keywords_audit", "m002_pending_proposals"]


async def test_reopening_applies_no_migration_twice(db_path):
    for _ in range(2):
        await open_store(f"sqlite:///{db_path}").close()
    with sqlite3.connect(db_path) as conn:
        assert (
            conn.execute("SELECT count(*) FROM astra_schema_migrations").fetchone()[0]
            == LATEST_VERSION
        )


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


async def test_delete_removes_row_vector_keywords_and_audit(store, db_path):
    query = unit(1)
    await store.upsert_many([(record("gone", fix_description="unique zebra words"), query)])
    found = await search(store, query, "zebra")
    await store.record_deliveries("s2", "resp", found)
    assert await store.delete(mid("gone")) is True
    assert await store.delete(mid("gone")) is False
    assert await store.get(mid("gone")) is None
    assert await search(store, query, "zebra") == []
    with sqlite3.connect(db_path) as conn:
        assert (
            conn.execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'zebra'"
            ).fetchone()[0]
            == 0
        )
        assert conn.execute("SELECT count(*) FROM deliveries").fetchone()[0] == 0


async def test_writes_from_another_connection_are_seen(db_path):
    first = SQLiteMemoryStore(db_path)
    second = SQLiteMemoryStore(db_path)
    await first.search(request(unit(1), top_k=3))
    await second.upsert_many([(record("from-second"), unit(1))])
    found = await first.search(request(unit(1), top_k=3))
    assert [r.record.memory_id for r in found] == [mid("from-second")]
    await second.delete(mid("from-second"))
    assert await first.search(request(unit(1), top_k=3)) == []
    await first.close()
    await second.close()


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
    assert found[0].record.memory_id == mid("rare")


async def test_vector_buffer_stays_within_twice_the_raw_size(store):
    await store.upsert_many([(record(f"r{i}"), unit(i)) for i in range(1000)])
    await store.search(request(unit(1), top_k=3))
    raw = 1000 * 384 * 4
    assert raw <= store._index.nbytes <= 2 * raw
