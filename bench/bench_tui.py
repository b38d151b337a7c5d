"""The dashboard's responsiveness: launch to first frame, loop stalls, a flood of test output.

The dashboard must feel as quick as any Textual app and never freeze while the session
runs. This machine is small and noisy, so each figure sits beside a baseline from the
same run and the ratios are what to compare between runs.

1. Launch: fresh `python -c` processes, interleaved, of a minimal Textual app (one Static)
   and of the real command line: `astra-memory` (idle, opens the memory browser) and
   `astra-memory tui --workspace alpha --replay …` (a session starts). `App.run_async` is
   patched to run headless at 120x40 and `App._display` is probed: each process exits
   right after the first frame of a screen with a Footer (or the Static). Timed: process
   start to that first frame, and to exit. Target: at most 1.3x the minimal app.
2. Stalls: a rehearsed alpha session (store=yes, edits=auto, on_success=branch: no modal
   waits) in `run_test` with
   the real embedding model loading in its child process, as shipped, while a monitor on
   the same loop sleeps 5 ms again and again and records how late each wake-up is. A
   watchdog thread notes where the main thread was during stalls over 40 ms. Target: max
   stall <= 50 ms.
3. Flood: 10,000 TestOutput events through `app.forward_event` (the session's path), in
   bursts the size the test runner reads (64 KiB), timed to the last line drawn, with
   the monitor running. Checks every line reached the pane (the TestOutputBatch messages
   the dashboard handled, seen through `message_hook`; the RichLog itself keeps the last
   2000 by design).

    .venv/bin/python bench/bench_tui.py [--launches 5] [--lines 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REHEARSAL = ROOT / "demo_projects" / "rehearsals" / "scenario_alpha.jsonl"
SIZE = (120, 40)

CHILD = r"""
import sys, time
variant, started, command = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
from textual.app import App

first = []
display = App._display

def probe(app, screen, renderable):
    display(app, screen, renderable)
    if renderable is not None and not first and screen.query("Footer, Static"):
        first.append(time.monotonic() - started)
        app.call_later(app.exit)

App._display = probe  # headless renders each frame here but writes no terminal bytes
run_async = App.run_async

async def headless(app, **kwargs):
    return await run_async(app, headless=True, size=(120, 40))

App.run_async = headless
if variant == "minimal":
    from textual.widgets import Static

    class Minimal(App):
        def compose(self):
            yield Static("hello")

    Minimal().run()
else:
    from app.cli.main import main

    main(command)
