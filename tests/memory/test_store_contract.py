"""One contract, run against every store (`any_store`): the same calls mean the same thing
in the embedded SQLite store and in the VectorAI DB store. What only one store has lives in
its own test file."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from memory.errors import MemoryStoreError
from memory.records import TestEvidence
from memory.stores.protocol import open_store
from tests.memory.store_data import NOW, blend, ids, mid, record, search, unit


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


async def test_the_error_type_lifts_its_records_case_insensitively_and_leaves_none_out(
    any_store,
):
    """A bonus, not a filter: a reported StopIteration may be fixed as a RuntimeError."""
    query = unit(1)
    await any_store.upsert_many(
        [
            (record("near", error_type="KeyError"), query),
            (record("next"), blend(query, unit(2), 0.9)),
        ]
    )
    assert ids(await search(any_store, query)) == [mid("near"), mid("next")]
    lifted = await search(any_store, query, error_type="assertionerror")
    assert ids(lifted) == [mid("next"), mid("near")]
    assert ids(await search(any_store, query, error_type="ValueError")) == [
        mid("near"),
        mid("next"),
    ]


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
    assert stats[mid("a")].to_dict() == {
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


async def test_scope_is_applied_before_ranking_and_fills_top_k(any_store):
    query = unit(1)
    # The closest vectors live in another scope; in-scope results must still fill top_k.
    items = [
        (record(f"other-{i}", scope="beta"), blend(query, unit(100 + i), 0.9)) for i in range(20)
    ]
    items += [(record(f"mine-{i}"), blend(query, unit(200 + i), 0.2)) for i in range(3)]
    await any_store.upsert_many(items)
    found = await search(any_store, query, top_k=3)
    assert sorted(ids(found)) == sorted(mid(f"mine-{i}") for i in range(3))


async def test_keyword_match_lifts_a_record_the_vector_ranks_lower(any_store):
    query = unit(1)
    await any_store.upsert_many(
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
    vector_only = await search(any_store, query, "")
    hybrid = await search(any_store, query, "AssertionError: assert 'Audit-Log' == 'audit_log'")
    assert ids(vector_only)[0] == mid("vector-near")
    assert ids(hybrid)[0] == mid("keyword-hit")
    assert hybrid[0].score == pytest.approx(vector_only[1].score)  # score stays the cosine


async def test_update_replaces_keywords_and_vector(any_store):
    await any_store.upsert_many([(record("r", fix_description="alpha words"), unit(1))])
    await any_store.upsert_many([(record("r", fix_description="beta words"), unit(2))])
    assert ids(await search(any_store, unit(2), "beta", top_k=1)) == [mid("r")]
    found = await search(any_store, unit(2), "alpha")
    assert found[0].score == pytest.approx(1.0, abs=1e-5)


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
