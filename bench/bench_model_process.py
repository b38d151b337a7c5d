"""The dashboard's embedder in a child process or in a thread: launch to search results.

Issue 12 asks whether the dashboard still needs its model process once torch is out of
the run-time path, and for the search to answer within 2 s of launch. Each run is a fresh
`python -c` process that builds the dashboard as `astra-memory` (idle: the memory browser
first) does, runs it headless at 120x40 through `run_test`, and the moment the browser is
up sets the search box to a query, as a very quick operator would. Timed from just before
the process starts: the browser's first frame, and the search's rows filled in. A `Monitor`
(bench_tui.py) on the same loop records how late each 5 ms wake-up is, from the first
frame to the search's rows. Two variants, interleaved, on one store of records with the
ONNX model already prepared (the 69 records of tests/memory/data/fixes.jsonl, scope eval):
  process  the ONNX embedder in its child process (memory/embedding/process.py), as shipped;
  thread   the same `OnnxEmbedder` in the dashboard's process, loaded by the session
           queue's `asyncio.to_thread`, as the child would be.

    .venv/bin/python bench/bench_model_process.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXES = ROOT / "tests" / "memory" / "data" / "fixes.jsonl"
QUERY = "strip whitespace from comma separated origins"
VARIANTS = ("process", "thread")

CHILD = r"""
import asyncio, json, sys, time
variant, started, query = sys.argv[1], float(sys.argv[2]), sys.argv[3]
sys.path.insert(0, sys.argv[4])
from bench_tui import Monitor
from app.sessions.options import SessionOptions
from app.dashboard.screens.memory_browser import MemoryBrowserScreen
from app.config.settings import Settings
from app.dashboard.app import build_app
import app.sessions.queue as session_queue

if variant == "thread":  # the same embedder, loaded in the queue's thread instead
    open_backend = session_queue.open_backend

    def in_process(settings, memory_url, scope, embedder, progress=None):
        import app.sessions.backend as backend
        from memory.embedding.onnx_embedder import OnnxEmbedder

        class InProcess(OnnxEmbedder):
            def __init__(self, model_path, *, kind, data_dir, progress):
                super().__init__(data_dir, model_path, progress or (lambda _: None))

            def close(self):
                pass

        backend.ProcessEmbedder = InProcess
        return open_backend(settings, memory_url, scope, embedder, progress)

    session_queue.open_backend = in_process

filled = []
fill = MemoryBrowserScreen._fill

def recorded(screen, rows, stats):
    fill(screen, rows, stats)
    filled.append((time.monotonic(), screen.query_text, len(rows)))

MemoryBrowserScreen._fill = recorded

async def main():
    app = build_app(Settings.from_environment(), SessionOptions(scope="eval"), None)
    monitor = Monitor()
    async with app.run_test(size=(120, 40)) as pilot:
        while not isinstance(app.screen, MemoryBrowserScreen):
            await asyncio.sleep(0.005)
        await pilot.pause()
        shown = time.monotonic()
        monitor.start()
        app.screen.query_one("#search").value = query
        async with asyncio.timeout(120):
            while not any(text == query for _, text, _ in filled):
                await asyncio.sleep(0.005)
        answered = next(at for at, text, _ in filled if text == query)
        await monitor.stop()
    print("RESULT " + json.dumps({
        "browser_shown_s": shown - started,
        "search_answered_s": answered - started,
        "rows": next(n for _, text, n in filled if text == query),
        "stalls": monitor.summary(shown, answered),
        "stalled_in": monitor.where.most_common(3),
    }))

asyncio.run(main())
"""


def run_once(variant: str, env: dict[str, str]) -> dict:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, variant, repr(started), QUERY, str(ROOT / "bench")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{variant} failed ({done.returncode}): {done.stderr[-2000:]}")
    result = json.loads(lines[-1].removeprefix("RESULT "))
    if not result["rows"]:
        raise RuntimeError(f"{variant}: the search found nothing, so no rows were drawn")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        env = {**os.environ, "ASTRA_DATA_DIR": name, "ASTRA_EMBEDDER": "onnx"}
        for unset in ("ASTRA_MEMORY_URL", "OPENAI_API_KEY", "PYTHONDONTWRITEBYTECODE"):
            env.pop(unset, None)
        cli = [sys.executable, "-m", "app.cli.main"]
        subprocess.run([*cli, "model", "prepare"], env=env, cwd=ROOT, check=True)
        imported = [*cli, "memory", "import", str(FIXES), "--scope", "default"]
        subprocess.run(imported, env=env, cwd=ROOT, check=True, capture_output=True)
        for variant in VARIANTS:  # warm the page cache and the bytecode
            run_once(variant, env)
        runs: dict[str, list[dict]] = {variant: [] for variant in VARIANTS}
        for _ in range(args.runs):
            for variant in VARIANTS:
                runs[variant].append(run_once(variant, env))
                print(variant, json.dumps(runs[variant][-1]), flush=True)
    print(f"\nlaunch -> browser -> search answered, median of {args.runs} (target <= 2 s)")
    for variant, samples in runs.items():

        def median(key: str, samples: list[dict] = samples) -> float:
            return statistics.median(sample[key] for sample in samples)

        worst = max(sample["stalls"]["max_ms"] for sample in samples)
        print(
            f"  {variant:8} browser {median('browser_shown_s'):.2f} s, "
            f"search answered {median('search_answered_s'):.2f} s "
            f"(max {max(s['search_answered_s'] for s in samples):.2f} s); loop stalls: median "
            f"max {statistics.median(s['stalls']['max_ms'] for s in samples):.0f} ms, "
            f"worst {worst:.0f} ms, p99 {median_p99(samples):.1f} ms"
        )


def median_p99(samples: list[dict]) -> float:
    return statistics.median(sample["stalls"]["p99_ms"] for sample in samples)


if __name__ == "__main__":
    main()
