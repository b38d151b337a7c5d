"""Benchmark of the embedded SQLite memory store (memory.stores.sqlite.SQLiteMemoryStore).

It answers whether the store is fast and small enough to sit in every agent turn:

1. search latency p50/p95 of `search_sync` at each size (1k, 10k, 100k records), with the
   query vector given (query embedding excluded), once hybrid (matrix + FTS5/BM25) and once
   vector-only (empty query text, so the keyword side is skipped and its cost shows);
2. a naive baseline in the same run: vectors as JSON text in a plain SQLite table, every
   in-scope row loaded, decoded and scored by cosine in a pure-Python loop;
3. write throughput: single-record upserts (one transaction each) and batched upserts;
4. query-embedding latency of the real all-MiniLM-L6-v2 model (load time, then p50/p95);
5. memory: the vector buffer's bytes against the raw float32 size, and peak RSS.

Records are synthetic: random unit vectors (fixed seed) and pytest-like text drawn from a
few-thousand-word vocabulary with a Zipf-like distribution, so BM25 does real work. Most
records share one scope and the searches use it with no error-type filter: the worst case.
Stores are filled incrementally (1k, then up to 10k, ...), measured at each size.

    .venv/bin/python bench/bench_memory.py            # full run, a few minutes
    .venv/bin/python bench/bench_memory.py --quick    # 1k and 10k, fewer queries
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import math
import os
import resource
import sqlite3
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from memory.records import EMBEDDING_DIMENSION, MemoryRecord, SearchRequest
from memory.stores.sqlite import SQLiteMemoryStore

DIM = EMBEDDING_DIMENSION
MAIN_SCOPE = "repo:main"
OTHER_SCOPES = ("repo:docs", "repo:legacy", "user:alice")
ERROR_TYPES = ("AssertionError", "TypeError", "AttributeError", "KeyError", "ValueError",
               "ImportError", "IndexError", "RuntimeError")  # fmt: skip
ERROR_WEIGHTS = np.array([40, 15, 12, 8, 8, 6, 6, 5], dtype=float) / 100
BATCH = 1000
SINGLE_UPSERTS = 300
TOP_K = 5
RESULTS = Path(__file__).parent / "results" / "memory.json"
TARGETS = {"p50_10k_ms": 5.0, "p50_100k_ms": 40.0, "speedup_10k": 100.0, "mem_ratio": 2.0}

COMMON = """error assert failed expected got value none type object attribute key index
config cache loader parser session request response client server token user path file
module import module name test fixture mock patch call return list dict string int float
bytes encode decode json yaml schema field model record store query result timeout retry
async await loop task thread lock queue event handler callback state status update delete
create read write open close connect database table column row transaction commit migrate
version default option setting environment variable missing invalid unexpected argument
keyword positional raised exception traceback frame local global class method function
instance property setter getter validate serialize deserialize format parse render template
widget screen view route url header body payload size length count offset limit page item
iterator generator context manager resource handle socket port host address network buffer
stream chunk line column offset encoding utf unicode ascii width height color style theme
""".split()
SYLLABLES = "ka lo mi nu pe ra si to vu xe bar dor fen gil hap jor kel mun nor pix".split()


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


class TextGen:
    """Pytest-like failure text and fix sentences from a Zipf-distributed vocabulary."""

    def __init__(self, rng: np.random.Generator, vocabulary: int = 3000) -> None:
        self.rng = rng
        words = list(dict.fromkeys(COMMON))
        while len(words) < vocabulary:
            parts = rng.choice(SYLLABLES, size=int(rng.integers(2, 4)))
            word = "".join(parts)
            if word not in words:
                words.append(word)
        self.words = np.array(words)
        weights = 1.0 / np.arange(1, len(words) + 1) ** 1.05
        self.cdf = np.cumsum(weights) / weights.sum()

    def w(self, k: int) -> list[str]:
        return self.words[np.searchsorted(self.cdf, self.rng.random(k))].tolist()

    def sentence(self, low: int, high: int) -> str:
        return " ".join(self.w(int(self.rng.integers(low, high))))

    def error_type(self) -> str:
        return str(self.rng.choice(ERROR_TYPES, p=ERROR_WEIGHTS))

    def symptom(self, error_type: str) -> str:
        mod, f, a, b = self.w(4)
        return f"FAILED tests/{mod}/test_{f}.py::test_{a}_{b} - {error_type}: " + self.sentence(
            8, 16
        )

    def fix(self) -> str:
        verb = str(self.rng.choice(["Fix", "Handle", "Guard", "Normalize", "Retry", "Close"]))
        mod, f = self.w(2)
        return f"{verb} {self.sentence(10, 20)} in {mod}/{f}.py"

    def failure_output(self) -> str:
        """A query: a short pytest failure block, about 20-40 words."""
        mod, f, a, b, obj, meth, arg, exp = self.w(8)
        error_type = self.error_type()
        line = int(self.rng.integers(10, 400))
        return (
            f"____ test_{a}_{b} ____\n    def test_{a}_{b}(self):\n"
            f">       assert {obj}.{meth}({arg}) == {exp}\n"
            f"E       {error_type}: {self.sentence(8, 20)}\n"
            f"tests/{mod}/test_{f}.py:{line}: {error_type}"
        )


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIM), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def make_items(gen: TextGen, rng: np.random.Generator, n: int) -> list:
    now = datetime.now(UTC)
    vectors = unit_vectors(rng, n)
    items = []
    for i in range(n):
        error_type = gen.error_type()
        scope = MAIN_SCOPE if rng.random() < 0.9 else str(rng.choice(OTHER_SCOPES))
        mod, f = gen.w(2)
        record = MemoryRecord(
            memory_id=str(uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | i)),
            scope=scope,
            fix_description=gen.fix(),
            error_type=error_type,
            file_paths=(f"src/{mod}/{f}.py", f"tests/{mod}/test_{f}.py"),
            outcome="tests green",
            symptom=gen.symptom(error_type),
            session_id=f"session-{int(rng.integers(0, 500))}",
            timestamp=now,
        )
        items.append((record, vectors[i]))
    return items


class Naive:
    """The baseline: JSON-text vectors in SQLite, cosine over every row in pure Python."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(
            "CREATE TABLE naive (id INTEGER PRIMARY KEY, memory_id TEXT, scope TEXT, vec TEXT)"
        )

    def insert(self, items: list) -> None:
        rows = [
            (r.memory_id, r.scope, json.dumps(v.astype(np.float64).round(6).tolist()))
            for r, v in items
        ]
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT INTO naive (memory_id, scope, vec) VALUES (?, ?, ?)", rows)
        self.conn.execute("COMMIT")

    def search(self, query: np.ndarray, scope: str, top_k: int) -> list[tuple[float, str]]:
        q = query.tolist()
        q_norm = math.sqrt(sum(x * x for x in q))
        scored = []
        rows = self.conn.execute("SELECT memory_id, vec FROM naive WHERE scope = ?", (scope,))
        for memory_id, text in rows:
            v = json.loads(text)
            dot = sum(a * b for a, b in zip(q, v, strict=True))
            scored.append((dot / (q_norm * math.sqrt(sum(x * x for x in v))), memory_id))
        return heapq.nlargest(top_k, scored)


