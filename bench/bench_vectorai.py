"""The VectorAI DB store through the real client, beside the embedded store, in one run.

1. Search and store latency at 1k and 10k records: the VectorAI store over a real loopback
   gRPC channel to the in-process stand-in (tests/memory/vectorai_standin.py, a numpy index:
   it measures the client and protocol overhead per call, not the real server's index),
   next to the SQLite store with the same records and vectors.
2. Retrieval: the eval corpora imported into each store with the real model, so the cost of
   the server store's ranking (no keyword index there: BM25 over its vector candidates
   only) shows as recall.

    PYTHONPATH=. .venv/bin/python bench/bench_vectorai.py [--sizes 1000,10000] [--no-recall]

(PYTHONPATH=. because the stand-in lives in tests/.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from memory.embedding.embedder import shared_embedder
from memory.evaluation import evaluate, parse_queries
from memory.records import EMBEDDING_DIMENSION, MemoryRecord, SearchRequest
from memory.service import MemoryService
from memory.stores.protocol import open_store
from memory.transfer import import_records, parse_import
from tests.memory.vectorai_standin import VectorAIStandIn

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "memory" / "data"
CORPORA = {
    "recurrence": ("recurrence_fixes", "recurrence_queries", "default"),
    "cross-project": ("fixes", "queries", "eval"),
    "cross-project held out": ("heldout_fixes", "heldout_queries", "heldout"),
}
QUERIES = 100
SINGLE_WRITES = 100


def records(n: int, rng: np.random.Generator) -> list[tuple[MemoryRecord, np.ndarray]]:
    vectors = rng.standard_normal((n, EMBEDDING_DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = datetime.now(UTC)
    return [
        (
            MemoryRecord(
                memory_id=str(uuid.UUID(int=int(rng.integers(0, 2**62)) << 64 | i)),
                scope="bench",
                fix_description=f"fix {i}: strip whitespace in parser {i % 97}",
                error_type=("AssertionError", "KeyError", "TypeError")[i % 3],
                file_paths=(f"app/module_{i % 50}.py",),
                outcome="passed",
                symptom=f"E   AssertionError: value {i} differs",
                session_id="bench",
                timestamp=now,
            ),
            vectors[i],
        )
        for i in range(n)
    ]


async def timed(call) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


def p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


async def latency(url: str, items, queries) -> dict[str, float]:
    store = open_store(url)
    try:
        for start in range(0, len(items), 500):
            await store.upsert_many(items[start : start + 500])
        now = datetime.now(UTC)
        searches = [
            await timed(
                lambda q=q: store.search(
                    SearchRequest(q, "", "bench", None, top_k=5, min_score=-1.0, now=now)
                )
            )
            for q in queries
        ]
        extra = records(SINGLE_WRITES, np.random.default_rng(99))
        writes = [await timed(lambda item=item: store.upsert_many([item])) for item in extra]
    finally:
        await store.close()
    return {
        "search_p50_ms": statistics.median(searches),
        "search_p95_ms": p(searches, 95),
        "store_p50_ms": statistics.median(writes),
        "store_p95_ms": p(writes, 95),
    }


async def recall(url: str, corpus: str) -> dict[str, float]:
    fixes, queries, scope = CORPORA[corpus]
    store = open_store(url)
    embedder = shared_embedder()
    try:
        lines = (DATA / f"{fixes}.jsonl").read_text().splitlines()
        await import_records(
            store, embedder, parse_import(lines, default_scope=scope, now=datetime.now(UTC))
        )
        service = MemoryService(store, embedder, session_id="bench", scope=scope)
        report = await evaluate(
            service, parse_queries((DATA / f"{queries}.jsonl").read_text().splitlines())
        )
    finally:
        await store.close()
    return {"recall_at_1": report.recall_at_1, "recall_at_3": report.recall_at_3, "mrr": report.mrr}


async def main(sizes: list[int], with_recall: bool) -> dict:
    results: dict = {"latency": {}, "recall": {}}
    rng = np.random.default_rng(7)
    for size in sizes:
        items = records(size, rng)
        queries = [items[int(i)][1] for i in rng.integers(0, size, QUERIES)]
        with tempfile.TemporaryDirectory() as folder:
            server = await VectorAIStandIn().start()
            try:
                results["latency"][size] = {
                    "sqlite": await latency(f"sqlite:///{folder}/m.sqlite3", items, queries),
                    "vectorai": await latency(server.url, items, queries),
                }
            finally:
                await server.stop()
        row = results["latency"][size]
        print(
            f"{size:>7,} records  search p50 sqlite {row['sqlite']['search_p50_ms']:.2f} ms, "
            f"vectorai {row['vectorai']['search_p50_ms']:.2f} ms · store p50 sqlite "
            f"{row['sqlite']['store_p50_ms']:.2f} ms, "
            f"vectorai {row['vectorai']['store_p50_ms']:.2f} ms"
        )
    if with_recall:
        for corpus in CORPORA:
            with tempfile.TemporaryDirectory() as folder:
                server = await VectorAIStandIn().start()
                try:
                    both = {
                        "sqlite": await recall(f"sqlite:///{folder}/m.sqlite3", corpus),
                        "vectorai": await recall(server.url, corpus),
                    }
                finally:
                    await server.stop()
            results["recall"][corpus] = both
            print(
                f"{corpus}: recall@3 sqlite {both['sqlite']['recall_at_3']:.3f} "
                f"(@1 {both['sqlite']['recall_at_1']:.3f}), vectorai "
                f"{both['vectorai']['recall_at_3']:.3f} (@1 {both['vectorai']['recall_at_1']:.3f})"
            )
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--no-recall", action="store_true")
    args = parser.parse_args()
    figures = asyncio.run(main([int(s) for s in args.sizes.split(",")], not args.no_recall))
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "vectorai.json").write_text(json.dumps(figures, indent=2))
