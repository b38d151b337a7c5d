"""The VectorAI DB store: what only a server has (collection setup, failures, retries), then
migration between stores. The contract every store keeps is tests/memory/test_store_contract.py.

The server store is exercised through the real client over a loopback gRPC channel against
an in-process stand-in (tests/memory/conftest.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace

import grpc
import numpy as np
import pytest

from app.cli.main import main
from app.config.settings import Settings
from memory.errors import MemoryStoreError
from memory.stores.protocol import open_store
from memory.transfer import migrate
from tests.fakes import HashEmbedder
from tests.memory.store_data import ids, record, search, unit
from tests.memory.vectorai_standin import Collection

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
    bad = replace(record("x"), memory_id="not-a-uuid")
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
