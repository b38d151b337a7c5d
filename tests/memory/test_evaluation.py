"""`memory eval`'s rankings on a primed embedder: the same figures, each query embedded once."""

from __future__ import annotations

import json

import numpy as np

from memory.embedding.embedder import PrimedEmbedder
from memory.evaluation import evaluate, parse_queries, prime, vector_only
from memory.service import MemoryService
from tests.fakes import PASSING, HashEmbedder

FIXES = [
    ("CORS origins kept the space after each comma; strip each origin", "ValueError"),
    ("tags split on ', ' kept empty strings; drop empty tags", "AssertionError"),
    ("the retry loop slept before the first try; sleep only between tries", "TimeoutError"),
]
QUERIES = [
    "ValueError: origin ' https://b.example' is not allowed",
    "AssertionError: assert ['a', ''] == ['a']",
    "TimeoutError: the first request waited 2 s",
]


async def test_a_primed_evaluation_gives_the_same_figures_and_embeds_each_query_once(service):
    ids = []
    for fix, error_type in FIXES:
        ids.append(await service.store_fix_memory(fix, error_type, ["app/x.py"], PASSING))
    queries = parse_queries(
        json.dumps({"query": query, "expect": memory_id})
        for query, memory_id in zip(QUERIES, ids, strict=True)
    )
    unprimed = (await evaluate(service, queries), await vector_only(service, queries))

    inner = HashEmbedder()
    primed = MemoryService(service.store, inner, session_id="eval", scope=service.scope)
    await prime(primed, queries)
    batched = len(inner.calls)
    again = (await evaluate(primed, queries), await vector_only(primed, queries))

    assert [report.model_dump() for report in again] == [r.model_dump() for r in unprimed]
    assert batched == len(QUERIES)
    assert inner.calls[batched:] == []  # every ranking was answered from the batch


async def test_a_primed_embedder_embeds_a_new_text_once_and_keeps_the_order_asked():
    inner = HashEmbedder()
    primed = await PrimedEmbedder.prime(inner, ["a b", "c d", "a b"])
    assert inner.calls == ["a b", "c d"]

    vectors = await primed.embed_many(["c d", "e f", "a b", "e f"])
    assert inner.calls == ["a b", "c d", "e f"]
    expected = inner.embed_many_sync(["c d", "e f", "a b", "e f"])
    np.testing.assert_array_equal(vectors, expected)
    assert primed.embed_many_sync([]).shape == (0, inner.dimension)
