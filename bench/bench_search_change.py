"""Hybrid search p50 of this checkout against an earlier commit's, in one run (issue 13's
"search p50 at 10k and 100k stays within 1.5x of today's").

Each round runs a fresh process per version, alternately, on the same seed: it fills an
embedded store with `bench_memory`'s synthetic records (the version's own code writes them)
and times `search_sync` with the query embedding excluded, as bench_memory.py does: half
the queries pytest-like test reports, half reported errors (a message, or a traceback whose
frames and message hold names joined by `-` and `_`), since the ranking reads which kind a
query is and looks up a reported error's joined names as phrases. The figure per version
is the median of its rounds' p50s.

    .venv/bin/python bench/bench_search_change.py [--baseline f160c29] [--sizes 10000,100000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "f160c29"  # main when issues 12 and 13 were filed

WORKER = """
import asyncio, json, sys, tempfile, time
from datetime import UTC, datetime
from pathlib import Path
import numpy as np
from bench_memory import MAIN_SCOPE, TOP_K, TextGen, make_items, percentile, unit_vectors
from memory.records import SearchRequest
from memory.stores.sqlite import SQLiteMemoryStore

sizes, queries_per_size = json.loads(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(7)
gen = TextGen(rng)
store = SQLiteMemoryStore(Path(tempfile.mkdtemp()) / "memory.sqlite3")
texts = [gen.failure_output() for _ in range(queries_per_size // 2)]
texts += [f"{gen.error_type()}: {gen.sentence(6, 14)}" for _ in range(queries_per_size // 4)]
for _ in range(queries_per_size // 4):  # a traceback naming joined names, as real ones do
    a, b, c, d = gen.w(4)
    texts.append(
        f'Traceback (most recent call last):\\n  File "/venv/lib/python3.11/site-packages/'
        f'{a}_{b}/{c}.py", line 12, in {d}_{a}\\n{gen.error_type()}: {gen.sentence(6, 14)} '
        f"({c}-{d})"
    )
queries = [(unit_vectors(rng, 1)[0], text) for text in texts]
now, count, p50 = datetime.now(UTC), 0, {}
for size in sizes:
    while count < size:
        batch = min(1000, size - count)
        asyncio.run(store.upsert_many(make_items(gen, rng, batch)))
        count += batch
    for vector, text in queries[:10]:
        store.search_sync(SearchRequest(vector, text, MAIN_SCOPE, None, TOP_K, -1.0, now))
    times = []
    for vector, text in queries:
        start = time.perf_counter()
        store.search_sync(SearchRequest(vector, text, MAIN_SCOPE, None, TOP_K, -1.0, now))
        times.append((time.perf_counter() - start) * 1000)
    p50[f"{size:,}"] = percentile(times, 50)
    p50[f"{size:,} tracebacks"] = percentile(times[-(queries_per_size // 4) :], 50)
print(json.dumps(p50))
"""


def run_worker(checkout: Path, sizes: list[int], queries: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{checkout}{os.pathsep}{checkout / 'bench'}"}
    done = subprocess.run(
        [sys.executable, "-c", WORKER, json.dumps(sizes), str(queries)],
        env=env,
        cwd=checkout,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="commit to compare against")
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        baseline = Path(folder) / "baseline"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(baseline), args.baseline],
            check=True,
            capture_output=True,
        )
        try:
            runs: dict[str, list[dict[str, float]]] = {"baseline": [], "current": []}
            for round_number in range(1, args.rounds + 1):
                for name, checkout in (("baseline", baseline), ("current", ROOT)):
                    runs[name].append(run_worker(checkout, sizes, args.queries))
                    print(f"round {round_number} {name}: {runs[name][-1]}", flush=True)
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)],
                check=False,
            )
    print(
        f"\nhybrid search p50 (ms), median of {args.rounds} rounds; load {os.getloadavg()[0]:.2f}"
    )
    print(f"{'records':>18} {args.baseline:>10} {'current':>10} {'ratio':>7}  target <= 1.5x")
    for figure in runs["current"][0]:
        old = statistics.median(run[figure] for run in runs["baseline"])
        new = statistics.median(run[figure] for run in runs["current"])
        verdict = "met" if new / old <= 1.5 else "MISSED"
        print(f"{figure:>18} {old:>10.2f} {new:>10.2f} {new / old:>6.2f}x  {verdict}")


if __name__ == "__main__":
    main()
