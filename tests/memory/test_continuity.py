"""Across processes: continuity, isolation, expiry, concurrent writers, a killed import."""

from __future__ import annotations

import json
import pickle
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory.records import utc_now
from memory.transfer import parse_import

ROOT = Path(__file__).parents[2]
WORKER = ["-m", "tests.memory.store_worker"]
QUERY = "AssertionError: second origin rejected, whitespace in comma separated origins"


def run_worker(*args: object) -> list[str]:
    done = subprocess.run(
        [sys.executable, *WORKER, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def start_worker(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *WORKER, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def test_a_new_process_finds_the_record_once_in_its_scope_only(db_path):
    [stored] = run_worker("store", db_path, "alpha", "session-1", 1, "live")
    found = run_worker("search", db_path, "alpha", QUERY, -1)
    assert found.count(stored) == 1
    assert run_worker("search", db_path, "beta", QUERY, -1) == []


def test_expired_records_do_not_come_back_in_a_new_process(db_path):
    run_worker("store", db_path, "alpha", "session-1", 2, "expired")
    assert run_worker("search", db_path, "alpha", QUERY, -1) == []


def test_two_processes_storing_at_once_lose_nothing(db_path):
    run_worker("store", db_path, "alpha", "warmup", 1, "live")  # schema exists before the race
    writers = [start_worker("store", db_path, "alpha", f"writer-{n}", 40, "live") for n in (1, 2)]
    ids = []
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        ids += json.loads(out)
    assert len(set(ids)) == 80
    with sqlite3.connect(db_path) as conn:
        stored = {row[0] for row in conn.execute("SELECT memory_id FROM memories")}
        keyword_rows = conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0]
    assert set(ids) <= stored and len(stored) == 81
    assert keyword_rows == 81


# its write takes about 0.45 s here, so each kill lands inside it
IMPORTED = 6_000


@pytest.fixture(scope="module")
def parsed_import(tmp_path_factory) -> Path:
    """The import's records parsed once for the module (about 8 s of sanitising), pickled
    for the worker: what is killed is the write, the same for every delay."""
    lines = (
        json.dumps(
            {
                "fix_description": f"post-mortem {n}: retry upload on socket reset",
                "error_type": "ConnectionResetError",
                "file_paths": [f"app/upload_{n}.py"],
                "symptom": f"E   ConnectionResetError: [Errno 104] upload {n}",
            }
        )
        for n in range(IMPORTED)
    )
    records = parse_import(lines, default_scope="imported", now=utc_now())
    path = tmp_path_factory.mktemp("import") / "records.pickle"
    path.write_bytes(pickle.dumps(records))
    return path


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.2])
def test_a_process_killed_during_import_leaves_a_valid_database(db_path, parsed_import, delay):
    run_worker("store", db_path, "alpha", "before", 3, "live")
    importer = start_worker("import", db_path, parsed_import)
    assert importer.stdout.readline().strip() == "writing"
    time.sleep(delay)
    importer.send_signal(signal.SIGKILL)
    assert importer.wait(timeout=30) == -signal.SIGKILL
    assert importer.stdout.read() == "", "killed before the import ended (it prints done)"
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        count = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        keyword_rows = conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0]
    assert count in (3, 3 + IMPORTED), "an import lands whole or not at all"
    assert keyword_rows == count
    assert len(run_worker("search", db_path, "alpha", QUERY, -1)) == 3
