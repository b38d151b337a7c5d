"""The VectorAI DB store: one contract run against every store, then what only a server has
(collection setup, failures, retries), then migration between stores.

The server store is exercised through the real client over a loopback gRPC channel against
an in-process stand-in; set ASTRA_TEST_VECTORAI_URL to run the contract on a real server.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from datetime import UTC, datetime, timedelta

import grpc
import numpy as np
import pytest
from actian_vectorai import AsyncVectorAIClient

from app.cli import main
from app.settings import Settings
from memory.errors import MemoryStoreError
from memory.records import MemoryRecord, TestEvidence
from memory.store import MemoryStore, open_store
from memory.transfer import migrate
from memory.vectorai_store import VectorAIMemoryStore, vectorai_address
from tests.fakes import HashEmbedder
from tests.memory.vectorai_standin import Collection, VectorAIStandIn

NOW = datetime(2026, 11, 1, tzinfo=UTC)
REAL_SERVER = os.environ.get("ASTRA_TEST_VECTORAI_URL")


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return vector / np.linalg.norm(vector)


def blend(a: np.ndarray, b: np.ndarray, weight: float) -> np.ndarray:
    vector = weight * a + (1 - weight) * b
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def mid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def record(name: str, **fields) -> MemoryRecord:
    values = {
        "fix_description": f"fix {name}",
        "error_type": "AssertionError",
        "file_paths": ("app/service.py",),
        "outcome": "passed",
        "session_id": "s",
        "timestamp": NOW,
        "scope": "alpha",
    }
    return MemoryRecord(memory_id=mid(name), **{**values, **fields})


async def search(store: MemoryStore, vector: np.ndarray, text: str = "", **options):
    arguments = {"scope": "alpha", "error_type": None, "top_k": 10, "min_score": -1.0, "now": NOW}
    return await store.search(vector, text, **{**arguments, **options})


def ids(results) -> list[str]:
    return [r.record.memory_id for r in results]


@pytest.fixture
async def standin():
    server = await VectorAIStandIn().start()
    yield server
    await server.stop()


async def _drop(url: str, collection: str) -> None:
    address, _ = vectorai_address(url)
    async with AsyncVectorAIClient(address) as client:
        for name in (collection, collection + "_deliveries"):
            if await client.collections.exists(name):
                await client.collections.delete(name)


@pytest.fixture(params=["sqlite", "standin", "server"])
async def any_store(request, tmp_path):
    if request.param == "sqlite":
        store = open_store(f"sqlite:///{tmp_path / 'memory.sqlite3'}")
        yield store
        await store.close()
    elif request.param == "standin":
        server = await VectorAIStandIn().start()
        store = open_store(server.url)
        yield store
        await store.close()
        await server.stop()
    else:
        if not REAL_SERVER:
            pytest.skip("set ASTRA_TEST_VECTORAI_URL=vectorai://HOST:PORT to run on a real server")
        collection = f"astra_test_{uuid.uuid4().hex[:12]}"
        store = VectorAIMemoryStore(vectorai_address(REAL_SERVER)[0], collection)
        yield store
        await store.close()
        await _drop(REAL_SERVER, collection)


# -- the contract, on every store -----------------------------------------------------------


async def test_every_field_round_trips(any_store):
    original = record(
        "full",
        symptom="E   assert 1 == 2",
        diff="--- a/x\n+++ b/x\n",
        response_id="resp_1",
        expires_at=NOW + timedelta(days=3650),
        evidence=TestEvidence(
            command="pytest", exit_code=0, passed=3, failed=0, output_excerpt="ok"
        ),
        flags=("asks to call a tool",),
        provenance="imported",
        file_paths=("a.py", "b/c.py"),
    )
    await any_store.upsert_many([(original, unit(1))])
    assert await any_store.get(original.memory_id) == original
    assert await any_store.list_records() == [original]
    assert await any_store.get(mid("absent")) is None


async def test_other_scopes_find_nothing(any_store):
    query = unit(1)
    await any_store.upsert_many(
        [(record(f"other-{i}", scope="beta"), blend(query, unit(100 + i), 0.9)) for i in range(5)]
        + [(record(f"mine-{i}"), blend(query, unit(200 + i), 0.2)) for i in range(3)]
    )
    assert sorted(ids(await search(any_store, query, top_k=3))) == sorted(
        mid(f"mine-{i}") for i in range(3)
    )
    assert await search(any_store, query, scope="gamma", min_score=-1.0) == []
    assert len(await any_store.list_records(scope="beta")) == 5


async def test_error_type_filter_is_case_insensitive(any_store):
    query = unit(1)
    await any_store.upsert_many(
        [(record("close", error_type="KeyError"), query), (record("far"), unit(2))]
    )
    found = await search(any_store, query, error_type="assertionerror", top_k=1)
    assert ids(found) == [mid("far")]
    assert await search(any_store, query, error_type="ValueError") == []


async def test_expired_records_never_come_back(any_store):
    query = unit(1)
    await any_store.upsert_many(
        [
            (record("expired", expires_at=NOW - timedelta(seconds=1)), query),
            (record("live", expires_at=NOW + timedelta(days=1)), unit(2)),
            (record("forever"), unit(3)),
        ]
    )
    assert sorted(ids(await search(any_store, query))) == sorted([mid("live"), mid("forever")])
    assert (await any_store.stats(NOW)).expired == 1


async def test_delete_removes_record_and_audit(any_store):
    query = unit(1)
    await any_store.upsert_many([(record("gone"), query), (record("kept"), unit(2))])
    found = await search(any_store, query)
    await any_store.record_deliveries("s2", "resp", found)
    assert (await any_store.stats(NOW)).deliveries == 2
    assert await any_store.delete(mid("gone")) is True
    assert await any_store.delete(mid("gone")) is False
    assert await any_store.get(mid("gone")) is None
    assert ids(await search(any_store, query)) == [mid("kept")]
    assert (await any_store.stats(NOW)).deliveries == 1


async def test_upsert_is_idempotent_and_replaces(any_store):
    await any_store.upsert_many([(record("r", fix_description="alpha"), unit(1))])
    await any_store.upsert_many([(record("r", fix_description="beta"), unit(2))])
    assert await any_store.count() == 1
    assert (await any_store.get(mid("r"))).fix_description == "beta"
    assert (await search(any_store, unit(2)))[0].score == pytest.approx(1.0, abs=1e-5)


async def test_min_score_and_top_k(any_store):
    query = unit(1)
    await any_store.upsert_many(
        [(record("same"), query), (record("opposite"), -query)]
        + [(record(f"r{i}"), unit(10 + i)) for i in range(5)]
    )
    found = await search(any_store, query, min_score=0.5)
    assert [(r.record.memory_id, round(r.score, 4)) for r in found] == [(mid("same"), 1.0)]
    assert len(await search(any_store, query, top_k=3)) == 3
    assert len(await search(any_store, query)) == 7


async def test_failed_batch_writes_nothing(any_store):
    with pytest.raises(MemoryStoreError):
        await any_store.upsert_many(
            [(record("good"), unit(1)), (record("bad"), np.zeros(10, dtype=np.float32))]
        )
    assert await any_store.count() == 0


async def test_delivery_audit(any_store):
    await any_store.upsert_many([(record("a"), unit(1)), (record("b"), unit(2))])
    found = await search(any_store, unit(1))
    await any_store.record_deliveries("s1", None, found)
    await any_store.record_deliveries("s2", "resp", found[:1])
    await any_store.mark_session_outcome("s1", True)
    stats = await any_store.delivery_stats([mid("a"), mid("b"), mid("never")])
    assert stats[mid("a")].model_dump() == {
        "delivered": 2,
        "sessions_ended": 1,
        "sessions_green": 1,
    }
    assert stats[mid("b")].delivered == 1
    assert stats[mid("never")].delivered == 0


async def test_stats_count_scopes_errors_and_provenance(any_store):
    await any_store.upsert_many(
        [
            (record("a"), unit(1)),
            (record("b", scope="beta", error_type="KeyError", provenance="imported"), unit(2)),
            (record("c", flags=("odd",)), unit(3)),
        ]
    )
    stats = await any_store.stats(NOW)
    assert (stats.records, stats.by_scope) == (3, {"alpha": 2, "beta": 1})
    assert stats.by_error_type == {"AssertionError": 2, "KeyError": 1}
    assert (stats.imported, stats.flagged, stats.expired) == (1, 1, 0)


async def test_both_stores_rank_identically(tmp_path, standin):
    query = unit(1)
    items = [(record(f"r{i}"), blend(query, unit(50 + i), i / 20)) for i in range(20)]
    rankings = []
    for url in (f"sqlite:///{tmp_path / 'm.sqlite3'}", standin.url):
        store = open_store(url)
        await store.upsert_many(items)
        found = await search(store, query, top_k=8)
        rankings.append([(r.record.memory_id, round(r.score, 5)) for r in found])
        await store.close()
    assert rankings[0] == rankings[1]
    assert len(rankings[0]) == 8


@pytest.mark.parametrize("kind", ["sqlite", "standin"])
async def test_a_rare_word_lifts_the_right_record_over_closer_vectors(tmp_path, standin, kind):
    """The server store fuses a keyword side too: the record naming the query's rare word
    comes first though four records are nearer by cosine."""
    query = unit(1)
    items = [(record(f"near{i}"), blend(query, unit(50 + i), 0.9 - i * 0.02)) for i in range(8)]
    target = record("zwj", fix_description="keep the ZWJ joiner when splitting emoji")
    items.append((target, blend(query, unit(70), 0.82)))
    url = f"sqlite:///{tmp_path / 'm.sqlite3'}" if kind == "sqlite" else standin.url
    store = open_store(url)
    try:
        await store.upsert_many(items)
        found = await search(store, query, "the emoji family is split apart at the zwj", top_k=3)
        by_vector = await search(store, query, top_k=9)  # no words: cosine alone
    finally:
        await store.close()
    assert ids(by_vector).index(mid("zwj")) == 4
    assert ids(found)[0] == mid("zwj")
    assert (found[0].vector_rank, found[0].keyword_rank) == (5, 1)


async def test_a_reported_projects_joined_name_lifts_its_fix(any_store):
    """`db-to-sqlite` is one name: the record holding it comes first, though nearer records
    hold its words apart; the same words unjoined leave the order to the vectors."""
    query = unit(1)
    items = [
        (
            record(f"near{i}", fix_description="copy the sqlite data to the db"),
            blend(query, unit(50 + i), 0.9 - i * 0.02),
        )
        for i in range(4)
    ]
    target = record("name", fix_description="Teach db-to-sqlite to rewrite old URLs")
    await any_store.upsert_many([*items, (target, blend(query, unit(70), 0.87))])
    joined, apart = [
        await search(any_store, query, f"$ {name} $(heroku)\nCan't load plugin: postgres", top_k=3)
        for name in ("db-to-sqlite", "db to sqlite")
    ]
    assert ids(joined)[0] == mid("name")
    assert joined[0].keyword_rank == 1
    assert ids(apart)[0] == mid("near0")


# -- what only a server has -------------------------------------------------------------------


async def test_collections_are_created_once(standin):
    for _ in range(2):
        store = open_store(standin.url)
        await store.count()
        await store.close()
    assert standin.state.created == ["astra_codebase_memory", "astra_codebase_memory_deliveries"]
    created = standin.state.collections["astra_codebase_memory"]
    assert (created.size, created.distance) == (384, 1)  # cosine


async def test_collection_name_comes_from_the_url(standin):
    store = open_store(standin.url + "?collection=team_memory")
    await store.count()
    await store.close()
    assert "team_memory" in standin.state.collections


async def test_a_collection_of_another_size_is_refused_and_left_intact(standin):
    existing = Collection(size=128, distance=1)
    existing.points["keep"] = (np.ones(128, dtype=np.float32), {"note": "theirs"})
    standin.state.collections["astra_codebase_memory"] = existing
    store = open_store(standin.url)
    with pytest.raises(MemoryStoreError, match=r"128-d Cosine.*left untouched"):
        await store.count()
    await store.close()
    assert standin.state.collections["astra_codebase_memory"] is existing
    assert list(existing.points) == ["keep"]
    assert standin.state.calls["Upsert"] == standin.state.calls["Delete"] == 0


async def test_unreachable_server_is_a_quick_clear_error(standin):
    address = standin.address
    await standin.stop()
    store = open_store(f"vectorai://{address}")
    started = time.monotonic()
    with pytest.raises(MemoryStoreError, match=rf"{address}.*docker compose up -d"):
        await store.count()
    assert time.monotonic() - started < 5
    await store.close()


async def test_server_stopped_mid_session_is_a_clear_error(standin):
    store = open_store(standin.url)
    await store.upsert_many([(record("a"), unit(1))])
    await standin.stop()
    with pytest.raises(MemoryStoreError, match=rf"{standin.address}.*docker compose up -d"):
        await search(store, unit(1))
    await store.close()


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED])
async def test_transient_failures_are_retried(standin, code):
    store = open_store(standin.url)
    await store.count()
    standin.state.fail_code = code
    standin.state.fail_next = 2
    await store.upsert_many([(record("a"), unit(1))])
    assert standin.state.calls["Upsert"] == 3
    assert await store.count() == 1
    await store.close()


async def test_persistent_failure_stops_after_bounded_retries(standin):
    store = open_store(standin.url)
    await store.count()
    standin.state.fail_next = 10
    with pytest.raises(MemoryStoreError, match="after 3 attempts"):
        await store.upsert_many([(record("a"), unit(1))])
    assert standin.state.calls["Upsert"] == 3
    await store.close()


async def test_non_uuid_ids_are_refused_before_sending(standin):
    store = open_store(standin.url)
    bad = record("x").model_copy(update={"memory_id": "not-a-uuid"})
    with pytest.raises(MemoryStoreError, match="not a UUID"):
        await store.upsert_many([(bad, unit(1))])
    assert await store.get("not-a-uuid") is None
    await store.close()


@pytest.mark.parametrize("url", ["vectorai://", "vectorai://host:notaport", "vectorai://h:1/x"])
def test_malformed_vectorai_urls_are_clear_errors(url):
    with pytest.raises(MemoryStoreError, match="memory URL"):
        open_store(url)


# -- migration ------------------------------------------------------------------------------


async def test_migrate_there_and_back_loses_nothing_and_duplicates_nothing(tmp_path, standin):
    embedder = HashEmbedder()
    originals = [
        record(f"m{i}", scope=("alpha", "beta")[i % 2], embedding_model=embedder.model_name)
        for i in range(7)
    ]
    sqlite = open_store(f"sqlite:///{tmp_path / 'a.sqlite3'}")
    await sqlite.upsert_many(
        list(
            zip(
                originals,
                await embedder.embed_many([r.embedding_text() for r in originals]),
                strict=True,
            )
        )
    )
    server = open_store(standin.url)
    back = open_store(f"sqlite:///{tmp_path / 'b.sqlite3'}")
    progress: list[tuple[int, int]] = []
    for _ in range(2):
        assert await migrate(sqlite, server, embedder, lambda d, t: progress.append((d, t))) == 7
        assert await migrate(server, back, embedder) == 7
    assert progress[-1] == (7, 7)
    expected = sorted(originals, key=lambda r: r.memory_id)
    for store in (server, back):
        assert await store.count() == 7
        assert sorted(await store.list_records(), key=lambda r: r.memory_id) == expected
    query = await embedder.embed(originals[3].embedding_text())
    for store in (sqlite, server, back):
        found = await search(store, query, scope="beta", top_k=1)
        assert ids(found) == [originals[3].memory_id]
        assert found[0].score == pytest.approx(1.0, abs=1e-5)
    for store in (sqlite, server, back):
        await store.close()


async def test_migrate_reembeds_only_records_of_another_model(tmp_path, standin):
    embedder = HashEmbedder()
    same = record("same-model", embedding_model=embedder.model_name)
    other = record("old-model", embedding_model="some/older-model")
    random_vector = np.random.default_rng(5).standard_normal(384).astype(np.float32)
    random_vector /= np.linalg.norm(random_vector)
    source = open_store(f"sqlite:///{tmp_path / 'a.sqlite3'}")
    await source.upsert_many([(same, random_vector), (other, random_vector)])
    target = open_store(standin.url)
    try:
        embedder.calls.clear()
        assert await migrate(source, target, embedder) == 2
        assert embedder.calls == [other.embedding_text()]
        moved = await target.vectors([same.memory_id, other.memory_id])
        assert np.allclose(moved[same.memory_id], random_vector, atol=1e-6)
        assert not np.allclose(moved[other.memory_id], random_vector, atol=1e-3)
        assert (await target.get(other.memory_id)).embedding_model == embedder.model_name
    finally:
        await source.close()
        await target.close()


def test_migrate_command_copies_between_urls(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ASTRA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(Settings, "embedder", lambda settings: HashEmbedder())
    source, target = (f"sqlite:///{tmp_path / name}" for name in ("a.sqlite3", "b.sqlite3"))

    async def seed() -> None:
        store = open_store(source)
        await store.upsert_many([(record(f"c{i}"), unit(i)) for i in range(3)])
        await store.close()

    asyncio.run(seed())
    for _ in range(2):
        assert main(["memory", "migrate", "--from", source, "--to", target]) == 0
        assert "copied 3 record(s)" in capsys.readouterr().out
    assert main(["memory", "migrate", "--from", source, "--to", source]) == 2
    assert "same store" in capsys.readouterr().err
    assert main(["memory", "stats", "--memory", target, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 3
