"""Agent loop overhead per turn, and where the wall time of `demo --headless` goes.

Overhead: a replayed session of many turns whose tools are cheap (read_file, list_files,
and memory searches with a constant-vector embedder), so what is timed is the loop itself —
payload building, response validation, argument parsing, dispatch, events, the store's
search — not model latency, test subprocesses or embedding. Target: under 20 ms a turn.

Demo: runs the real two-session experiment in-process and splits its wall time into the
embedding model's load, test subprocesses, and everything else.

    .venv/bin/python bench/bench_loop.py [--turns 200]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from agent import events as ev
from agent.books import AgentLimits
from agent.loop import AstraAgent
from agent.transport import ReplayTransport
from agent.workspace_tools import WorkspaceTools
from memory.records import EMBEDDING_DIMENSION
from memory.service import MemoryService
from memory.stores.protocol import open_store

ROOT = Path(__file__).resolve().parents[1]


class ConstantEmbedder:
    """Embedding excluded: every text gets the same unit vector, at once."""

    model_name = "bench/constant"
    dimension = EMBEDDING_DIMENSION
    _vector = np.full(EMBEDDING_DIMENSION, EMBEDDING_DIMENSION**-0.5, dtype=np.float32)

    def embed_many_sync(self, texts):
        return np.tile(self._vector, (len(texts), 1))

    async def embed_many(self, texts):
        return self.embed_many_sync(texts)

    async def embed(self, text):
        return self._vector


class Operator:
    async def approve_live_cost(self, quote):
        return True

    async def confirm_store(self, proposal):
        return True


def call(name: str, arguments: dict, number: int) -> dict:
    return {
        "type": "function_call",
        "call_id": f"c{number}",
        "name": name,
        "arguments": json.dumps(arguments),
    }


def script(turns: int) -> list[dict]:
    query = "FAILED tests/test_service.py::test_second_origin - AssertionError: ' https://b'"
    search = {"query": query, "error_type": None, "top_k": 3}
    tools = [
        ("search_codebase_memory", search),
        ("read_file", {"path": "app/service.py"}),
        ("list_files", {"path": None}),
    ]
    body = [{"output": [call(*tools[n % len(tools)], n)]} for n in range(turns - 1)]
    final = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "ok"}],
    }
    return [*body, {"output": [final]}]


async def loop_overhead(turns: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "ws"
        shutil.copytree(ROOT / "demo_projects" / "scenario_alpha", workspace)
        store = open_store(f"sqlite:///{folder}/memory.sqlite3")
        embedder = ConstantEmbedder()
        seed = MemoryService(store, embedder, session_id="seed", scope="bench")
        seed.confirm_outcome("ok")
        for n in range(200):
            await seed.store_fix_memory(f"fix {n}", "AssertionError", [f"app/m{n}.py"], "ok")
        stamps: list[float] = []

        def emit(event: ev.Event) -> None:
            if isinstance(event, ev.ModelRequested):
                stamps.append(time.perf_counter())

        agent = AstraAgent(
            ReplayTransport(script(turns)),
            MemoryService(store, embedder, session_id="bench", scope="bench"),
            WorkspaceTools(workspace, base_env={}),
            Operator(),
            model="gpt-6-astra",
            limits=AgentLimits(max_turns=turns + 1, max_tool_calls=turns + 1),
            emit=emit,
        )
        started = time.perf_counter()
        report = await agent.run("bench")
        total = time.perf_counter() - started
        await store.close()
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    return {
        "turns": report.model_requests,
        "per_turn_ms_mean": 1000 * total / report.model_requests,
        "per_turn_ms_p50": 1000 * statistics.median(gaps),
        "per_turn_ms_p95": 1000 * sorted(gaps)[int(0.95 * (len(gaps) - 1))],
    }


def demo_breakdown() -> dict[str, float]:
    from app.cli.main import main
    from memory.embedding.embedder import shared_embedder

    with tempfile.TemporaryDirectory() as folder:
        os.environ["ASTRA_DATA_DIR"] = folder
        started = time.perf_counter()
        shared_embedder().load()
        model_load = time.perf_counter() - started
        test_time: list[float] = []
        from agent.tool_calls import SessionTools

        original = SessionTools._run_tests

        async def timed_run_tests(self):
            begun = time.perf_counter()
            try:
                return await original(self)
            finally:
                test_time.append(time.perf_counter() - begun)

        SessionTools._run_tests = timed_run_tests
        demo_started = time.perf_counter()
        code = main(["demo", "--headless"])
        demo_wall = time.perf_counter() - demo_started
        SessionTools._run_tests = original
    return {
        "exit_code": code,
        "wall_s": model_load + demo_wall,
        "model_load_s": model_load,
        "test_subprocesses_s": sum(test_time),
        "test_runs": len(test_time),
        "rest_s": demo_wall - sum(test_time),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    overhead = asyncio.run(loop_overhead(args.turns))
    demo = demo_breakdown()
    print("\nloop overhead per turn (replay, cheap tools, no embedding), target < 20 ms")
    print(
        f"  {overhead['turns']} turns: mean {overhead['per_turn_ms_mean']:.2f} ms, "
        f"p50 {overhead['per_turn_ms_p50']:.2f} ms, p95 {overhead['per_turn_ms_p95']:.2f} ms"
    )
    print("demo --headless wall time")
    print(
        f"  total {demo['wall_s']:.1f} s = embedding model load {demo['model_load_s']:.1f} s "
        f"+ {demo['test_runs']} test runs {demo['test_subprocesses_s']:.1f} s "
        f"+ everything else {demo['rest_s']:.1f} s (exit {demo['exit_code']})"
    )
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "loop.json").write_text(json.dumps({"overhead": overhead, "demo": demo}, indent=2))


if __name__ == "__main__":
    main()
