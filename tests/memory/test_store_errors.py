"""Honest errors from the embedded store: a full disk, a read-only file, a corrupt row and an
in-memory URL each say what they are, and a corrupt row never breaks the others."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from memory.errors import MemoryStoreError
from memory.records import SearchRequest
from memory.stores import migrations
from memory.stores.protocol import open_store
from memory.stores.sqlite_rows import CorruptRecordWarning
from tests.fakes import PASSING

NOW = datetime(2030, 1, 1, tzinfo=UTC)


async def stored(service, n: int) -> list[str]:
    return [
        await service.store_fix_memory(
            f"Fix number {i}: strip whitespace.", "AssertionError", [f"app/m{i}.py"], PASSING
        )
        for i in range(n)
    ]


def test_writes_are_synchronous_full(db_path):
    conn = migrations.open_database(db_path)
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    conn.close()


async def test_a_full_disk_says_disk_full_and_loses_nothing(service, store, embedder):
    kept = await stored(service, 2)
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count = {pages + 1}")  # a disk with no room left
    big = service.prepare_fix("x " * 1900, "AssertionError", ["app/big.py"], PASSING)
    big = replace(big, diff="+" * 60_000)

    with pytest.raises(MemoryStoreError, match="disk full") as caught:
        await service.commit(big)

    assert "rollback" not in str(caught.value)
    assert sorted(r.memory_id for r in await store.list_records()) == sorted(kept)


async def test_a_read_only_database_says_read_only(service, db_path, monkeypatch):
    await stored(service, 1)
    connect = sqlite3.connect

    def read_only(path, **options):
        return connect(f"file:{path}?mode=ro", uri=True, **options)

    monkeypatch.setattr(migrations.sqlite3, "connect", read_only)
    store = open_store(f"sqlite:///{db_path}")
    try:
        assert len(await store.list_records()) == 1  # reading still works
        with pytest.raises(MemoryStoreError) as caught:
            await store.delete((await store.list_records())[0].memory_id)
    finally:
        await store.close()
    assert "read-only" in str(caught.value)
    assert "not a memory database" not in str(caught.value)


def test_a_database_that_cannot_open_on_a_read_only_filesystem_says_so(tmp_path, monkeypatch):
    path = tmp_path / "gone" / "m.sqlite3"
    with pytest.raises(sqlite3.OperationalError) as caught:
        sqlite3.connect(f"file:{path}?mode=rw", uri=True)  # a real SQLITE_CANTOPEN

    class ReadOnlyMount:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(migrations.os, "statvfs", lambda folder: ReadOnlyMount())
    message = migrations.describe_error(caught.value, path)
    assert "read-only" in message and "not a memory database" not in message


def test_describe_error_names_each_case(tmp_path):
    path = tmp_path / "m.sqlite3"
    path.write_bytes(b"this is not sqlite, but a text file of some length" * 40)
    conn = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError) as caught:
        conn.execute("SELECT name FROM sqlite_master")
    conn.close()
    assert "not a memory database" in migrations.describe_error(caught.value, path)


@pytest.mark.parametrize("url", ["sqlite:///:memory:", "sqlite:///file::memory:?cache=shared"])
def test_an_in_memory_url_is_refused(url):
    with pytest.raises(MemoryStoreError, match="not supported"):
        open_store(url)


@pytest.mark.parametrize(
    ("column", "value", "what"),
    [
        ("embedding", b"\x00\x01\x02", "vector"),
        ("embedding", np.zeros(10, dtype="<f4").tobytes(), "vector"),
        ("record_json", "{not json", "record_json"),
        ("record_json", '{"memory_id": "x"}', "record_json"),
    ],
)
async def test_a_corrupt_row_is_skipped_with_a_warning_naming_it(
    service, store, embedder, db_path, column, value, what
):
    good, bad = await stored(service, 2)
    with sqlite3.connect(db_path) as conn:
        conn.execute(f"UPDATE memories SET {column} = ? WHERE memory_id = ?", (value, bad))
    reopened = open_store(f"sqlite:///{db_path}")
    try:
        with pytest.warns(CorruptRecordWarning, match=f"{bad}.*{what}"):
            if column == "record_json":
                listed = [r.memory_id for r in await reopened.list_records()]
                assert listed == [good]
                assert await reopened.get(bad) is None
            results = await reopened.search(
                SearchRequest(
                    await embedder.embed("Fix number: strip whitespace"),
                    "strip whitespace",
                    scope="alpha",
                    error_type=None,
                    top_k=5,
                    min_score=-1.0,
                    now=NOW,
                )
            )
        assert [r.record.memory_id for r in results] == [good]
        assert (await reopened.stats(NOW)).records == 2
    finally:
        await reopened.close()