print(f"FIRST_FRAME {first[0] if first else -1}")
"""


def launch_once(variant: str, folder: Path) -> tuple[float, float]:
    """(first frame, exit) in seconds from just before the process starts."""
    command: list[str] = []
    if variant == "session":
        workspace = folder / f"alpha-{time.monotonic_ns()}"
        shutil.copytree(ROOT / "demo_projects" / "scenario_alpha", workspace)
        command = ["tui", "--workspace", str(workspace), "--replay", str(REHEARSAL)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ASTRA_DATA_DIR": str(folder / "data")}
    # PYTHONDONTWRITEBYTECODE (set on our build machines) would make every launch compile
    # our modules again; an installed app has its bytecode cached, as the warm-up run does.
    for name in ("ASTRA_MEMORY_URL", "OPENAI_API_KEY", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, variant, repr(started), *command],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    wall = time.monotonic() - started
    words = done.stdout.split()
    if done.returncode != 0 or "FIRST_FRAME" not in words:
        raise RuntimeError(f"{variant} failed ({done.returncode}): {done.stderr[-2000:]}")
    return float(words[words.index("FIRST_FRAME") + 1]), wall


LAUNCHES = ("minimal", "idle", "session")


def launches(count: int) -> dict:
    """Each variant `count` times, interleaved; medians and ratios to the minimal app."""
    samples: dict[str, dict[str, list[float]]] = {v: {"first": [], "exit": []} for v in LAUNCHES}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for variant in LAUNCHES:  # warm the page cache and write the bytecode
            launch_once(variant, folder)
        for _ in range(count):
            for variant in LAUNCHES:
                first, wall = launch_once(variant, folder)
                samples[variant]["first"].append(first)
                samples[variant]["exit"].append(wall)
    result = {
        variant: {
            "first_frame_s_median": statistics.median(runs["first"]),
            "exit_s_median": statistics.median(runs["exit"]),
            "first_frame_s": runs["first"],
            "exit_s": runs["exit"],
        }
        for variant, runs in samples.items()
    }
    base = result["minimal"]
    for variant in LAUNCHES[1:]:
        for figure in ("first_frame", "exit"):
            result[variant][f"{figure}_ratio"] = (
                result[variant][f"{figure}_s_median"] / base[f"{figure}_s_median"]
            )
    return result


class Monitor:
    """Sleeps 5 ms on the loop again and again; lateness of each wake-up is a stall."""

    PERIOD = 0.005

    def __init__(self) -> None:
        self.stalls: list[tuple[float, float]] = []  # (at, lateness) in seconds
        self.heartbeat = time.monotonic()
        self._task: asyncio.Task | None = None
        self._watchdog: threading.Thread | None = None
        self._stop = threading.Event()
        self.where: collections.Counter[str] = collections.Counter()

    async def _run(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(self.PERIOD)
            now = time.monotonic()
            self.heartbeat = now
            self.stalls.append((now, max(0.0, now - before - self.PERIOD)))

    def _watch(self, main_id: int) -> None:
        """Where the main thread is while the loop is more than 40 ms late."""
        while not self._stop.wait(0.01):
            if time.monotonic() - self.heartbeat > 0.04:
                frame = sys._current_frames().get(main_id)
                if frame is not None:
                    stack = traceback.extract_stack(frame)
                    ours = [f for f in stack if "site-packages" not in f.filename] or stack
                    top = stack[-1]
                    site = (
                        f"{Path(top.filename).name}:{top.lineno} {top.name}"
                        f" (from {Path(ours[-1].filename).name}:{ours[-1].lineno})"
                    )
                    self.where[site] += 1

    def start(self) -> None:
        self.heartbeat = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._watchdog = threading.Thread(
            target=self._watch, args=(threading.get_ident(),), daemon=True
        )
        self._watchdog.start()

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def summary(self, since: float = 0.0, until: float = float("inf")) -> dict:
        late = sorted(lateness for at, lateness in self.stalls if since <= at <= until)
        if not late:
            return {"wakeups": 0, "max_ms": 0.0, "p99_ms": 0.0, "over_50ms": 0}
        return {
            "wakeups": len(late),
            "max_ms": 1000 * late[-1],
            "p99_ms": 1000 * late[int(0.99 * (len(late) - 1))],
            "p50_ms": 1000 * late[len(late) // 2],
            "over_50ms": sum(1 for x in late if x > 0.05),
        }


def settings_in(folder: Path):
    from app.config.settings import Settings

    for name in ("ASTRA_MEMORY_URL", "OPENAI_API_KEY", "ASTRA_BUDGET_USD", "OPENAI_BASE_URL"):
        os.environ.pop(name, None)
    return Settings(astra_data_dir=folder / "data")


async def session_stalls() -> dict:
    from app.dashboard.app import build_app
    from app.sessions.options import SessionOptions

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        workspace = folder / "alpha"
        shutil.copytree(ROOT / "demo_projects" / "scenario_alpha", workspace)
        options = SessionOptions(
            replay=REHEARSAL,
            memory=f"sqlite:///{folder}/memory.sqlite3",
            scope="bench",
            store="yes",  # no question waits for an operator: nor the edits, nor the end
            edits="auto",
            on_success="branch",
        )
        settings = settings_in(folder)
        app = build_app(settings, options, workspace)  # no embedder: the model's process starts
        log: list[tuple[float, str]] = []
        forward = app.forward_event

        def logged(event) -> None:  # build_agent takes app.forward_event when it runs
            log.append((time.monotonic(), type(event).__name__))
            forward(event)

        app.forward_event = logged
        monitor = Monitor()
        monitor.start()
        started = time.monotonic()
        ready_at = finished_at = None
        async with app.run_test(size=SIZE) as pilot:
            async with asyncio.timeout(300):
                while not app.sessions.finished:
                    if ready_at is None and app.sessions.ready.is_set():
                        ready_at = time.monotonic()
                    await asyncio.sleep(0.01)
            finished_at = time.monotonic()
            await pilot.pause()
        await monitor.stop()
        report = app.sessions.finished[0].report
    ready_at = ready_at or finished_at
    return {
        "status": report.status,
        "exit_code": report.exit_code,
        "turns": report.model_requests,
        "stored": len(report.stored_memory_ids),
        "total_s": finished_at - started,
        "store_and_model_load_s": ready_at - started,
        "session_s": finished_at - ready_at,
        "all": monitor.summary(started, finished_at),
        "loading": monitor.summary(started, ready_at),
        "session": monitor.summary(ready_at, finished_at),
        "stalled_in": monitor.where.most_common(5),
        "worst": worst_stalls(monitor, log, started, ready_at, finished_at),
    }


def worst_stalls(
    monitor: Monitor, log: list[tuple[float, str]], started, ready_at, finished_at
) -> list:
    """The five longest stalls of the run, each with the session event posted before it."""
    during = [stall for stall in monitor.stalls if started <= stall[0] <= finished_at]
    worst = sorted(during, key=lambda stall: stall[1], reverse=True)[:5]
    rows = []
    for at, lateness in worst:
        began = at - lateness - Monitor.PERIOD
        before = [(t, name) for t, name in log if t <= began]
        rows.append(
            {
                "ms": 1000 * lateness,
                "at_s": began - started,
                "phase": "loading" if ready_at is None or began < ready_at else "session",
                "after_event": before[-1][1] if before else None,
                "event_ms_before": 1000 * (began - before[-1][0]) if before else None,
            }
        )
    return rows


async def flood(lines: int) -> dict:
    from agent import events as ev
    from app.dashboard.app import build_app
    from app.dashboard.screens.messages import TestOutputBatch
    from app.sessions.options import SessionOptions
    from tests.fakes import HashEmbedder
    from widgets import TestOutputLog

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        options = SessionOptions(memory=f"sqlite:///{folder}/memory.sqlite3", scope="bench")
        app = build_app(settings_in(folder), options, folder, embedder=HashEmbedder(), plans=[])
        texts = [
            f"tests/test_service.py::test_case_{n:05d} PASSED"
            f"{' ' * (n % 17)}[{100 * (n + 1) // lines:3d}%] output line {n}"
            for n in range(lines)
        ]
        burst = max(1, (64 * 1024) // (sum(map(len, texts)) // lines + 1))
        batches: list[TestOutputBatch] = []

        def handled(message) -> None:
            if isinstance(message, TestOutputBatch):
                batches.append(message)

        async with app.run_test(size=SIZE, message_hook=handled) as pilot:
            await asyncio.wait_for(app.sessions.ready.wait(), 60)
            await pilot.pause()
            pane = app.dashboard.query_one(TestOutputLog)
            monitor = Monitor()
            monitor.start()
            started = time.monotonic()
            producing = 0.0
            for first in range(0, lines, burst):
                begun = time.monotonic()
                for text in texts[first : first + burst]:
                    app.forward_event(ev.TestOutput(run=1, line=text))
                producing += time.monotonic() - begun
                await asyncio.sleep(0)
            posted = time.monotonic()
            async with asyncio.timeout(120):
                while sum(len(batch.events) for batch in batches if batch.taken) < lines:
                    await asyncio.sleep(0.005)
            handled = time.monotonic()

            def tail() -> str:
                return " ".join(" ".join(line.text.split()) for line in pane.lines[-4:])

            last = f"output line {lines - 1}"
            with contextlib.suppress(TimeoutError):  # reported below as not drawn
                async with asyncio.timeout(60):
                    while not tail().endswith(last):
                        await asyncio.sleep(0.005)
            drawn = time.monotonic()
            await monitor.stop()
            kept = len(pane.lines)
            received = [event.line for batch in batches for event in batch.events]
    total = drawn - started
    return {
        "lines": lines,
        "burst_lines": burst,
        "producer_s": producing,
        "post_s": posted - started,
        "handled_s": handled - started,
        "total_s": total,
        "us_per_line": 1e6 * total / lines,
        "all_received_in_order": received == texts,
        "richlog_lines_kept": kept,
        "last_line_drawn": tail().endswith(last),
        "stalls": monitor.summary(started, drawn),
        "stalled_in": monitor.where.most_common(5),
    }


def show_stalls(label: str, figures: dict) -> str:
    if not figures["wakeups"]:
        return f"  {label}: no wake-ups"
    return (
        f"  {label}: max {figures['max_ms']:.0f} ms, p99 {figures['p99_ms']:.1f} ms, "
        f"p50 {figures['p50_ms']:.2f} ms, {figures['over_50ms']} over 50 ms "
        f"({figures['wakeups']} wake-ups)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=5, help="launches of each app")
    parser.add_argument("--lines", type=int, default=10_000)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    bench_started = time.monotonic()

    launch = launches(args.launches)
    print(f"\nlaunch to first frame, headless 120x40, median of {args.launches} (target <= 1.3x)")
    for variant in LAUNCHES:
        figures = launch[variant]
        ratio = (
            ""
            if variant == "minimal"
            else f"  ({figures['first_frame_ratio']:.2f}x / {figures['exit_ratio']:.2f}x)"
        )
        print(
            f"  {variant:8} first frame {figures['first_frame_s_median']:.3f} s, "
            f"exit {figures['exit_s_median']:.3f} s{ratio}"
        )
    print("  (idle = `astra-memory`, the memory browser; session = `astra-memory tui --workspace")
    print("   alpha --replay …`; ratios: first frame / exit, against the minimal app)")

    session = asyncio.run(session_stalls())
    print("\nrehearsed alpha session with the real model loading, loop lateness (target <= 50 ms)")
    print(
        f"  {session['status']} exit {session['exit_code']}, {session['turns']} turns, "
        f"stored {session['stored']}: total {session['total_s']:.1f} s = store + model load "
        f"{session['store_and_model_load_s']:.1f} s + session {session['session_s']:.1f} s"
    )
    print(show_stalls("whole run", session["all"]))
    print(show_stalls("while loading", session["loading"]))
    print(show_stalls("session", session["session"]))
    for row in session["worst"]:
        after = (
            f"{row['event_ms_before']:.0f} ms after {row['after_event']}"
            if row["after_event"]
            else "before any session event"
        )
        print(f"    {row['ms']:4.0f} ms stall at {row['at_s']:.2f} s ({row['phase']}), {after}")
    for site, samples in session["stalled_in"]:
        print(f"    main thread during stalls: {samples:4d} x {site}")

    flooded = asyncio.run(flood(args.lines))
    print(
        f"\n{flooded['lines']} test-output lines via forward_event, "
        f"{flooded['burst_lines']} a burst"
    )
    print(
        f"  posting (events built + posted) {flooded['producer_s']:.2f} s of the "
        f"{flooded['post_s']:.2f} s the posting loop took;\n"
        f"  handled in {flooded['handled_s']:.2f} s, "
        f"drawn in {flooded['total_s']:.2f} s ({flooded['us_per_line']:.0f} us a line)"
    )
    print(
        f"  all {flooded['lines']} received in order: {flooded['all_received_in_order']}; "
        f"last line drawn: {flooded['last_line_drawn']}; "
        f"RichLog keeps {flooded['richlog_lines_kept']} lines"
    )
    print(show_stalls("stalls", flooded["stalls"]))
    for site, samples in flooded["stalled_in"]:
        print(f"    main thread during stalls: {samples:4d} x {site}")

    wall = time.monotonic() - bench_started
    print(f"\nbench wall time {wall:.0f} s")
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "tui.json").write_text(
        json.dumps(
            {"launch": launch, "session": session, "flood": flooded, "wall_s": wall}, indent=2
        )
    )


if __name__ == "__main__":
    main()