def time_ms(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - start) * 1000


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def bench_sizes(sizes: list[int], quick: bool, workdir: Path) -> list[dict]:
    rng = np.random.default_rng(20240601)
    gen = TextGen(rng)
    store = SQLiteMemoryStore(workdir / "memory.sqlite3")
    naive = Naive(workdir / "naive.sqlite3")
    n_queries = 50 if quick else 200
    queries = [(unit_vectors(rng, 1)[0], gen.failure_output()) for _ in range(n_queries)]
    now = datetime.now(UTC)
    count, rows = 0, []
    for size in sizes:
        write_s, written = 0.0, size - count
        while count < size:
            items = make_items(gen, rng, min(BATCH, size - count))
            start = time.perf_counter()
            await store.upsert_many(items)
            write_s += time.perf_counter() - start
            naive.insert(items)
            count += len(items)

        def search(vector, text):
            return store.search_sync(
                SearchRequest(vector, text, MAIN_SCOPE, None, TOP_K, -1.0, now)
            )

        for vector, text in queries[:10]:  # warm caches
            search(vector, text)
        hybrid = [time_ms(search, v, t) for v, t in queries]
        vector_only = [time_ms(search, v, "") for v, _ in queries]

        planned = 50 if size <= 1000 else 20 if size <= 10_000 else 3
        planned = max(1, planned // 4) if quick else planned
        naive_ms: list[float] = []
        naive_start = time.perf_counter()
        for vector, _ in queries[:planned]:
            naive_ms.append(time_ms(naive.search, vector, MAIN_SCOPE, TOP_K))
            if time.perf_counter() - naive_start > 60:  # enough: it is only a baseline
                break

        singles = make_items(gen, rng, SINGLE_UPSERTS)
        start = time.perf_counter()
        for item in singles:
            await store.upsert_many([item])
        single_s = time.perf_counter() - start
        for item in singles:  # keep the next size's record count exact
            await store.delete(item[0].memory_id)

        p50 = percentile(hybrid, 50)
        naive_p50 = percentile(naive_ms, 50)
        rows.append(
            {
                "records": size,
                "search_p50_ms": p50,
                "search_p95_ms": percentile(hybrid, 95),
                "vector_only_p50_ms": percentile(vector_only, 50),
                "vector_only_p95_ms": percentile(vector_only, 95),
                "queries": len(hybrid),
                "naive_p50_ms": naive_p50,
                "naive_queries": len(naive_ms),
                "speedup": naive_p50 / p50,
                "speedup_vector_only": naive_p50 / percentile(vector_only, 50),
                "single_upserts_per_s": SINGLE_UPSERTS / single_s,
                "batched_upserts_per_s": written / write_s if write_s else float("nan"),
                "vector_bytes": store._index.nbytes,
                "raw_bytes": size * DIM * 4,
                "vector_mem_ratio": store._index.nbytes / (size * DIM * 4),
                "peak_rss_mib": peak_rss_mib(),
            }
        )
        print(f"  ... {size:,} records measured", flush=True)
    await store.close()
    naive.conn.close()
    return rows


def bench_embedder(n: int) -> dict:
    from memory.embedding.embedder import shared_embedder

    rng = np.random.default_rng(7)
    gen = TextGen(rng)
    embedder = shared_embedder()
    start = time.perf_counter()
    embedder.load()
    load_s = time.perf_counter() - start
    texts = [gen.failure_output() for _ in range(n)]
    embedder.embed_many_sync(texts[:3])  # warm-up
    latencies = [time_ms(embedder.embed_many_sync, [text]) for text in texts]
    return {
        "load_s": load_s,
        "embed_p50_ms": percentile(latencies, 50),
        "embed_p95_ms": percentile(latencies, 95),
        "texts": n,
        "peak_rss_mib": peak_rss_mib(),
    }


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def report(rows: list[dict], embed: dict | None) -> None:
    print("\nSearch (ms, query embedding excluded; top_k=5, one scope, no error-type filter)")
    print(
        f"{'records':>8} {'hyb p50':>8} {'hyb p95':>8} {'vec p50':>8} {'vec p95':>8} "
        f"{'naive p50':>10} {'(n)':>4} {'speedup':>8} {'vec x':>7}  target"
    )
    for r in rows:
        target = ""
        if r["records"] == 10_000:
            target = (
                f"p50<={TARGETS['p50_10k_ms']:g}: {verdict(r['search_p50_ms'] <= 5)}, "
                f">={TARGETS['speedup_10k']:g}x: {verdict(r['speedup'] >= 100)}"
            )
        elif r["records"] == 100_000:
            target = f"p50<={TARGETS['p50_100k_ms']:g}: {verdict(r['search_p50_ms'] <= 40)}"
        print(
            f"{r['records']:>8,} {r['search_p50_ms']:>8.2f} {r['search_p95_ms']:>8.2f} "
            f"{r['vector_only_p50_ms']:>8.2f} {r['vector_only_p95_ms']:>8.2f} "
            f"{r['naive_p50_ms']:>10.1f} {r['naive_queries']:>4} {r['speedup']:>7.0f}x "
            f"{r['speedup_vector_only']:>6.0f}x  {target}"
        )
    print(
        "  hyb = hybrid (matrix + FTS5/BM25), vec = vector-only (empty query text); "
        "speedup = naive p50 / hyb p50, vec x = naive p50 / vec p50"
    )

    print("\nWrites (records/s) and memory")
    print(
        f"{'records':>8} {'single/s':>9} {'batched/s':>10} {'vec MiB':>8} {'raw MiB':>8} "
        f"{'ratio':>6} {'peak RSS MiB':>13}  target ratio<={TARGETS['mem_ratio']:g}"
    )
    for r in rows:
        print(
            f"{r['records']:>8,} {r['single_upserts_per_s']:>9.0f} "
            f"{r['batched_upserts_per_s']:>10.0f} {r['vector_bytes'] / 2**20:>8.1f} "
            f"{r['raw_bytes'] / 2**20:>8.1f} {r['vector_mem_ratio']:>6.2f} "
            f"{r['peak_rss_mib']:>13.0f}  {verdict(r['vector_mem_ratio'] <= 2)}"
        )
    print(
        f"  single = {SINGLE_UPSERTS} one-record upserts, each its own transaction; "
        f"batched = upsert_many of {BATCH} while filling up to that size"
    )

    if embed:
        print("\nQuery embedding (all-MiniLM-L6-v2, CPU, one text per call)")
        print(
            f"  model load {embed['load_s']:.1f} s; embed p50 {embed['embed_p50_ms']:.1f} ms, "
            f"p95 {embed['embed_p95_ms']:.1f} ms over {embed['texts']} texts; "
            f"peak RSS {embed['peak_rss_mib']:.0f} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated")
    parser.add_argument("--quick", action="store_true", help="1k and 10k, fewer queries")
    parser.add_argument("--no-embedder", action="store_true", help="skip the model benchmark")
    parser.add_argument("--blas-threads", type=int, help="limit numpy's BLAS threads")
    args = parser.parse_args()
    if args.blas_threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.blas_threads, "blas")
    from threadpoolctl import threadpool_info

    blas = [
        (i["internal_api"], i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"
    ]
    load_start = os.getloadavg()[0]
    print(f"numpy BLAS threads: {blas}; 1-min load average {load_start:.2f}", flush=True)
    sizes = [1000, 10_000] if args.quick else sorted({int(s) for s in args.sizes.split(",")})

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        rows = asyncio.run(bench_sizes(sizes, args.quick, Path(tmp)))
    embed = None if args.no_embedder else bench_embedder(20 if args.quick else 50)
    report(rows, embed)
    elapsed = time.perf_counter() - started
    load_end = os.getloadavg()[0]
    print(
        f"\nTotal {elapsed:.0f} s; 1-min load average {load_start:.2f} at start, {load_end:.2f} "
        f"at end on {os.cpu_count()} CPUs (other processes skew every figure)"
    )

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "when": datetime.now(UTC).isoformat(),
                "sizes": rows,
                "embedder": embed,
                "targets": TARGETS,
                "quick": args.quick,
                "blas_threads": blas,
                "elapsed_s": elapsed,
                "load_average": [load_start, load_end],
            },
            indent=2,
        )
    )
    print(f"JSON written to {RESULTS}")


if __name__ == "__main__":
    main()
