"""The embedded store's migrations: old files open as they did, a failed migration leaves
nothing behind, and every migration carries its number in its name."""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memory.records import SearchRequest
from memory.service import MemoryService
from memory.stores import migrations
from memory.stores.protocol import open_store
from tests.fakes import HashEmbedder

# Made by the store as it was before the migrations had a module of their own (commit
# f160c29): two records, one search delivered to session s2, and s2 marked green.
V1_DATABASE = Path(__file__).parent / "data" / "memory_v1.sqlite3"
AUDIT_ID = "11111111-1111-5111-8111-111111111111"
CACHE_ID = "22222222-2222-5222-8222-222222222222"
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return vector / np.linalg.norm(vector)


def schema(path: Path) -> list[tuple[str, str, str]]:
    """Every table, index and trigger with its SQL, whitespace collapsed: how a statement is
    laid out in the source is not part of the schema."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name != ? ORDER BY name",
            (migrations.SCHEMA_TABLE,),
        ).fetchall()
    return [(kind, name, " ".join((sql or "").split())) for kind, name, sql in rows]


@pytest.fixture
def v1_copy(tmp_path: Path) -> Path:
    path = tmp_path / "memory.sqlite3"
    shutil.copyfile(V1_DATABASE, path)
    return path


async def test_a_database_made_before_this_module_opens_unchanged(v1_copy, tmp_path):
    with sqlite3.connect(v1_copy) as conn:
        applied_before = conn.execute("SELECT * FROM astra_schema_migrations").fetchall()
    store = open_store(f"sqlite:///{v1_copy}")
    try:
        assert store.schema_version() == migrations.LATEST_VERSION == 2  # m002: pending queue
        # The cache record's own vector, but the audit record's words: only the keyword
        # index of the old file can put the audit record first.
        found = await store.search(
            SearchRequest(unit(2), "normalize", "alpha", None, top_k=2, min_score=-1, now=NOW)
        )
        assert [r.record.memory_id for r in found] == [AUDIT_ID, CACHE_ID]
        stats = (await store.delivery_stats([AUDIT_ID]))[AUDIT_ID]
        assert (stats.delivered, stats.sessions_ended, stats.sessions_green) == (1, 1, 1)
        assert (await store.stats(NOW)).records == 2
    finally:
        await store.close()
    with sqlite3.connect(v1_copy) as conn:
        applied = conn.execute("SELECT * FROM astra_schema_migrations").fetchall()
        assert applied[:1] == applied_before and applied[1][1] == "m002_pending_proposals"
    await open_store(f"sqlite:///{tmp_path / 'fresh.sqlite3'}").close()
    assert schema(v1_copy) == schema(tmp_path / "fresh.sqlite3")


async def test_a_v1_record_loads_unconfirmed_and_can_be_confirmed_again(v1_copy):
    """Confirmations live in the record's JSON, so the v1 schema carries them unchanged."""
    store = open_store(f"sqlite:///{v1_copy}")
    try:
        old = await store.get(AUDIT_ID)
        assert old.confirmations == () and old.times_confirmed == 1
        later = MemoryService(store, HashEmbedder(), session_id="later", scope=old.scope)
        repeat = replace(old, session_id="later", timestamp=NOW)
        await later.confirm_again(old, repeat)
    finally:
        await store.close()
    store = open_store(f"sqlite:///{v1_copy}")
    try:
        again = await store.get(AUDIT_ID)
        assert again.times_confirmed == 2 and again.confirmations[0].session_id == "later"
        assert store.schema_version() == 2 and await store.count() == 2
    finally:
        await store.close()


def failing_m003(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE half_done (id INTEGER)")
    raise sqlite3.OperationalError("stopped part-way")


def m003_half_done(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE half_done (id INTEGER)")


async def test_a_migration_stopped_part_way_leaves_nothing_and_runs_again(v1_copy, monkeypatch):
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, failing_m003])
    with pytest.raises(Exception, match="stopped part-way"):
        open_store(f"sqlite:///{v1_copy}")
    with sqlite3.connect(v1_copy) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "half_done" not in tables
        assert conn.execute("SELECT max(version) FROM astra_schema_migrations").fetchone() == (2,)

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS[:2], m003_half_done])
    store = open_store(f"sqlite:///{v1_copy}")
    assert store.schema_version() == 3
    assert await store.get(AUDIT_ID) is not None
    await store.close()
    with sqlite3.connect(v1_copy) as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM astra_schema_migrations")]
    assert names == ["m001_records_keywords_audit", "m002_pending_proposals", "m003_half_done"]


def test_a_migration_must_carry_its_number(monkeypatch):
    monkeypatch.setattr(migrations, "MIGRATIONS", list(migrations.MIGRATIONS))
    with pytest.raises(ValueError, match="m003_"):
        migrations.migration(failing_m003)
    assert migrations.migration(m003_half_done) is m003_half_done
    assert [m.__name__ for m in migrations.MIGRATIONS] == [
        "m001_records_keywords_audit",
        "m002_pending_proposals",
        "m003_half_done",
    ]
